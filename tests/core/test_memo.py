"""core.memo: inside a ranking a figure is worked out once per key, outside it every time, and a
ranking's plans are the very plans each build gets on its own."""

import threading

import pytest

from sparkadvisor.core.advisor import advise, evaluate_build
from sparkadvisor.core.memo import once, per_ranking
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.workload import AGENTIC, CHAT, Settings


def test_a_figure_is_worked_out_once_per_key_inside_a_ranking_and_every_time_outside():
    calls = []

    def double(x):
        calls.append(x)
        return 2 * x

    assert [once(("double", 1), double, 1) for _ in range(2)] == [2, 2]
    assert len(calls) == 2
    with per_ranking():
        assert [once(("double", 1), double, 1), once(("double", 1), double, 1), once(("double", 2), double, 2)] \
            == [2, 2, 4]
        with per_ranking():  # a nested block shares the outer one's figures
            once(("double", 1), double, 1)
    assert calls == [1, 1, 1, 2]
    with per_ranking():  # the next ranking starts afresh
        once(("double", 1), double, 1)
    assert calls == [1, 1, 1, 2, 1]


def test_each_thread_keeps_its_own_figures():
    seen = []
    with per_ranking():
        once("key", lambda: "main thread")
        worker = threading.Thread(target=lambda: seen.append(once("key", lambda: "worker")))
        worker.start()
        worker.join()
    assert seen == ["worker"]


@pytest.mark.parametrize(("nodes", "workload", "settings"), [
    (2, AGENTIC, Settings()),
    (1, CHAT.changed(streams=4), Settings(kv_cache_dtype="fp8")),
    (4, AGENTIC.changed(context_tokens=32_000), Settings(enforce_eager=True)),
])
def test_a_ranking_gives_each_build_the_plan_it_gets_alone(index, nodes, workload, settings):
    cluster = Cluster(index.hardware["dgx-spark"], nodes)
    ranked = advise(index, cluster, workload, settings)
    assert len(ranked) == len(index.catalog.builds)
    for item in ranked:
        assert item.plan == evaluate_build(index, item.plan.build, cluster, workload, settings)
