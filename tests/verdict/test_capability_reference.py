"""A reference borrowed from another table is named, checked and said in the reason; benchmarks that do
not test an agent rank the chat workload only; coverage of the bundled catalog stays at the goal."""

from __future__ import annotations

import json
from dataclasses import replace

from sparkadvisor.cli import main
from sparkadvisor.core.advisor import advise
from sparkadvisor.core.catalog import source_ids
from sparkadvisor.core.explain import explain
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.ranking import capability_for, rank
from sparkadvisor.core.workload import AGENTIC, CHAT

MODEL = """
[[models]]
id = "tiny-test"
name = "Tiny"
family = "Test"
source = "aider-polyglot"

[models.params]
total_b = 1
source = "aider-polyglot"

[[models.capability]]
benchmark = "SWE-bench Verified"
score = 50.0
reference_model = "Claude Sonnet 4.5"
reference_score = 77.2
date = "2026-01"
source = "aider-polyglot"
reference_source = "{ref}"
"""


def plans_on_two_sparks(index, workload=AGENTIC):
    return {r.plan.build.id: r for r in advise(index, Cluster(index.hardware["dgx-spark"], 2), workload)}


def test_a_reference_source_that_names_nothing_is_refused(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(MODEL.format(ref="nowhere-at-all"))
    assert main(["check", str(bad)]) == 1
    err = capsys.readouterr()
    assert "capability[0].reference_source: names source 'nowhere-at-all', which is not in [sources]" in (
        err.out + err.err)
    good = tmp_path / "good.toml"
    good.write_text(MODEL.format(ref="anthropic-sonnet45"))
    assert main(["check", str(good)]) == 0


def test_a_borrowed_reference_is_said_in_the_reason_the_step_and_the_sources(index):
    ranked = plans_on_two_sparks(index)
    qwen = ranked["qwen3.6-35b-a3b-nvfp4-redhat"]
    assert qwen.score.reference_source == "qwen35-397b-table"
    assert "91% of Claude 4.5 Opus on SWE-bench Verified (developer, 2026-04-16; reference from another table)" \
        in qwen.reason
    step = next(s for s in explain(qwen.plan) if s.key == "capability")
    assert "80.9 from ANOTHER table (qwen35-397b-table)" in step.text and "no frontier column" in step.text
    sources = qwen.plan.source_ids(qwen.score)
    assert sources.index("qwen36-35b-table") < sources.index("qwen35-397b-table")
    # A score on the model's own table says nothing of the kind.
    own = ranked["qwen3.6-27b-nvfp4-nvidia"]
    assert own.score.reference_source is None and "another table" not in own.reason


def test_within_a_tier_a_reference_from_the_models_own_table_ranks_first(index):
    borrowed = plans_on_two_sparks(index)["minimax-m2.5-nvfp4-nvidia"].plan
    assert borrowed.meets_targets
    cap = capability_for(borrowed.model, AGENTIC)
    assert cap.reference_source == "anthropic-opus46"
    # The same build, once with its reference read off its own table: equal in everything else.
    own = replace(borrowed, model=replace(borrowed.model, capability=(replace(cap, reference_source=None),)))
    for plans in ([borrowed, own], [own, borrowed]):
        first, second = rank(plans, AGENTIC)
        assert first.plan.model is own.model and second.plan.model is borrowed.model
        assert "another table" in second.reason and "another table" not in first.reason


def test_benchmarks_that_do_not_test_an_agent_rank_chat_only(index):
    models = {m.id: m for m in index.catalog.models}
    for mid in ("llama-3.3-70b", "deepseek-r1-distill-qwen-32b", "gemma-3-12b"):
        assert capability_for(models[mid], AGENTIC) is None, mid
        assert capability_for(models[mid], CHAT) is not None, mid
    chat = [r for r in plans_on_two_sparks(index, CHAT).values() if r.plan.model.id == "llama-3.3-70b"]
    assert chat and all("of o1 on Aider code editing, 2024 board (diff)" in r.reason for r in chat)
    agentic = [r for r in plans_on_two_sparks(index).values() if r.plan.model.id == "llama-3.3-70b"]
    assert agentic and all(r.capability is None for r in agentic)


def test_bundled_capability_coverage_meets_the_goal_and_every_reference_resolves(index, capsys):
    models = index.catalog.models
    scored = [m for m in models if m.capability]
    assert len(scored) / len(models) >= 0.8, f"{len(scored)} of {len(models)} models scored"
    for m in scored:
        for cap in m.capability:
            for sid in source_ids(cap.reference_source or ()):
                assert sid in index.catalog.sources, (m.id, sid)
    assert main(["coverage", "--json"]) == 0
    rows = {r["model"]: r for r in json.loads(capsys.readouterr().out)["capability"]}
    assert rows["glm-4.7-flash"]["reference_source"] == "anthropic-sonnet45"
    assert rows["gemma-3-12b"]["workloads"] == ["chat"] and rows["phi-4"]["none_published"]
