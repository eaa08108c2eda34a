"""What vLLM keeps per node beside weights and KV: the profile run, CUDA graphs, a drafter, an
indexer's buffer, each from its source and only where the recipe's mode has it."""

from __future__ import annotations

import pytest

from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.explain import explain
from sparkadvisor.core.memory import (
    CUDA_GRAPH_GIB,
    DRAFT_GRAPH_GIB,
    DRAFT_PROFILE_GIB,
    INDEXER_BUFFER_BYTES_PER_TOKEN,
    PROFILE_PEAK_GIB,
)
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.units import GB, GiB
from sparkadvisor.core.workload import AGENTIC, Settings


def plan(index, build: str, nodes: int, settings: Settings | None = None):
    return evaluate_build(index, index.builds[build], Cluster(index.hardware["dgx-spark"], nodes), AGENTIC,
                          settings or Settings())


def step(p, key: str) -> str:
    return next(s.text for s in explain(p) if s.key == key)


def test_a_graph_recipe_keeps_its_graphs_and_eager_gives_them_to_the_kv_cache(index):
    graphs = plan(index, "qwen3.8-flash-next-nvfp4", 1)  # PIECEWISE graphs, MTP, an indexer
    eager = plan(index, "qwen3.8-flash-next-nvfp4", 1, Settings(enforce_eager=True))
    r = graphs.budget.reserve
    assert r.graph_bytes == pytest.approx(CUDA_GRAPH_GIB * GiB)
    assert r.draft_graph_bytes == pytest.approx(DRAFT_GRAPH_GIB * GiB)
    assert r.indexer_bytes == pytest.approx(INDEXER_BUFFER_BYTES_PER_TOKEN * 262144)
    assert eager.budget.reserve.graph_bytes == eager.budget.reserve.draft_graph_bytes == 0
    gained = eager.budget.kv_bytes - graphs.budget.kv_bytes
    assert gained == pytest.approx((CUDA_GRAPH_GIB + DRAFT_GRAPH_GIB) * GiB)
    assert eager.kv_pool_tokens > graphs.kv_pool_tokens
    assert "CUDA graphs" in step(graphs, "budget") and "no CUDA graphs (eager)" in step(eager, "budget")


def test_a_pinned_cache_skips_the_profile_run_but_not_the_drafter(index):
    glm = plan(index, "glm-5.3-flash-nvfp4-redhat", 2)  # eager, 6 GiB pin, a 2.2 GB DFlash2 drafter
    r = glm.budget.reserve
    assert r.graph_bytes == 0
    assert r.draft_weights_bytes == pytest.approx(2.2 * GB / 2)
    assert glm.budget.kv_bytes == pytest.approx(6 * GiB)
    assert glm.fits and not glm.fit_by_recipe
    assert "skips its profile run" in step(glm, "budget")


def test_an_eager_build_keeps_the_profile_peak_and_its_drafters_share(index):
    p = plan(index, "gpt-oss-120b-mxfp4", 1, Settings(enforce_eager=True))  # no recipe reserve, no indexer
    r = p.budget.reserve
    assert r.logged is None
    assert r.profile_bytes == pytest.approx(PROFILE_PEAK_GIB * GiB)
    assert r.total_bytes == pytest.approx(r.profile_bytes + r.indexer_bytes + r.draft_weights_bytes)


def test_a_recipe_with_its_own_logged_boot_is_reserved_by_it(index):
    # Qwen3.8 TP2 (FULL_DECODE_ONLY, MTP3): its ledger's row 12 gives the profile run and its decode-only
    # graphs (target and drafter together), so no general graph figure and no separate drafter graphs.
    p = plan(index, "qwen3.8-flash-next-nvfp4", 2)
    r = p.budget.reserve
    assert r.logged is not None and r.graphs_logged
    assert r.profile_bytes == pytest.approx(3.69 * GiB)
    assert r.graph_bytes == pytest.approx(0.40 * GiB) and r.draft_graph_bytes == 0
    assert "tonyd2wild-qwen-kv-ledger" in p.source_ids() and "tonyd2wild-glm" not in r.source_ids
    text = step(p, "budget")
    assert ("this recipe's own logged boot at 8,192 batched tokens, where the recipe runs 4,096 (which needs less"
            in text)
    assert "ledger row 12" in text
    # --eager drops its graphs and keeps its profile run.
    eager = plan(index, "qwen3.8-flash-next-nvfp4", 2, Settings(enforce_eager=True)).budget.reserve
    assert eager.graph_bytes == 0 and eager.profile_bytes == pytest.approx(3.69 * GiB)


