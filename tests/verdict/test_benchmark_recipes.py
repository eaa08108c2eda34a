"""A benchmark's test configuration (prefix caching off, an unsafe memory setting) is evidence, not a recipe to
serve with: its measurements feed the fit, and a plan follows it only where --recipe names it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from sparkadvisor.cli import main
from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.calibration import calibrate
from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.workload import AGENTIC, Settings

NANO = "nemotron-3-nano-fp8"  # djangodevreng's benchmark run is its only recipe on one Spark
NANO_RUN = "nemotron-3-nano-fp8-djangodevreng-tp1"


def _plan(index, build: str, recipe: str | None = None):
    return evaluate_build(index, index.builds[build], Cluster(index.hardware["dgx-spark"], 1), AGENTIC,
                          Settings(recipe=recipe))


def test_a_benchmark_run_is_not_followed_unless_named(index):
    assert index.catalog.recipes[[r.id for r in index.catalog.recipes].index(NANO_RUN)].benchmark
    plan = _plan(index, NANO)
    assert plan.recipe is None and plan.prefix_caching  # vLLM's defaults: an agent's prompt is reused
    named = _plan(index, NANO, NANO_RUN)
    assert named.recipe.id == NANO_RUN and not named.prefix_caching
    assert named.ttft_s > 5 * plan.ttft_s  # every turn recomputes its 100,000 tokens


def test_a_served_recipe_is_followed_over_a_better_measured_benchmark_run(index):
    """Gemma 4 31B NVFP4: MiaAI's recipe has fewer measurements than djangodevreng's run, and is the one followed."""
    facts = index.facts["gemma-4-31b-nvfp4-nvidia"]
    here = {r.id: r for r in facts.recipes_on(index.hardware["dgx-spark"]) if r.nodes == 1}
    run = here.pop("gemma-4-31b-nvfp4-nvidia-djangodevreng-tp1")
    assert [r.id for r in here.values()] == ["gemma-4-31b-nvfp4-miaai"]
    assert len(run.measurements) > len(here["gemma-4-31b-nvfp4-miaai"].measurements)
    assert _plan(index, "gemma-4-31b-nvfp4-nvidia").recipe.id == "gemma-4-31b-nvfp4-miaai"


def test_show_names_the_benchmark_runs_apart_and_how_to_follow_one(capsys):
    assert main(["show", NANO, "--nodes", "1"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (f"recipe [stated] No recipe for this build on 1 x DGX Spark: vLLM's defaults size the plan. Benchmark runs "
            "here (their test settings, such as prefix caching off, are not a recipe to serve with; their measurements "
            f"feed the speed model, and --recipe ID follows one): {NANO_RUN} (5 measurements).") in out
    assert main(["show", NANO, "--nodes", "1", "--recipe", NANO_RUN, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["recipe"] == NANO_RUN


def test_a_benchmark_runs_measurements_move_the_fit(index):
    spark = index.hardware["dgx-spark"]
    without = CatalogIndex(replace(index.catalog, recipes=tuple(r for r in index.catalog.recipes if not r.benchmark)))
    fitted = ("fixed_ms", "layer_ms", "kv_ms_per_gb", "compute_ms_per_gflop", "eager_ms_per_layer")
    with_runs, without_runs = calibrate(index, spark, "vllm"), calibrate(without, spark, "vllm")
    assert [getattr(with_runs, f) for f in fitted] != pytest.approx([getattr(without_runs, f) for f in fitted])

