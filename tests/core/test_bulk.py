"""core.bulk: the collector is paused for bulk work, and what the work made is not left young."""

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


def test_what_the_block_made_joins_the_oldest_generation_without_a_pass():
    with collector_paused():
        made = [Made() for _ in range(5_000)]
    assert gc.get_count()[0] < 700  # no young pass is due on the next allocation
    assert gc.get_freeze_count() == 0  # nothing is kept out of collection for good
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(o) in oldest for o in made)


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


def test_a_cycle_dropped_during_the_block_is_collected_once_enough_was_handed_over(monkeypatch):
    import weakref

    from sparkadvisor.core import bulk

    monkeypatch.setattr(bulk, "FULL_PASS_AFTER", 10_000)
    monkeypatch.setattr(bulk, "_oldest_after_pass", 1_000)  # x FULL_PASS_RATIO = 4,000 < 10,000
    monkeypatch.setattr(bulk, "_handed_over", 0)
    with collector_paused():
        dropped = Cycle()
        gone = weakref.ref(dropped)
        del dropped
        kept = [Made() for _ in range(2_000)]
    assert gone() is not None  # in the oldest generation: no full pass yet
    with collector_paused():
        kept += [Made() for _ in range(9_000)]  # more than FULL_PASS_AFTER handed over in all
    assert gone() is None
    assert bulk._handed_over == 0 and bulk._oldest_after_pass > len(kept)  # the new size, for the next pass
