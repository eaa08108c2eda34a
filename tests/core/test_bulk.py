"""core.bulk: the collector is paused for bulk work, what it made is frozen, and cycles are still freed."""

from __future__ import annotations

import gc

from sparkadvisor.core.bulk import collector_paused


class Made:
    """A container object the collector tracks."""


def test_the_collector_is_paused_inside_and_running_after():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block did not pause it, so it does not resume it
    assert gc.isenabled()


def test_what_the_block_made_is_frozen_without_a_pass_and_freed_when_dropped():
    import weakref

    before = gc.get_stats()
    with collector_paused():
        made = [Made() for _ in range(5_000)]
    assert gc.get_count()[0] < 700  # no young pass is due on the next allocation
    walked = {id(o) for o in gc.get_objects()}  # every generation a pass walks
    assert not any(id(o) in walked for o in made)
    assert gc.get_freeze_count() >= len(made)
    assert [s["collections"] for s in gc.get_stats()] == [s["collections"] for s in before]
    first = weakref.ref(made[0])
    frozen = gc.get_freeze_count()
    del made
    assert first() is None  # reference counting frees frozen objects
    assert gc.get_freeze_count() <= frozen - 5_000


def test_a_paused_collector_stays_paused():
    gc.disable()
    try:
        with collector_paused():
            made = [Made() for _ in range(100)]
        assert not gc.isenabled()
        young = {id(o) for o in gc.get_objects(generation=0)}
        assert all(id(o) in young for o in made)  # left where they were: the caller owns the collector
    finally:
        gc.enable()


class Cycle:
    """Garbage only the cyclic collector frees."""

    def __init__(self) -> None:
        self.me = self


def test_a_cycle_dropped_during_the_block_is_collected_once_enough_more_was_frozen(monkeypatch):
    import weakref

    from sparkadvisor.core import bulk

    gc.collect()
    with collector_paused():
        pass
    monkeypatch.setattr(bulk, "_frozen_after_pass", gc.get_freeze_count())
    monkeypatch.setattr(bulk, "_frozen", gc.get_freeze_count())
    monkeypatch.setattr(bulk, "THAW_AFTER", 1_000)
    with collector_paused():
        dropped = Cycle()
        gone = weakref.ref(dropped)
        del dropped
        kept = [Made() for _ in range(100)]
    assert gone() is not None  # frozen with the rest: no pass walks it yet
    gc.collect()
    assert gone() is not None
    with collector_paused():
        kept += [Made() for _ in range(bulk._frozen_after_pass + 1)]  # the frozen objects more than double
    assert gone() is None
    assert bulk._frozen_after_pass > len(kept)  # the new base for the next pass
    walked = {id(o) for o in gc.get_objects()}
    assert not any(id(o) in walked for o in kept)  # what is left is frozen again


def test_a_cycle_alive_at_the_hand_over_and_dropped_later_is_collected_too(monkeypatch):
    import weakref

    from sparkadvisor.core import bulk

    with collector_paused():
        pass
    monkeypatch.setattr(bulk, "_frozen_after_pass", gc.get_freeze_count())
    monkeypatch.setattr(bulk, "_frozen", gc.get_freeze_count())
    monkeypatch.setattr(bulk, "THAW_AFTER", 1_000)
    dialog = Cycle()
    gone = weakref.ref(dialog)
    with collector_paused():
        kept = [Made() for _ in range(100)]
    del dialog
    gc.collect()
    assert gone() is not None  # frozen while it was alive
    with collector_paused():
        kept += [Made() for _ in range(bulk._frozen_after_pass + 1)]
    assert gone() is None


def test_no_pass_before_thaw_after_more_objects_are_frozen(monkeypatch):
    import weakref

    from sparkadvisor.core import bulk

    with collector_paused():
        pass
    monkeypatch.setattr(bulk, "_frozen_after_pass", gc.get_freeze_count())
    monkeypatch.setattr(bulk, "_frozen", gc.get_freeze_count())
    monkeypatch.setattr(bulk, "THAW_AFTER", 10 * gc.get_freeze_count())
    before = gc.get_stats()[2]["collections"]
    with collector_paused():
        dropped = Cycle()
        gone = weakref.ref(dropped)
        del dropped
        kept = [Made() for _ in range(bulk._frozen_after_pass + 1)]  # doubled, but not THAW_AFTER more
    assert gone() is not None and kept
    assert gc.get_stats()[2]["collections"] == before


def test_frozen_objects_freed_by_reference_counting_bring_no_pass(monkeypatch):
    from sparkadvisor.core import bulk

    with collector_paused():
        pass
    base = gc.get_freeze_count()
    monkeypatch.setattr(bulk, "_frozen_after_pass", base)
    monkeypatch.setattr(bulk, "_frozen", base)
    monkeypatch.setattr(bulk, "THAW_AFTER", 1_000)
    before = gc.get_stats()[2]["collections"]
    for _ in range(2):  # each time 0.8 x base frozen and freed: counted 2.6 x base in all, never 2 x base at once
        with collector_paused():
            made = [Made() for _ in range(base * 8 // 10)]
        del made
    assert gc.get_stats()[2]["collections"] == before
    assert bulk._frozen < 2 * base  # the count was put right from the frozen list
