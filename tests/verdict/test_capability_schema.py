"""Capability entries carry a date and a source; context extensions must be longer."""

import pytest
from pydantic import ValidationError

from sparkadvisor.core.schema import Capability, Context
from sparkadvisor.core.validation import validate

ENTRY = dict(benchmark="SWE-bench Verified", score=69.4, reference_model="Claude Sonnet 4.5",
             reference_score=77.2, source="minimax-readme")


def test_a_score_without_a_date_is_refused():
    with pytest.raises(ValidationError, match="date"):
        validate(Capability, ENTRY)
    with pytest.raises(ValidationError, match="date"):
        validate(Capability, {**ENTRY, "date": "October 2025"})
    assert validate(Capability, {**ENTRY, "date": "2025-10-27"}).reported_by == "developer"


def test_an_extension_shorter_than_the_native_context_is_refused():
    with pytest.raises(ValidationError, match="extended_tokens 32768 should be above native_tokens 131072"):
        validate(Context, {"native_tokens": 131072, "extended_tokens": 32768, "source": "s"})
    assert Context(native_tokens=32768, extended_tokens=131072, extended_method="YaRN factor 4",
                   source="s").longest_tokens == 131072


def test_every_bundled_model_has_a_sourced_score_or_says_none_was_published(index):
    missing = [m.id for m in index.catalog.models if not m.capability and not m.capability_none_published]
    assert not missing, f"models with neither a capability score nor a 'none published' note: {missing}"


def test_every_bundled_score_names_a_source_a_reader_can_open(index):
    from sparkadvisor.core.catalog import source_ids

    for model in index.catalog.models:
        for cap in model.capability:
            sources = [index.catalog.sources[s] for s in source_ids(cap.source)]
            assert all(s.url or s.kind == "article" for s in sources), model.id
            assert cap.reference_model and cap.date, model.id


def test_coverage_reports_capability_per_family(capsys):
    import json

    from sparkadvisor.cli import main

    assert main(["coverage", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    total = data["families"][-1]
    assert total["family"] == "all" and total["scored"] + total["none_published"] == total["models"]
    glm = next(r for r in data["capability"] if r["model"] == "glm-5.3-flash")
    assert glm["reference_model"] == "Claude Opus 4.8" and glm["share"] == 0.983
    assert main(["coverage"]) == 0
    assert "scored" in capsys.readouterr().out
