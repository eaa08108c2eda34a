"""Every format for the article's GLM recipe, Qwen3.8 on one and two nodes, and a build with no recipe.

Regenerate after a deliberate change (e.g. a tuned speed model) with one command:
    SPARKADVISOR_REGEN_GOLDEN=1 pytest tests/export/test_golden.py
"""

from __future__ import annotations

import pytest
from export_helpers import CASES, GOLDEN, REGENERATE, plan_for, ranked_for

from sparkadvisor.export import FORMATS, render


@pytest.mark.parametrize("case", sorted(CASES))
def test_case_uses_the_expected_recipe(index, case):
    build, nodes, recipe = CASES[case]
    plan = plan_for(index, build, nodes)
    assert (plan.recipe.id if plan.recipe else None) == recipe


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_golden_files(index, case, fmt):
    build, nodes, _ = CASES[case]
    files = render(fmt, plan_for(index, build, nodes), ranked=ranked_for(index, nodes),
                   sources=index.catalog.sources)
    folder = GOLDEN / case
    if REGENERATE:
        folder.mkdir(parents=True, exist_ok=True)
        for f in files:
            (folder / f.name).write_text(f.text, encoding="utf-8")
    for f in files:
        golden = folder / f.name
        assert golden.exists(), f"no golden {golden}; run SPARKADVISOR_REGEN_GOLDEN=1 pytest tests/export"
        assert f.text == golden.read_text(encoding="utf-8"), f"{case}/{f.name} differs from its golden file"


def test_every_golden_file_is_still_produced(index):
    produced = {(case, f.name) for case, (build, nodes, _) in CASES.items() for fmt in FORMATS
                for f in render(fmt, plan_for(index, build, nodes), ranked=ranked_for(index, nodes),
                                sources=index.catalog.sources)}
    on_disk = {(p.parent.name, p.name) for p in GOLDEN.glob("*/*")}
    assert on_disk == produced
