"""Bulk work that builds many objects which all survive: without the cyclic garbage collector.

Evaluating every build makes about eight records a build, and every one of them is kept (the
ranking holds them). CPython's collector starts a pass every 700 new container objects and,
as survivors pile up, full passes over everything alive: at 10,000 builds those passes cost
about as much as the arithmetic. The records form no reference cycles, so reference counting
frees whatever is dropped; the collector is paused for the bulk.

When it resumes, what the block made is frozen (`gc.freeze()`: one list splice, no pass): no
later pass walks it. Without that, the young passes would walk it first, and once it had joined
the oldest generation every full pass (CPython starts one when a quarter as many objects as that
generation holds have joined it since the last) walked it again: in the terminal app at 5,000
builds, ~0.6 M records, 0.6-1.0 s of CPU on the UI thread, on whichever key allocated enough
(the export dialog, about every other time). Frozen objects are still freed by reference counting
when dropped, so a ranking the app lets go of is freed as before.

The catch: `gc.freeze()` freezes everything tracked, not only the block's records, so a cycle that
is alive then (a dialog's widgets) or was dropped and not yet collected is kept until the frozen
objects are walked. So once the frozen objects are both THAW_RATIO times what was frozen after the
last such walk and THAW_AFTER more, they are unfrozen, one full pass frees the cycles among them,
and what is left is frozen again: the cyclic garbage kept stays below what is alive or THAW_AFTER
objects, whichever is more, and each walk comes after at least as many objects were frozen as it
walks. (A one-shot `rank` of 10,000 builds freezes ~80,000 records: no pass at all.)
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

THAW_RATIO = 2
"""A full pass over the frozen objects once they are this many times what was frozen after the last..."""
THAW_AFTER = 250_000
"""... and this many more (the records of ~30,000 ranked builds)."""

_frozen = 0
"""Objects frozen here, counted as each hand-over freezes them: at least what is frozen (reference
counting frees frozen objects without telling). Counting the frozen list itself walks all of it,
~60 ms at a few hundred thousand objects spread over a big heap: done only when this says a pass
may be due."""
_frozen_after_pass = 0
"""Objects frozen after the last full pass here, or at the first hand-over (0 before it)."""


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block, if it was running, and freeze what is
    alive when it resumes (threads may nest this: the collector resumes when the one that paused
    it leaves, at the latest)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            _hand_over()
            gc.enable()


def _hand_over() -> None:
    """Freeze what is tracked; unfreeze, collect and freeze again once enough more is frozen."""
    global _frozen, _frozen_after_pass
    _frozen += len(gc.get_objects())  # every generation a pass walks: what the freeze adds
    gc.freeze()
    if not _frozen_after_pass:
        _frozen_after_pass = _frozen  # the first: the program's own objects and what it read
        return
    due = max(THAW_RATIO * _frozen_after_pass, _frozen_after_pass + THAW_AFTER)
    if _frozen > due:
        _frozen = gc.get_freeze_count()  # less what reference counting freed meanwhile
        if _frozen > due:
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            _frozen = _frozen_after_pass = gc.get_freeze_count()
