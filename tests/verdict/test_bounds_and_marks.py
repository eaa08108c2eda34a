"""A figure that is only a bound never meets a target, and the table's mark on a measurement says what `show` says."""

from __future__ import annotations

import json
import re

import pytest

from sparkadvisor.cli import main
from sparkadvisor.core.advisor import advise, evaluate_build
from sparkadvisor.core.explain import explain
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.ranking import Ranked
from sparkadvisor.core.table import ABOVE_RANGE, BELOW_RANGE, row_cells
from sparkadvisor.core.workload import AGENTIC, CHAT, Settings


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
    reads allow (NVIDIA measured 11.73 tok/s). Its decode is a bound (≤N), its first token, cold or warm, the soonest
    it comes, and so its turn: the targets they seem to meet are unknown, and NVIDIA's run of that route feeds no
    rate of the fit."""
    from sparkadvisor.core.fidelity import fidelity

    build = "qwen3-235b-a22b-nvfp4-nvidia"
    r = next(r for r in advise(index, Cluster(index.hardware["dgx-spark"], 2), AGENTIC) if r.plan.build.id == build)
    plan = r.plan
    assert plan.constants.engine == "trt-llm" and plan.slow_route == "dgx-spark-playbooks #3"
    assert plan.decode_bound and plan.first_token_bound and plan.ttft_s is not None and plan.ttft_s <= 20
    statuses = dict(zip(("context", "ttft", "turn", "decode", "sessions"), plan.statuses, strict=True))
    assert statuses["ttft"] == statuses["decode"] == statuses["turn"] == "unknown"
    cells = row_cells(r)
    assert cells["expected"].startswith("≤") and cells["ttft"].startswith("≥") and cells["turn"].startswith("≥")
    steps = {s.key: s.text for s in explain(plan)}
    assert "dgx-spark-playbooks #3 reports this engine far slower" in steps["expected"]
    assert "the soonest the first token comes" in steps["ttft"] and "prefill at most" in steps["ttft"]
    assert "Uncached (a cold 100,000-token prompt): at least " in steps["ttft"]
    assert main(["rank", "--nodes", "2", "--json"]) == 0
    row = next(c for c in json.loads(capsys.readouterr().out)["candidates"] if c["build"] == build)
    assert row["decode_expected_is_bound"] is row["first_token_is_bound"] is row["turn_is_bound"] is True
    assert row["decode_low_tok_s"] is None and any(u.startswith("first token at least ") for u in row["unknowns"])
    assert main(["compare", build, "qwen3-235b-a22b-gptq", "--nodes", "2"]) == 0
    compared = capsys.readouterr().out
    assert re.search(r"^1st token, cold +≥\d", compared, re.M) and re.search(r"^turn +≥\d", compared, re.M)
    checks = [c for c in fidelity(index).checks if c.recipe == "qwen3-235b-a22b-nvfp4-trtllm-nvidia-blog"]
    assert checks and all(c.predicted is None and c.slow_route and c.bound and c.bound > c.measured for c in checks)
    # Followed, NVIDIA's run gives the decode, measured; the first token is still the soonest, so the turn is too.
    named = evaluate_build(index, index.builds[build], Cluster(index.hardware["dgx-spark"], 2), AGENTIC,
                           Settings(recipe="qwen3-235b-a22b-nvfp4-trtllm-nvidia-blog"))
    assert not named.decode_bound and named.first_token_bound and named.turn_bound
    assert named.statuses[2] == "unknown" and row_cells(Ranked(named, None, "", None))["turn"].startswith("≥")


def test_a_caveat_that_names_engines_concerns_a_plan_on_them_only(index):
    """A caveat naming another engine is not carried (NVIDIA's slow TRT-LLM route says nothing of vLLM), and a
    slow-engine caveat naming no engine warns of another route: neither makes the plan's speeds bounds. The fit
    takes the run back once the caveat names another engine."""
    from dataclasses import replace

    from sparkadvisor.core.calibration import calibrate
    from sparkadvisor.core.index import CatalogIndex

    build, spark = "qwen3-235b-a22b-nvfp4-nvidia", index.hardware["dgx-spark"]
    for engines in (("vllm",), ()):
        caveats = tuple(replace(c, engines=engines) if c.id == "qwen3-235b-trtllm-slow" else c
                        for c in index.catalog.caveats)
        changed = CatalogIndex(replace(index.catalog, caveats=caveats))
        plan = evaluate_build(changed, changed.builds[build], Cluster(spark, 2), AGENTIC)
        assert not plan.slow_route and not plan.decode_bound and not plan.first_token_bound, engines
        assert plan.decode is not None and plan.decode.low_tok_s < plan.decode.expected_tok_s
        carried = [c.id for c in plan.caveats]
        assert carried == ([] if engines else ["qwen3-235b-trtllm-slow"]), engines
        assert calibrate(changed, spark, "trt-llm").layer_ms != calibrate(index, spark, "trt-llm").layer_ms


def test_check_refuses_a_caveat_engine_nothing_runs(tmp_path, capsys):
    """A misspelt engine on a caveat would leave every plan out of its reach without a word."""
    path = tmp_path / "c.toml"
    path.write_text('[sources.x]\ntitle = "t"\nurl = "https://example.org"\n[[caveats]]\nid = "slow"\n'
                    'kind = "slow-engine"\nseverity = "warning"\nexplanation = "slow"\nengines = ["vlm"]\n'
                    'source = "x"\n')
    assert main(["check", str(path)]) != 0
    err = capsys.readouterr()
    said = err.out + err.err
    assert "engines" in said and "'vlm'" in said and "vllm" in said and "Traceback" not in said
