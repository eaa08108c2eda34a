"""The view model: positions come from the core's ranking and sort values."""

from __future__ import annotations

from sparkadvisor.core.table import sort_value
from sparkadvisor.core.workload import AGENTIC, CHAT
from sparkadvisor.tui.model import RankingCache, Scenario, compute_ranking, matches, sweep


def test_rank_positions_follow_the_core(index) -> None:
    ranking = compute_ranking(index, Scenario("dgx-spark", 2, AGENTIC))
    positions = ranking.positions()
    assert [b for b, _ in sorted(positions.items(), key=lambda kv: kv[1])] == \
        [r.plan.build.id for r in ranking.ranked]


def test_column_sort_keeps_excluded_builds_below(index) -> None:
    ranking = compute_ranking(index, Scenario("dgx-spark", 2, AGENTIC))
    for reverse in (False, True):
        order = sorted(ranking.positions("ttft", reverse).items(), key=lambda kv: kv[1])
        items = [ranking.by_id[b] for b, _ in order]
        flags = [r.excluded for r in items]
        assert flags == sorted(flags)
        included = [sort_value(r, "ttft") for r in items if not r.excluded]
        known = [value for unknown, value in included if not unknown]
        assert known == sorted(known, reverse=reverse)
        assert [unknown for unknown, _ in included] == sorted(unknown for unknown, _ in included)


def test_builds_with_no_value_stay_last_in_either_direction(index) -> None:
    """Sorting by the measured speed, highest first, opens on the measured builds, not on pages of -."""
    ranking = compute_ranking(index, Scenario("dgx-spark", 2, AGENTIC))
    for reverse in (False, True):
        order = sorted(ranking.positions("measured", reverse).items(), key=lambda kv: kv[1])
        included = [ranking.by_id[b] for b, _ in order if not ranking.by_id[b].excluded]
        measured = [r.plan.decode_measured.value for r in included if r.plan.decode_measured]
        assert measured and [r.plan.decode_measured is None for r in included] == \
            [False] * len(measured) + [True] * (len(included) - len(measured))
        assert measured == sorted(measured, reverse=reverse)


def test_toggle_keeps_assumptions_set_for_each_workload(index) -> None:
    edited = AGENTIC.changed(context_tokens=50_000)
    scenario = Scenario("dgx-spark", 2, CHAT)
    assert scenario.toggled({"agentic": edited}).workload == edited
    assert scenario.toggled({}).workload == AGENTIC


def test_sweep_covers_one_to_four_nodes(index) -> None:
    plans = sweep(index, "deepseek-v4.1-flash", Scenario("dgx-spark", 2, AGENTIC))
    assert [p.plan.cluster.nodes for p in plans] == [1, 2, 3, 4]
    assert [p.plan.fits for p in plans] == [False, False, False, True]


def test_sweep_takes_plans_already_ranked_and_they_read_the_same(index) -> None:
    scenario, cache = Scenario("dgx-spark", 2, AGENTIC), RankingCache(index)
    three = cache.get(Scenario("dgx-spark", 3, AGENTIC))
    plans = sweep(index, "deepseek-v4.1-flash", scenario, cache)
    assert plans[2].plan is three.by_id["deepseek-v4.1-flash"].plan
    assert [p.plan for p in plans] == [p.plan for p in sweep(index, "deepseek-v4.1-flash", scenario)]


def test_filter_matches_model_id_and_repo(index) -> None:
    ranking = compute_ranking(index, Scenario("dgx-spark", 2, AGENTIC))
    plan = ranking.by_id["glm-5.3-flash-nvfp4-redhat"].plan
    assert matches(plan, "glm") and matches(plan, "REDHAT") and matches(plan, "")
    assert not matches(plan, "qwen")


def test_a_bound_sorts_with_the_unknowns_not_as_the_fastest(index) -> None:
    """Qwen3.8-Flash-Next on four Sparks decodes at most 36 tok/s (a per-token table left out): sorted by tok/s it is
    no faster than anything, and by turn (at least 18 s) no quicker."""
    ranking = compute_ranking(index, Scenario("dgx-spark", 4, AGENTIC))
    bound = ranking.by_id["qwen3.8-flash-next-nvfp4"]
    assert bound.plan.decode_bound
    for column in ("expected", "turn"):
        assert sort_value(bound, column)[0] == 1, column  # with the unknowns, last in either direction
