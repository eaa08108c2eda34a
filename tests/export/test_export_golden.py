"""Every format for the article's GLM recipe, Qwen3.8 on one and two nodes, and a build with no recipe; the
llama.cpp formats for a GGUF build on one node and another on two.

Regenerate after a deliberate change (e.g. a tuned speed model) with one command:
    SPARKADVISOR_REGEN_GOLDEN=1 pytest tests/export/test_golden.py
"""

from __future__ import annotations

import pytest
from export_helpers import CASES, GOLDEN, LLAMA_CASES, REGENERATE, plan_for, ranked_for

from sparkadvisor.export import FORMATS, LLAMA_FORMATS, render

ALL = [(case, fmt) for case in sorted(CASES) for fmt in FORMATS] + \
    [(case, fmt) for case in sorted(LLAMA_CASES) for fmt in LLAMA_FORMATS]
"""Each golden case with each format it is written in."""


def _files(index, case, fmt):
    build, nodes, _ = {**CASES, **LLAMA_CASES}[case]
    return render(fmt, plan_for(index, build, nodes), ranked=ranked_for(index, nodes), sources=index.catalog.sources)


@pytest.mark.parametrize("case", sorted({**CASES, **LLAMA_CASES}))
def test_case_uses_the_expected_recipe(index, case):
    build, nodes, recipe = {**CASES, **LLAMA_CASES}[case]
    plan = plan_for(index, build, nodes)
    assert (plan.recipe.id if plan.recipe else None) == recipe


@pytest.mark.parametrize(("case", "fmt"), ALL)
def test_matches_golden_files(index, case, fmt):
    files = _files(index, case, fmt)
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
    produced = {(case, f.name) for case, fmt in ALL for f in _files(index, case, fmt)}
    on_disk = {(p.parent.name, p.name) for p in GOLDEN.glob("*/*")}
    assert on_disk == produced
