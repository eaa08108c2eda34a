"""The report card: every measurement against its leave-one-out prediction."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from sparkadvisor.cli import main
from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.calibration import calibrate
from sparkadvisor.core.explain import explain
from sparkadvisor.core.fidelity import SPEED_METRICS, fidelity
from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.workload import AGENTIC


def _with_recipe(index: CatalogIndex, recipe_id: str, **changes: object) -> CatalogIndex:
    """A copy of the catalog with one recipe changed."""
    recipes = [replace(r, **changes) if r.id == recipe_id else r for r in index.catalog.recipes]
    return CatalogIndex(replace(index.catalog, recipes=tuple(recipes)))


def _scaled(index: CatalogIndex, recipe_id: str, metric: str, factor: float) -> CatalogIndex:
    recipe = next(r for r in index.catalog.recipes if r.id == recipe_id)
    measurements = [replace(m, value=m.value * factor) if m.metric == metric else m
                    for m in recipe.measurements]
    return _with_recipe(index, recipe_id, measurements=tuple(measurements))


def _check(report, recipe: str, metric: str):
    return next(c for c in report.checks if c.recipe == recipe and c.metric == metric)


def test_every_measurement_is_listed_and_every_speed_figure_predicted(index) -> None:
    report = fidelity(index)
    measured = sum(len(r.measurements) for r in index.catalog.recipes)
    assert len(report.checks) == measured
    speed = [c for c in report.checks if c.metric in SPEED_METRICS]
    assert speed and all(c.predicted is not None for c in speed)
    overall = report.summaries[-1]
    assert overall.metric == "all" and overall.count == len(speed)
    assert all(c.skipped for c in report.checks if c.metric not in SPEED_METRICS)


def test_a_measurement_never_predicts_itself(index) -> None:
    recipe = "glm-5.3-flash-tonyd2wild-tp2"
    before = _check(fidelity(index), recipe, "decode_tok_s")
    after = _check(fidelity(_scaled(index, recipe, "decode_tok_s", 3.0)), recipe, "decode_tok_s")
    assert after.predicted == pytest.approx(before.predicted)
    assert after.measured == pytest.approx(before.measured * 3)


def test_the_article_puzzles_come_out_of_the_model(index) -> None:
    """GLM near 78% of its ceiling, Qwen near 30%: predicted without their own measurements the
    measured figures fall inside the predicted ranges, and with the whole catalog the model puts
    each at its share of the ceiling with the step's breakdown."""
    report = fidelity(index)
    for recipe in ("glm-5.3-flash-tonyd2wild-tp2", "qwen3.8-flash-next-tonyd2wild-tp2"):
        assert _check(report, recipe, "decode_tok_s").inside
    cluster = Cluster(index.hardware["dgx-spark"], 2)
    glm = evaluate_build(index, index.builds["glm-5.3-flash-nvfp4-redhat"], cluster, AGENTIC).decode
    qwen = evaluate_build(index, index.builds["qwen3.8-flash-next-nvfp4"], cluster, AGENTIC).decode
    assert 0.65 < glm.expected_tok_s / glm.ceiling_tok_s < 0.9
    assert 0.2 < qwen.expected_tok_s / qwen.ceiling_tok_s < 0.4
    assert glm.weights_ms / glm.step_ms > 0.5 > qwen.weights_ms / qwen.step_ms


def test_a_figure_outside_the_range_is_reported_not_hidden(index) -> None:
    recipe = "qwen3.8-flash-next-tonyd2wild-tp2"
    changed = _scaled(index, recipe, "decode_tok_s", 5.0)
    report = fidelity(changed)
    check = _check(report, recipe, "decode_tok_s")
    assert check.inside is False
    decode = next(s for s in report.summaries if s.metric == "decode_tok_s")
    assert decode.within_range < decode.count
    plan = evaluate_build(changed, changed.builds["qwen3.8-flash-next-nvfp4"],
                          Cluster(changed.hardware["dgx-spark"], 2), AGENTIC)
    measured = next(s for s in explain(plan) if s.key == "measured")
    assert "OUTSIDE the predicted range" in measured.text


def test_other_engines_do_not_calibrate_vllm(index) -> None:
    hardware = index.hardware["dgx-spark"]
    recipe = "gpt-oss-120b-cutlass-tp1"
    other = _scaled(_with_recipe(index, recipe, engine="llama.cpp"), recipe, "decode_tok_s", 0.2)
    without = calibrate(index, hardware, exclude=frozenset({recipe}))
    assert calibrate(other, hardware) == without
    check = _check(fidelity(other), recipe, "decode_tok_s")
    assert check.engine == "llama.cpp" and check.predicted is not None


def test_builds_without_active_parameters_are_skipped_with_the_reason(index) -> None:
    models = [replace(m, params=replace(m.params, active_b=None))
              if m.id == "gpt-oss-120b" else m for m in index.catalog.models]
    changed = CatalogIndex(replace(index.catalog, models=tuple(models)))
    check = _check(fidelity(changed), "gpt-oss-120b-cutlass-tp1", "decode_tok_s")
    assert check.predicted is None and "active parameters unpublished" in check.skipped


def test_fidelity_command_prints_the_summary_and_the_constants(capsys) -> None:
    assert main(["fidelity"]) == 0
    out = capsys.readouterr().out
    assert "leave-one-out" in out and "median |error|" in out and "inside range" in out
    assert "spec_ms" in out and "fitted to" in out


def test_fidelity_json_shape(capsys) -> None:
    assert main(["fidelity", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {s["metric"] for s in data["summary"]} >= {"decode_tok_s", "prefill_tok_s", "all"}
    check = data["checks"][0]
    assert {"recipe", "metric", "measured", "predicted", "low", "high", "error_pct", "inside", "skipped"} <= set(check)
    assert data["constants"][0]["bandwidth_fraction"]["basis"]
