"""Bulk work that builds many objects which all survive: without the cyclic garbage collector.

Evaluating every build makes about eight records a build, and every one of them is kept (the
ranking holds them). CPython's collector starts a pass every 700 new container objects and,
as survivors pile up, full passes over everything alive: at 10,000 builds those passes cost
about as much as the arithmetic. The records form no reference cycles, so reference counting
frees whatever is dropped; the collector is paused for the bulk.

When it resumes, everything made meanwhile would still be young: the next pass (on whichever
thread allocates next, in the TUI the UI thread) would walk all of it, then the middle
generation's pass again, and the full pass that their number triggers after that. So the
survivors join the oldest generation in one step (`gc.freeze()` then `gc.unfreeze()`: two list
splices, no pass). A cycle some other thread left meanwhile is collected by the next full pass
instead of a young one; nothing is kept for good.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


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
            gc.freeze()
            gc.unfreeze()
            gc.enable()