def test_a_logged_profile_without_graphs_keeps_the_general_graph_figures(index):
    r = plan(index, "qwen3.8-flash-next-nvfp4", 1).budget.reserve  # PIECEWISE: no log splits its graphs
    assert r.profile_bytes == pytest.approx(2.57 * GiB) and not r.graphs_logged
    assert r.graph_bytes == pytest.approx(CUDA_GRAPH_GIB * GiB)
    assert r.draft_graph_bytes == pytest.approx(DRAFT_GRAPH_GIB * GiB)


@pytest.mark.parametrize(("recipe", "max_model_len", "boots", "profile"), [
    # Qwen3.8 TP1, ledger row 9: gmu 0.80, ~76 GiB of weights (the catalog's 76.18), ~14.7 GiB of KV,
    # the general graph figures.
    ("qwen3.8-flash-next-tonyd2wild-tp1", 262_144, [(0.80, 76.18, 14.7, 1.99 + 0.55)], 2.57),
    # Qwen3.8 TP2, ledger row 12: gmu 0.70, 63 GiB per rank, 16.74 GiB of KV, decode-only graphs of rows 19/23.
    ("qwen3.8-flash-next-tonyd2wild-tp2", 262_144, [(0.70, 63.0, 16.74, 23_832 * 16.56 / 995_129)], 3.69),
    # DeepSeek-V4.1-Flash TP4, the two boots of its flags besides the README's: boot 9 (RECIPE.md: 4.84 GiB
    # of KV, 1.85 + 0.56 GiB graphs) and boot 10's restore log (6.13 GiB, 1.29 + 0.55), at gmu 0.80, 81.58 GiB.
    ("deepseek-v4.1-flash-tonyd2wild-tp4", 300_000,
     [(0.80, 81.58, 4.84, 1.85 + 0.56), (0.80, 81.58, 6.13, 1.29 + 0.55)], 6.61),
])
def test_each_logged_profile_run_follows_from_its_boots(index, recipe, max_model_len, boots, profile):
    # What vLLM kept beside weights and KV in each boot, less the indexer buffer its rule sizes and that
    # boot's CUDA graphs: gmu x 121.6 - weights - KV - buffer - graphs; several boots give their mean.
    logged = next(r for r in index.catalog.recipes if r.id == recipe).reserve
    buffer = INDEXER_BUFFER_BYTES_PER_TOKEN * max_model_len / GiB
    profiles = [engine * 121.6 - weights - kv - buffer - graphs for engine, weights, kv, graphs in boots]
    assert logged.boots == len(boots)
    assert logged.profile_gib == pytest.approx(profile)
    assert sum(profiles) / len(boots) == pytest.approx(profile, abs=0.01)
    # The graphs the plan keeps back are the same boots' as the profile, never another boot's beside it.
    graphs = sum(b[-1] for b in boots) / len(boots)
    assert logged.cuda_graphs_gib is None or logged.cuda_graphs_gib == pytest.approx(graphs, abs=0.01)


def test_a_reserve_never_takes_the_boot_whose_pool_it_predicts(index):
    # DeepSeek-V4.1-Flash's measured pool is the README's boot 10 (5.15 GiB of KV, 1.99 + 0.55 GiB of
    # graphs): its reserve averages the other two boots of the same flags, and show says so.
    ds = plan(index, "deepseek-v4.1-flash", 4)
    r = ds.budget.reserve
    assert r.logged.boots == 2 and r.graphs_logged
    assert "tonyd2wild-ds41" not in r.logged.source  # the README cites only the indexer buffer's rule here
    assert {"tonyd2wild-ds41-recipe", "tonyd2wild-ds41-restore"} <= set(r.source_ids)
    text = step(ds, "budget")
    assert "6.61 GiB profile run" in text and "the mean of 2 of this recipe's own logged boots" in text
    assert "2.13 GiB CUDA graphs of target and drafter: the same 2 boots" in text
    assert "5.5 GiB goes to the KV cache" in text
    # 5.48 GiB of KV at the measured pool's 5.15 GiB per 1,070,168 tokens: within 10% of it.
    assert ds.kv_pool_tokens == pytest.approx(1_139_736, rel=1e-3)


