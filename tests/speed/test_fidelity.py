"""The report card: every measurement against its leave-one-out prediction."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from sparkadvisor.cli import main
from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.calibration import calibrate, on_slow_route
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


@pytest.fixture(scope="module")
def report(index):
    """The report card of the bundled catalog, computed once for the tests that only read it."""
    return fidelity(index)


def _check(report, recipe: str, metric: str):
    return next(c for c in report.checks if c.recipe == recipe and c.metric == metric)


def test_every_measurement_is_listed_and_every_speed_figure_predicted_or_explained(index, report) -> None:
    measured = sum(len(r.measurements) for r in index.catalog.recipes)
    assert len(report.checks) == measured
    speed = [c for c in report.checks if c.metric in SPEED_METRICS]
    assert speed and all(c.predicted is not None or "unpublished" in c.skipped
                         or "dgx-spark-playbooks #3 reports trt-llm far slower" in c.skipped for c in speed)
    overall = report.summaries[-1]
    assert overall.metric == "all" and overall.count == sum(1 for c in speed if c.predicted is not None)
    assert overall.count + overall.skipped == len(speed)
    assert all(c.skipped for c in report.checks if c.metric not in SPEED_METRICS)


def test_a_model_with_unpublished_table_reads_is_unknown_not_a_pass(report) -> None:
    check = _check(report, "qwen3.8-flash-next-tonyd2wild-tp2", "decode_tok_s")
    assert check.predicted is None and "PLE" in check.skipped and check.inside is None


def test_a_measurement_never_predicts_itself(index, report) -> None:
    recipe = "glm-5.3-flash-tonyd2wild-tp2"
    before = _check(report, recipe, "decode_tok_s")
    after = _check(fidelity(_scaled(index, recipe, "decode_tok_s", 3.0)), recipe, "decode_tok_s")
    assert after.predicted == pytest.approx(before.predicted)
    assert after.measured == pytest.approx(before.measured * 3)


def test_glm_lands_near_its_share_of_the_ceiling(index, report) -> None:
    """GLM near 78% of its ceiling: predicted without its own measurements the measured figure
    falls inside the predicted range, and with the whole catalog the weights are most of a step."""
    assert _check(report, "glm-5.3-flash-tonyd2wild-tp2", "decode_tok_s").inside
    cluster = Cluster(index.hardware["dgx-spark"], 2)
    glm = evaluate_build(index, index.builds["glm-5.3-flash-nvfp4-redhat"], cluster, AGENTIC).decode
    assert 0.6 < glm.expected_tok_s / glm.ceiling_tok_s < 0.95
    assert glm.weights_ms / glm.step_ms > 0.5


def test_each_measurement_is_predicted_in_its_own_mode_and_context(report) -> None:
    graphs, eager = (c for c in report.checks if c.recipe == "gpt-oss-120b-conselara-tp1")
    assert (graphs.mode, eager.mode) == ("graphs", "eager")
    assert eager.predicted < graphs.predicted / 1.5
    bench = [c for c in report.checks if c.recipe == "qwen3-coder-30b-llamacpp-bench" and c.metric == "decode_tok_s"]
    by_context = sorted(bench, key=lambda c: c.context_tokens or 0)
    assert [c.predicted for c in by_context] == sorted((c.predicted for c in by_context), reverse=True)


def test_sparse_attention_reads_a_bounded_kv(index) -> None:
    """DeepSeek-V4's compressed, top-k attention reads a few tens of MB per step at 100,000 tokens,
    not the whole context: KV is a small share of its step."""
    cluster = Cluster(index.hardware["dgx-spark"], 2)
    plan = evaluate_build(index, index.builds["deepseek-v4-flash-0731-stack"], cluster, AGENTIC)
    assert plan.decode.kv_ms < 0.05 * plan.decode.step_ms


def test_a_figure_outside_the_range_is_reported_not_hidden(index) -> None:
    recipe = "glm-5.3-flash-tonyd2wild-tp2"
    changed = _scaled(index, recipe, "decode_tok_s", 5.0)
    report = fidelity(changed)
    check = _check(report, recipe, "decode_tok_s")
    assert check.inside is False
    decode = next(s for s in report.summaries if s.metric == "decode_tok_s")
    assert decode.within_range < decode.count
    plan = evaluate_build(changed, changed.builds["glm-5.3-flash-nvfp4-redhat"],
                          Cluster(changed.hardware["dgx-spark"], 2), AGENTIC)
    measured = next(s for s in explain(plan) if s.key == "measured")
    assert "OUTSIDE the predicted range" in measured.text


def test_an_engine_nobody_measured_says_whose_constants_it_borrows(index) -> None:
    constants = calibrate(index, index.hardware["dgx-spark"], "tgi")
    assert constants.engine == "tgi" and "no tgi measurement" in constants.basis["engine"]
    trt = calibrate(index, index.hardware["dgx-spark"], "trt-llm")  # its runs but the one on a route reported slow
    runs = sum(1 for r in index.catalog.recipes if r.engine == "trt-llm" and not on_slow_route(index, r)
               for m in r.measurements if m.metric in ("decode_tok_s", "aggregate_tok_s"))
    assert runs >= 2 and f"fitted to {runs} trt-llm measurements" in trt.basis["fixed_ms"]
    own = calibrate(index, index.hardware["dgx-spark"], "llama.cpp")
    assert own.decode_measurements > 0 and "llama.cpp" in own.basis["fixed_ms"]


def test_builds_without_active_parameters_are_skipped_with_the_reason(index) -> None:
    models = [replace(m, params=replace(m.params, active_b=None))
              if m.id == "gpt-oss-120b" else m for m in index.catalog.models]
    changed = CatalogIndex(replace(index.catalog, models=tuple(models)))
    check = _check(fidelity(changed), "gpt-oss-120b-cutlass-tp1", "decode_tok_s")
    assert check.predicted is None and "active parameters unpublished" in check.skipped


def test_fidelity_command_prints_the_summary_and_the_constants(capsys) -> None:
    assert main(["fidelity"]) == 0
    out = capsys.readouterr().out
    assert "leave-one-out" in out and "median |error|" in out and "inside range" in out and "within 20%" in out
    assert "eager_ms_per_layer" in out and "fitted to" in out and "By engine:" in out
    assert "Its range is an 80% range" in out and "decode_band_below" in out


def test_fidelity_json_shape(capsys) -> None:
    assert main(["fidelity", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {s["metric"] for s in data["summary"]} >= {"decode_tok_s", "prefill_tok_s", "all"}
    check = data["checks"][0]
    assert {"recipe", "engine", "mode", "metric", "measured", "predicted", "low", "high", "error_pct", "inside",
            "skipped"} <= set(check)
    assert data["constants"][0]["bandwidth_fraction"]["basis"]
    assert {"within_20", "off_2x", "engine"} <= set(data["summary"][0])


def test_a_fold_without_an_engine_borrows_the_same_constants_whatever_the_order(index) -> None:
    """A cross-validation fold can hold out every recipe of an engine; its rows are then predicted
    with the pooled group's constants, else vLLM's, never whichever engine a dict happened to list
    first (the ranges used to change with PYTHONHASHSEED)."""
    from sparkadvisor.core.calibration import POOLED, constants_for

    spark = index.hardware["dgx-spark"]
    vllm, llama = (replace(calibrate(index, spark, e), engine=e) for e in ("vllm", "llama.cpp"))
    for fitted in ({"llama.cpp": llama, "vllm": vllm}, {"vllm": vllm, "llama.cpp": llama}):
        assert constants_for("atlas", fitted).engine == "vllm"
        assert constants_for("llama.cpp", fitted).engine == "llama.cpp"
    pooled = replace(vllm, engine=POOLED)
    assert constants_for("atlas", {"llama.cpp": llama, POOLED: pooled}).engine == POOLED
    assert constants_for("atlas", {"sglang": replace(vllm, engine="sglang"), "llama.cpp": llama}).engine == "llama.cpp"


DRAFTER_0731 = "deepseek-v4-flash-0731-stack:dspark"


def test_a_recipe_without_its_own_acceptance_takes_its_drafters_from_other_recipes(index) -> None:
    """The article publishes no acceptance: its step takes what other recipes of the same fused DSpark
    drafter published (tonyd2wild's 60.2%), and the median over every drafter once none is left."""
    spark = index.hardware["dgx-spark"]
    full = calibrate(index, spark)
    assert full.acceptance_for(DRAFTER_0731) == pytest.approx(0.602)
    assert "1 other recipe of this drafter" in full.basis[f"acceptance:{DRAFTER_0731}"]
    without = calibrate(index, spark, exclude=frozenset({"deepseek-v4-flash-0731-tonyd2wild-tp2"}))
    assert DRAFTER_0731 not in without.drafter_acceptance
    assert without.acceptance_for(DRAFTER_0731) == without.acceptance != pytest.approx(0.602)


def test_the_left_out_recipes_own_acceptance_never_feeds_its_drafters_rate(index) -> None:
    """Were the article to publish an acceptance, leaving it out of the fit drops it from the pool."""
    spec = next(r for r in index.catalog.recipes if r.id == "deepseek-v4-flash-article-tp2").speculative
    changed = _with_recipe(index, "deepseek-v4-flash-article-tp2", speculative=replace(spec, acceptance=0.3))
    spark = changed.hardware["dgx-spark"]
    assert calibrate(changed, spark).acceptance_for(DRAFTER_0731) == pytest.approx((0.3 + 0.602) / 2)
    left_out = calibrate(changed, spark, exclude=frozenset({"deepseek-v4-flash-article-tp2"}))
    assert left_out.acceptance_for(DRAFTER_0731) == pytest.approx(0.602)


def test_the_articles_stack_is_predicted_as_speculative_and_falls_in_its_range(report) -> None:
    check = _check(report, "deepseek-v4-flash-article-tp2", "decode_tok_s")
    assert check.inside and check.predicted > 43.7  # above the counted read's bound without speculation


def test_the_eager_cost_is_fitted_only_where_a_recipe_was_measured_in_both_modes(index) -> None:
    """conselara measured one recipe with and without CUDA graphs; without that pair the eager cost per
    layer is confounded with the weights of the eager-only recipes, so it stays assumed."""
    spark = index.hardware["dgx-spark"]
    assert "fitted to" in calibrate(index, spark).basis["eager_ms_per_layer"]
    without = calibrate(index, spark, exclude=frozenset({"gpt-oss-120b-conselara-tp1"}))
    assert without.basis["eager_ms_per_layer"] == "assumed: no recipe measured both with and without CUDA graphs"
    assert without.eager_ms_per_layer > 0


def test_decode_gemms_never_run_faster_than_the_fastest_prefill_gemm(index) -> None:
    """A decode step multiplies a few tokens by each weight, prefill thousands: per FLOP it is never faster.
    Without llama.cpp's 2-, 8- and 16-sequence runs the free fit would put the decode GEMMs at ~290 TFLOPS;
    they stop at fp8 prefill's, and the basis says so."""
    spark = index.hardware["dgx-spark"]
    sweep = {2, 8, 16}
    recipes = tuple(replace(r, measurements=tuple(m for m in r.measurements if not (
        r.id.endswith("-llamacpp-bench") and m.metric == "aggregate_tok_s" and m.streams in sweep)))
        for r in index.catalog.recipes)
    thinner = CatalogIndex(replace(index.catalog, recipes=recipes))
    for catalog in (index, thinner):
        for engine in ("vllm", "llama.cpp", "trt-llm"):  # one shared decode rate: no engine's prefill is slower
            c = calibrate(catalog, spark, engine)
            floor = min(rate for rate in c.prefill_ms_per_gflop.values() if rate)
            assert c.compute_ms_per_gflop >= floor * (1 - 1e-9)
    assert calibrate(index, spark).basis["compute_ms_per_gflop"].startswith("fitted to ")
    basis = calibrate(thinner, spark).basis["compute_ms_per_gflop"]
    floor = calibrate(thinner, spark).compute_ms_per_gflop
    assert basis.startswith(f"at {1 / floor:.0f} TFLOPS, its floor: the fastest GEMM rate prefill reaches here (fp8)")
