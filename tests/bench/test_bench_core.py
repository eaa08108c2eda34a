"""The bench's arithmetic on hand-made samples: no server, milliseconds."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sparkadvisor.core.bench import BenchSpec, Collected, Counters, Rates, Sample, StepResult, figures, schedule
from sparkadvisor.core.benchplan import Prediction, time_left

SPEC = BenchSpec(100_000, 0.95, 200, repetitions=2, streams=(1, 4, 8))


def test_the_schedule_pairs_cold_and_warm_then_groups_streams():
    steps = schedule(SPEC)
    assert [(s.kind, s.repetition, s.streams) for s in steps] == [
        ("cold", 1, 1), ("warm", 1, 1), ("cold", 2, 1), ("warm", 2, 1), ("streams", 1, 4), ("streams", 1, 8)]
    assert [s.computed_tokens for s in steps[:2]] == [100_001, 5_200]
    assert steps[4].computed_tokens == 4 * 5_200 and steps[4].label(SPEC) == "decode at 4 streams"
    assert SPEC.shared_tokens == 95_000 and SPEC.new_tokens == 5_000


def test_figures_are_medians_with_spread_and_the_article_ratio():
    steps = schedule(SPEC)
    collected = Collected(SPEC)
    # The article's gateway: 73.2 s uncached, 4.3 s cached; decode 200 tokens in ~4.3 s.
    for step, ttft, hits in ((steps[0], 73.2, 0), (steps[1], 4.3, 95_000), (steps[2], 71.0, 0),
                             (steps[3], 4.5, 95_000)):
        decode = 4.3 if step.kind == "warm" else 0.0
        sample = Sample(100_000, step.max_tokens, 0.0, ttft, ttft + decode)
        collected.results.append(StepResult(step, (sample,), Counters(100_000, hits)))
    found = {f.key: f for f in figures(collected)}
    assert found["cold_ttft_s"].median == pytest.approx(72.1) and found["cold_ttft_s"].spread == pytest.approx(1.556,
                                                                                                               abs=1e-3)
    assert found["warm_ttft_s"].hit_share == 0.95 and found["warm_ttft_s"].hit_tokens == 95_000
    assert found["ratio"].values == pytest.approx((73.2 / 4.3, 71.0 / 4.5))
    assert found["decode_tok_s"].median == pytest.approx(199 / 4.3)
    assert found["prefill_tok_s"].median == pytest.approx(100_000 / 72.1, rel=1e-3)


def test_an_aggregate_counts_from_the_first_first_token_to_the_last_token():
    step = schedule(SPEC)[4]
    samples = tuple(Sample(100_000, 201, 0.0, 1.0 + i, 11.0 + i) for i in range(4))
    assert StepResult(step, samples, Counters()).aggregate_tok_s == pytest.approx(800 / 13)


def test_a_prediction_says_where_a_figure_falls():
    p = Prediction(46.0, 30.0, 69.0)
    assert [p.verdict(v) for v in (29.9, 46.9, 70.0)] == ["below", "inside", "above"]


def test_the_time_left_follows_the_rates_and_is_unknown_without_them():
    steps = schedule(SPEC)
    assert time_left(steps, SPEC, Rates()) is None
    rates = Rates(1_600.0, {1: 50.0, 4: 40.0, 8: 30.0})
    cold, warm = 100_000 / 1_600, 5_000 / 1_600 + 200 / 50
    groups = 4 * 5_000 / 1_600 + 200 / 40 + 8 * 5_000 / 1_600 + 200 / 30
    assert time_left(steps, SPEC, rates) == pytest.approx(2 * (cold + warm) + groups)


def test_the_bench_source_loads_no_network_library_until_it_runs():
    code = "import sys, sparkadvisor.sources.bench, sparkadvisor.commands.bench; print('httpx' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


@pytest.mark.parametrize("enforce_eager", [None, False])
def test_the_decode_prediction_is_the_plans_own_in_the_plans_mode(enforce_eager):
    """The bench predicts decode as `show` does, in the mode the plan was costed in: GLM's recipe runs eager, and
    --cuda-graphs costs it with graphs (the bench used to predict the recipe's eager speed regardless)."""
    from sparkadvisor.catalogs import load_index
    from sparkadvisor.core.advisor import evaluate_build
    from sparkadvisor.core.benchplan import predict
    from sparkadvisor.core.plan import Cluster
    from sparkadvisor.core.workload import AGENTIC, Settings

    index = load_index()
    cluster = Cluster(index.hardware["dgx-spark"], 2)
    plan = evaluate_build(index, index.builds["glm-5.3-flash-nvfp4-redhat"], cluster, AGENTIC,
                          Settings(enforce_eager=enforce_eager))
    assert plan.speed.eager is (enforce_eager is None)
    predicted = predict(plan, BenchSpec(100_000, 0.95, 200))["decode_tok_s"]
    assert predicted.expected == pytest.approx(plan.decode.expected_tok_s, rel=1e-6)
    assert predicted.acceptance is None  # the recipe's, until vLLM's counters say otherwise


def test_a_bound_has_no_range_for_a_run_to_fall_outside():
    """Qwen3-235B NVFP4 runs on TensorRT-LLM, which a caveat reports far slower: a bench of it sets its figures
    beside bounds (at most N tok/s, at least T s), never "OUTSIDE the predicted range"; so does a model that reads
    a per-token table of unpublished size."""
    from sparkadvisor.benchtext import figure_text
    from sparkadvisor.catalogs import load_index
    from sparkadvisor.core.advisor import evaluate_build
    from sparkadvisor.core.bench import Figure
    from sparkadvisor.core.benchplan import predict
    from sparkadvisor.core.plan import Cluster
    from sparkadvisor.core.workload import AGENTIC

    index = load_index()
    for build, nodes, keys in (("qwen3-235b-a22b-nvfp4-nvidia", 2, ("decode_tok_s", "prefill_tok_s", "cold_ttft_s")),
                               ("qwen3.8-flash-next-nvfp4", 4, ("decode_tok_s",))):
        plan = evaluate_build(index, index.builds[build], Cluster(index.hardware["dgx-spark"], nodes), AGENTIC)
        predicted = predict(plan, BenchSpec(100_000, 0.95, 200))
        for key in keys:
            p = predicted[key]
            assert p.bound and p.verdict(p.expected * 3) == "unknown", (build, key)
            unit = "s" if key.endswith("_s") and not key.endswith("tok_s") else "tok/s"
            text = figure_text(Figure(key, key, unit, (p.expected * 3,)), p, "")
            assert "OUTSIDE" not in text and ("at most" if unit == "tok/s" else "at least") in text, text
        assert predicted["ratio"].verdict(predicted["ratio"].expected) == "inside"