def test_a_build_without_a_recipe_keeps_the_profile_peak_and_cuda_graphs(index):
    p = plan(index, "qwen3-next-80b-a3b-nvfp4", 1)
    assert p.recipe is None
    r = p.budget.reserve
    assert r.total_bytes == pytest.approx((PROFILE_PEAK_GIB + CUDA_GRAPH_GIB) * GiB)


def test_a_recipe_that_logs_its_loaded_weights_is_budgeted_with_them(index):
    ds = plan(index, "deepseek-v4.1-flash", 4)
    assert ds.budget.weights_loaded
    assert ds.weights_per_node / GiB == pytest.approx(81.58)
    assert "81.58 GiB per rank as loaded (measured)" in step(ds, "parallelism")
    assert "as stored" in step(ds, "parallelism")


def test_the_reserves_sources_are_listed_when_it_sizes_the_kv_cache(index):
    qwen = plan(index, "qwen3.8-flash-next-nvfp4", 1)  # its own profile run, the general graph figures
    assert {"tonyd2wild-qwen-kv-ledger", "tonyd2wild-ds41"} <= set(qwen.source_ids())
    eager = plan(index, "qwen3-next-80b-a3b-nvfp4", 1, Settings(enforce_eager=True))
    assert "tonyd2wild-glm" in eager.source_ids() and "tonyd2wild-ds41" not in eager.source_ids()


def test_the_profile_constants_follow_from_the_glm_log_by_the_kv_model(index):
    # The profiler-sized pools of tonyd2wild-glm (TP2, gmu 0.85, max-model-len 262,144, block 2304):
    # 965,166 tokens without a drafter, 581,040 with its DFlash2 drafter (k = 7). The pool is
    # int(max concurrency x max_model_len), so the KV each left is pool / max_model_len x what one
    # request costs; what is left of gmu x memory after the weights (and the drafter's) is the profile
    # run, less GLM's own indexer prefill buffer (the reserve adds that apart, by vLLM's rule, for every
    # model with an indexer). If the KV model changes, these constants must be derived again.
    from sparkadvisor.core.kv import kv_shape

    kv = kv_shape(index.models["glm-5.3-flash"].attention, "fp8_e4m3", 2, 1)
    length, engine, weights, drafter = 262_144, 0.85 * 121.6, 198e9 / 2 / GiB, 2.2e9 / 2 / GiB
    buffer = INDEXER_BUFFER_BYTES_PER_TOKEN * length / GiB
    bare = 965_166 / length * kv.request_bytes(length, 2304, speculative_tokens=0, prefix_caching=True) / GiB
    drafted = 581_040 / length * kv.request_bytes(length, 2304, speculative_tokens=7, prefix_caching=True) / GiB
    assert PROFILE_PEAK_GIB == pytest.approx(engine - weights - bare - buffer, abs=0.01)
    # The drafted run left less KV than the bare one by less than the drafter's weights: nothing is
    # left to attribute to the drafter's profile run, and no negative figure is kept for it.
    derived = engine - weights - drafter - drafted - buffer - PROFILE_PEAK_GIB
    assert -0.2 < derived < 0
    assert DRAFT_PROFILE_GIB == 0


def test_a_cold_start_pool_is_shown_beside_a_warm_prediction_and_not_explained_away(index):
    # MiaAI-Lab's Gemma-4-31B start.sh recreates the container without vLLM's compile cache, so its logged
    # 542,037 tokens are a cold compile's (vllm #54122); the prediction stays a warm start's, sized from the
    # repo's 32.7 GB of weights, and says why the two differ without folding the gap into a constant.
    gemma = plan(index, "gemma-4-31b-nvfp4-nvidia", 1, Settings(recipe="gemma-4-31b-nvfp4-miaai"))
    assert gemma.recipe.cold_compile and gemma.budget.weights_bytes == pytest.approx(32.7 * GB)
    text = step(gemma, "pool")
    assert "Measured: 542k tokens" in text and "922k tokens" in text
    assert "That run compiled cold" in text and "vllm #54122" in text and "the pool here is a warm start's" in text
    warm = plan(index, "deepseek-v4-flash-0731-stack", 2, Settings(recipe="deepseek-v4-flash-0731-miaai-tp2"))
    assert not warm.recipe.cold_compile and "compiled cold" not in step(warm, "pool")
