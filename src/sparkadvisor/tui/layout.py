"""Which columns the candidates table shows at a given width, and how wide each is.

Columns come in `core.table.COLUMNS` order, which is also their priority: rank, model and
build always show (and stay put on horizontal scroll), then flags, fit, speed and first
token, then the rest. A column shows whole or not at all: a number is never cut, a name
ends in an ellipsis, and the flags cell drops its badge before its glyphs. The wide view
shows every column at its natural width and scrolls sideways.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparkadvisor.core.table import COLUMNS

FIXED = ("rank", "model", "build")
"""Columns that never scroll away."""
REASON = "reason"
"""The TUI's last column: why a build is ranked where it is."""
ORDER = tuple(c.key for c in COLUMNS) + (REASON,)
LABELS = {c.key: c.label for c in COLUMNS} | {REASON: "why"}
NUMERIC = frozenset(c.key for c in COLUMNS if c.numeric)
SHRINKS_TO = {"model": 11, "build": 11, "flags": 5, "caveats": 12, REASON: 20}
"""Text columns may be narrower than their longest cell (names end in an ellipsis; flags keep their glyphs)."""
WIDE_CAPS = {"model": 30, "build": 26, REASON: 80}
"""Even the wide view stops growing these."""
DECISION = ("flags", "fit", "expected", "ttft", "turn")
"""The first columns after the fixed ones: what decides."""
STEPS: tuple[tuple[str, tuple[str, ...] | dict[str, int | None]], ...] = (
    ("add", DECISION),
    ("grow", {"model": 16, "build": 14, "flags": None}),
    ("add", ("kv_pool", "ceiling", "measured", "size", "per_node", REASON)),
    ("grow", {"model": None, "build": None, REASON: None}),
)
"""How a width is filled: columns added at their smallest while they fit (in order, stopping
at the first that does not), and columns widened (to a width, or None: their natural width)."""
GUTTER = 1
"""One cell before the first column: the compare mark ●, else a model's ▸/▾ when grouped."""
GAP = 1


@dataclass(frozen=True, slots=True)
class Placed:
    """A column on screen."""

    key: str
    width: int


@dataclass(frozen=True, slots=True)
class Layout:
    """The columns that stay put, the ones that scroll, and the cells it all takes."""

    fixed: tuple[Placed, ...]
    scrolled: tuple[Placed, ...]

    @property
    def fixed_width(self) -> int:
        return GUTTER + sum(p.width + GAP for p in self.fixed)

    @property
    def scrolled_width(self) -> int:
        return sum(p.width + GAP for p in self.scrolled)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(p.key for p in self.fixed + self.scrolled)


def natural_widths(widest: dict[str, int]) -> dict[str, int]:
    """Each column's natural width: its longest cell or its label, whichever is wider."""
    return {key: max(widest.get(key, 0), len(LABELS[key])) for key in ORDER}


def _smallest(key: str, natural: int) -> int:
    return min(natural, max(SHRINKS_TO.get(key, natural), len(LABELS[key]) + 1))


def place(natural: dict[str, int], width: int, sort_key: str | None = None, wide: bool = False) -> Layout:
    """The layout for `width` cells: every column in the wide view, else the most important
    columns that fit (the sorted column among them), widened with what is left."""
    if sort_key in natural:  # room for the ▲ after the label
        natural = natural | {sort_key: max(natural[sort_key], len(LABELS[sort_key]) + 1)}
    if wide:
        sized = {k: min(natural[k], WIDE_CAPS.get(k, natural[k])) for k in ORDER}
        if GUTTER + sum(sized[k] + GAP for k in FIXED) > width // 2:  # leave the scrolled columns room
            sized |= {p.key: p.width for p in place(natural, width, sort_key).fixed}
        return _layout(sized, ORDER)
    chosen = {k: _smallest(k, natural[k]) for k in FIXED}
    room = width - GUTTER - sum(w + GAP for w in chosen.values())
    for step, keys in _steps(sort_key):
        if step == "add":
            room = _add(chosen, natural, keys, room)
        else:
            room = _grow(chosen, natural, keys, room)  # type: ignore[arg-type]
    return _layout(chosen, [k for k in ORDER if k in chosen])


def _steps(sort_key: str | None) -> list[tuple[str, tuple[str, ...] | dict[str, int | None]]]:
    """STEPS, with the sorted column added first."""
    if sort_key is None or sort_key in FIXED:
        return list(STEPS)
    return [("add", (sort_key,)), *STEPS]


def _add(chosen: dict[str, int], natural: dict[str, int], keys: object, room: int) -> int:
    for key in keys:  # type: ignore[attr-defined]
        if key in chosen:
            continue
        need = _smallest(key, natural[key]) + GAP
        if need > room:
            break
        chosen[key] = need - GAP
        room -= need
    return room


def _grow(chosen: dict[str, int], natural: dict[str, int], caps: dict[str, int | None], room: int) -> int:
    for key, up_to in caps.items():
        if key in chosen and room > 0:
            extra = max(min(room, min(natural[key], up_to or natural[key]) - chosen[key]), 0)
            chosen[key] += extra
            room -= extra
    return room


def _layout(widths: dict[str, int], keys: tuple[str, ...] | list[str]) -> Layout:
    fixed = tuple(Placed(k, widths[k]) for k in keys if k in FIXED)
    scrolled = tuple(Placed(k, widths[k]) for k in keys if k not in FIXED)
    return Layout(fixed, scrolled)
