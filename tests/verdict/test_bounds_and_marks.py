"""A figure that is only a bound never meets a target, and the table's mark on a measurement says what `show` says."""

from __future__ import annotations

import json

import pytest

from sparkadvisor.cli import main
from sparkadvisor.core.advisor import advise
from sparkadvisor.core.explain import explain
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.table import ABOVE_RANGE, BELOW_RANGE, row_cells
from sparkadvisor.core.workload import AGENTIC, CHAT


@pytest.mark.parametrize("nodes", [1, 2, 4])
@pytest.mark.parametrize("workload", [AGENTIC, CHAT])
def test_the_measured_mark_is_shows_verdict_at_the_measurements_own_conditions(index, nodes, workload):
    ranked = [r for r in advise(index, Cluster(index.hardware["dgx-spark"], nodes), workload)
              if r.plan.runs and r.plan.decode_measured is not None]
    assert ranked
    for r in ranked:
        cell = row_cells(r)["measured"]
        step = next(s.text for s in explain(r.plan) if s.key == "measured")
        if "inside the predicted range" in step:
            assert cell[-1:] not in (ABOVE_RANGE, BELOW_RANGE), (r.plan.build.id, cell, step)
        elif "OUTSIDE the predicted range" in step:
            assert cell[-1:] in (ABOVE_RANGE, BELOW_RANGE), (r.plan.build.id, cell, step)
        else:  # a bound leaves out a per-token table: no range to fall outside
            assert "it is a bound, not a prediction" in step and cell[-1:] not in (ABOVE_RANGE, BELOW_RANGE)


def test_a_speed_that_is_only_a_bound_meets_no_target(index, capsys):
    """Qwen3.8-Flash-Next reads a PLE table per token whose bytes are unpublished; on four Sparks nobody measured it,
    so its decode and turn are bounds: the table says so and the targets they seem to meet are unknown."""
    ranked = advise(index, Cluster(index.hardware["dgx-spark"], 4), AGENTIC)
    r = next(r for r in ranked if r.plan.build.id == "qwen3.8-flash-next-nvfp4")
    plan = r.plan
    assert plan.decode_bound and plan.decode_measured is None
    statuses = dict(zip(("context", "ttft", "turn", "decode", "sessions"), plan.statuses, strict=True))
    assert statuses["decode"] == "unknown" and statuses["turn"] == "unknown" and not plan.meets_targets
    cells = row_cells(r)
    assert cells["expected"] == f"≤{plan.decode.expected_tok_s:.0f}" and cells["turn"].startswith("≥")
    assert main(["rank", "--nodes", "4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    row = next(c for c in data["candidates"] if c["build"] == "qwen3.8-flash-next-nvfp4")
    assert row["decode_expected_is_bound"] is True and row["decode_low_tok_s"] is None
    assert any(u.startswith("decode at most ") and u.endswith(">= 10 tok/s unknown") for u in row["unknowns"])
    # Measured on two Sparks, the same build's speed is the measurement's, and meets the decode target.
    two = next(r.plan for r in advise(index, Cluster(index.hardware["dgx-spark"], 2), AGENTIC)
               if r.plan.build.id == "qwen3.8-flash-next-nvfp4")
    assert not two.decode_bound and two.statuses[3] == "met"


def test_on_a_route_a_caveat_reports_slow_the_speeds_are_bounds_and_the_fit_leaves_it_out(index, capsys):
    """Qwen3-235B NVFP4 runs on TensorRT-LLM only, which a caveat reports far slower on two Sparks than the build's
    reads allow (NVIDIA measured 11.73 tok/s). Its decode is a bound (≤N), its first token the soonest it comes:
    the targets they seem to meet are unknown, and NVIDIA's run of that route feeds no rate of the fit."""
    from dataclasses import replace

    from sparkadvisor.core.calibration import calibrate
    from sparkadvisor.core.fidelity import fidelity
    from sparkadvisor.core.index import CatalogIndex

    build = "qwen3-235b-a22b-nvfp4-nvidia"
    r = next(r for r in advise(index, Cluster(index.hardware["dgx-spark"], 2), AGENTIC) if r.plan.build.id == build)
    plan = r.plan
    assert plan.constants.engine == "trt-llm" and plan.slow_route == "qwen3-235b-trtllm-slow"
    assert plan.decode_bound and plan.first_token_bound and plan.ttft_s is not None and plan.ttft_s <= 20
    statuses = dict(zip(("context", "ttft", "turn", "decode", "sessions"), plan.statuses, strict=True))
    assert statuses["ttft"] == statuses["decode"] == statuses["turn"] == "unknown"
    cells = row_cells(r)
    assert cells["expected"].startswith("≤") and cells["ttft"].startswith("≥") and cells["turn"].startswith("≥")
    steps = {s.key: s.text for s in explain(plan)}
    assert "qwen3-235b-trtllm-slow reports this engine far slower" in steps["expected"]
    assert "the soonest the first token comes" in steps["ttft"]
    assert main(["rank", "--nodes", "2", "--json"]) == 0
    row = next(c for c in json.loads(capsys.readouterr().out)["candidates"] if c["build"] == build)
    assert row["decode_expected_is_bound"] is True and row["decode_low_tok_s"] is None
    assert any(u.startswith("first token at least ") for u in row["unknowns"])
    checks = [c for c in fidelity(index).checks if c.recipe == "qwen3-235b-a22b-nvfp4-trtllm-nvidia-blog"]
    assert checks and all(c.predicted is None and "qwen3-235b-trtllm-slow" in c.skipped for c in checks)
    # A caveat that names another engine leaves this route's figures predictions, and its run fits the rates.
    caveats = tuple(replace(c, engines=("vllm",)) if c.id == "qwen3-235b-trtllm-slow" else c
                    for c in index.catalog.caveats)
    elsewhere = CatalogIndex(replace(index.catalog, caveats=caveats))
    other = next(r.plan for r in advise(elsewhere, Cluster(elsewhere.hardware["dgx-spark"], 2), AGENTIC)
                 if r.plan.build.id == build)
    assert not other.slow_route and not other.decode_bound and not other.first_token_bound
    spark = index.hardware["dgx-spark"]
    assert calibrate(elsewhere, spark, "trt-llm").layer_ms != calibrate(index, spark, "trt-llm").layer_ms
