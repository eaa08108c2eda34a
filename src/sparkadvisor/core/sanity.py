"""Limits on what a catalog file may hold at all, before the schema reads it.

The schema checks each field; these rules hold for every value in the file, so that no
figure the arithmetic cannot carry (a subnormal number, 1e300, a table nested a thousand
deep, the same id twice) reaches it. Each finding is a location and one sentence.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

MAX_CATALOG_BYTES = 8 * 1024 * 1024
"""Largest catalog file read: the bundled catalog is about 0.2 MB."""
MAX_NESTING = 12
"""Deepest nesting of tables and arrays: a catalog needs six (catalog > builds > build > size > ...)."""
SMALLEST = 1e-9
"""Smallest non-zero magnitude of a catalog number: every field's unit (GB, tok/s, seconds,
billions of parameters, shares) makes anything smaller a typo, and subnormals overflow."""
LARGEST = 1e15
"""Largest magnitude of a catalog number: token counts, GB and tok/s stay far below."""
LISTS_WITH_IDS = ("hardware", "models", "builds", "recipes", "caveats")

Finding = tuple[tuple[Any, ...], str]
"""(location as validation reports it, sentence)."""


def sanity_findings(data: dict[str, Any]) -> list[Finding]:
    """Values nested too deep, numbers out of any sane range, ids used twice in one file."""
    if _plainly_sane(data, 0):  # the usual case, told without building every leaf's location
        return _duplicate_ids(data)
    findings: list[Finding] = []
    for loc, value in _values(data, findings):
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            findings.append((loc, f"{value} is not a number the arithmetic can use; give a finite value"))
        elif value != 0 and not SMALLEST <= abs(value) <= LARGEST:
            findings.append((loc, f"{value:g} is outside any sane range for a catalog figure "
                                  f"(non-zero values lie between {SMALLEST:g} and {LARGEST:g} in size)"))
    return findings + _duplicate_ids(data)


def _plainly_sane(value: Any, depth: int) -> bool:
    """No number out of range and nothing nested deeper than MAX_NESTING: what `sanity_findings`
    looks for, as one yes or no."""
    if not isinstance(value, dict | list):
        return True
    if depth >= MAX_NESTING:
        return False
    for item in value.values() if isinstance(value, dict) else value:
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is float or kind is int:
            if item != 0 and not SMALLEST <= abs(item) <= LARGEST:  # NaN compares false: not sane either
                return False
        elif kind is dict or kind is list:
            if not _plainly_sane(item, depth + 1):
                return False
        elif isinstance(item, int | float | dict | list):
            return False  # a subclass: the full walk decides
    return True


def _values(data: Any, findings: list[Finding]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every leaf with its location; a table or array nested deeper than MAX_NESTING is one finding."""
    stack: list[tuple[tuple[Any, ...], Any]] = [((), data)]
    while stack:
        loc, value = stack.pop()
        children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else None
        if children is None:
            yield loc, value
        elif len(loc) >= MAX_NESTING:
            findings.append((loc, f"tables and arrays are nested more than {MAX_NESTING} deep here; a catalog "
                                  "entry needs a few levels"))
        else:
            stack.extend((loc + (key,), child) for key, child in children)


def _duplicate_ids(data: dict[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for kind in LISTS_WITH_IDS:
        items = data.get(kind)
        if not isinstance(items, list):
            continue
        first: dict[str, int] = {}
        for position, item in enumerate(items):
            item_id = item.get("id") if isinstance(item, dict) else None
            if not isinstance(item_id, str):
                continue
            if item_id in first:
                findings.append(((kind, position, "id"), f"id {item_id!r} is used twice in this file (first at "
                                                         f"{kind}[{first[item_id]}]); ids must be unique"))
            first.setdefault(item_id, position)
    return findings
