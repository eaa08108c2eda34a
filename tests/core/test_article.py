"""The article's arithmetic, reproduced by the app: each number as the article prints it."""

from __future__ import annotations

import pytest

from sparkadvisor.core.advisor import advise, evaluate_build
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.units import GB, GiB
from sparkadvisor.core.workload import AGENTIC, CHAT


def cluster(index, nodes: int) -> Cluster:
    return Cluster(index.hardware["dgx-spark"], nodes)


def plan(index, build: str, nodes: int, workload=AGENTIC):
    return evaluate_build(index, index.builds[build], cluster(index, nodes), workload)


def test_two_sparks_hold_243_gib(index):
    spark = index.hardware["dgx-spark"]
    assert 2 * spark.usable_memory_gib == pytest.approx(243.2)
    assert spark.usable_memory_gib * GiB / GB == pytest.approx(130.57, abs=0.01)


def test_deepseek_v41_needs_three_or_four_sparks(index):
    on_two = plan(index, "deepseek-v4.1-flash", 2)
    assert not on_two.fits
    assert on_two.nodes_needed in (3, 4)
    on_four = plan(index, "deepseek-v4.1-flash", 4)
    assert on_four.fits


def test_glm_on_two_sparks_leaves_11_gib_at_085(index):
    glm = plan(index, "glm-5.3-flash-nvfp4-redhat", 2)
    assert glm.weights.total_bytes / GiB == pytest.approx(184.4, abs=0.1)
    assert glm.weights_per_node / GiB == pytest.approx(92.2, abs=0.1)
    assert glm.budget.utilization == 0.85
    assert glm.budget.left_bytes / GiB == pytest.approx(11.2, abs=0.3)
    assert glm.budget.kv_bytes / GiB == pytest.approx(6.0)
    assert glm.fits


def test_glm_ceiling_60_against_46_9_measured(index):
    glm = plan(index, "glm-5.3-flash-nvfp4-redhat", 2)
    assert glm.decode.ceiling_tok_s == pytest.approx(60.7, abs=0.5)
    assert glm.decode_measured.value == 46.9
    assert glm.efficiency == pytest.approx(0.78, abs=0.015)


def test_qwen_is_2_4_gb_short_on_one_spark_yet_runs_by_its_recipe(index):
    qwen = plan(index, "qwen3.8-flash-next-nvfp4", 1)
    assert qwen.short_bytes / GB == pytest.approx(2.4, abs=0.05)
    assert qwen.recipe is not None and qwen.recipe.streams_tables
    assert qwen.fits
    assert qwen.decode_measured is not None


def test_qwen_ceiling_180_against_53_7_measured_on_two(index):
    qwen = plan(index, "qwen3.8-flash-next-nvfp4", 2)
    assert qwen.decode.ceiling_tok_s == pytest.approx(182, abs=2)
    assert qwen.decode_measured.value == 53.7
    assert qwen.efficiency == pytest.approx(0.30, abs=0.01)


def test_agentic_on_two_ranks_glm_above_qwen_whose_first_token_takes_about_a_minute(index):
    ranked = advise(index, cluster(index, 2), AGENTIC)
    place = {r.plan.build.id: r for r in ranked}
    glm, qwen = place["glm-5.3-flash-nvfp4-redhat"], place["qwen3.8-flash-next-nvfp4"]
    assert glm.rank is not None and qwen.rank is not None and glm.rank < qwen.rank
    assert not qwen.plan.prefix_caching
    assert qwen.plan.uncached_tokens == 100_000
    assert 30 <= qwen.plan.ttft_s <= 90
    assert glm.plan.ttft_s < 10
    assert "first token" in qwen.reason


def test_chat_drops_the_prefix_caching_penalty(index):
    qwen = plan(index, "qwen3.8-flash-next-nvfp4", 2, CHAT)
    assert qwen.ttft_s < 5


def test_modelopt_glm_build_is_disqualified_for_agents_not_for_chat(index):
    agentic = {r.plan.build.id: r for r in advise(index, cluster(index, 2), AGENTIC)}
    bad = agentic["glm-5.3-flash-nvfp4-libertai"]
    assert bad.rank is None
    assert "tool call" in bad.reason and "#54150" in bad.reason
    chat = {r.plan.build.id: r for r in advise(index, cluster(index, 2), CHAT)}
    assert chat["glm-5.3-flash-nvfp4-libertai"].rank is not None


def test_excluded_builds_sit_below_the_ranked_ones(index):
    ranked = advise(index, cluster(index, 2), AGENTIC)
    ranks = [r.rank for r in ranked]
    first_excluded = ranks.index(None)
    assert all(r is None for r in ranks[first_excluded:])
    assert ranks[:first_excluded] == list(range(1, first_excluded + 1))
