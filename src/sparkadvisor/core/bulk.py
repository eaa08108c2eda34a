"""Bulk work that builds many objects which all survive: without the cyclic garbage collector.

Evaluating every build makes about eight records a build, and every one of them is kept (the
ranking holds them). CPython's collector starts a pass every 700 new container objects and,
as survivors pile up, full passes over everything alive: at 10,000 builds those passes cost
about as much as the arithmetic. The records form no reference cycles, so reference counting
frees whatever is dropped; the collector is paused for the bulk.

When it resumes, everything made meanwhile would still be young: the next pass (on whichever
thread allocates next, in the TUI the UI thread) would walk all of it, then the middle
generation's pass again, and later full passes. So what the block made joins the oldest
generation in one step (`gc.freeze()` then `gc.unfreeze()`: two list splices, no pass). A cycle
another thread dropped meanwhile goes there too, where only a full pass collects it; so once
the objects handed over since the last full pass reach four times what the oldest generation
held after it (and at least FULL_PASS_AFTER), one full pass runs. Each object handed over then
costs a quarter of a walk, where the young passes walked it twice; the cycles others dropped
are freed within a bounded amount of work.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

FULL_PASS_AFTER = 1_000_000
"""Fewest objects handed to the oldest generation between two full passes (about 125,000 ranked builds)."""
FULL_PASS_RATIO = 4
"""A full pass once the objects handed over reach this many times the oldest generation after the last."""

_handed_over = 0
"""Container objects handed to the oldest generation since the last full pass run here."""
_oldest_after_pass = 0
"""Objects the oldest generation held after that pass (0 before the first)."""


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block, if it was running, and hand what the block
    made to the oldest generation (threads may nest this: the collector resumes when the one that
    paused it leaves, at the latest)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            _hand_over()
            gc.enable()


def _hand_over() -> None:
    """Move the young generations into the oldest without a pass; run a full pass when enough came."""
    global _handed_over, _oldest_after_pass
    _handed_over += gc.get_count()[0]  # container objects made (net) since the last young pass
    gc.freeze()
    gc.unfreeze()
    if _handed_over > max(FULL_PASS_RATIO * _oldest_after_pass, FULL_PASS_AFTER):
        gc.collect()
        _oldest_after_pass = len(gc.get_objects(generation=2))
        _handed_over = 0
