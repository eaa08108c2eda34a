"""The rows the candidates table shows: every build in order, or one row per model.

Grouped by model, a model's row stands for its best build in the current order (the
first one met), and an expanded model lists its other builds under it. Pure: build ids
in, rows out, so a re-rank or a filter is a new list, never a rebuilt widget.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

RowKind = Literal["build", "model", "member"]


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the table."""

    build_id: str
    kind: RowKind = "build"
    """"build" (ungrouped), "model" (a group's best build), or "member" (another build of an expanded model)."""
    builds: int = 1
    """For a model row: how many of its builds are shown."""
    expanded: bool = False
    last: bool = False
    """For a member row: the last of its model."""


def table_rows(order: Sequence[str], model_of: Mapping[str, str], grouped: bool = False,
               expanded: frozenset[str] | set[str] = frozenset(), made: dict[str, Row] | None = None) -> list[Row]:
    """Rows for build ids in `order`; grouped, one per model (in the order of its best build)
    followed by its other builds when the model is in `expanded`.

    `made`: plain build rows from earlier calls, reused and added to (a frozen `Row` takes ~2 us
    to make, so 5,000 of them were a tenth of a workload toggle; a row is the same in any order)."""
    if not grouped:
        if made is None:
            return [Row(build_id) for build_id in order]
        return [made.get(build_id) or made.setdefault(build_id, Row(build_id)) for build_id in order]
    groups: dict[str, list[str]] = {}
    for build_id in order:
        groups.setdefault(model_of[build_id], []).append(build_id)
    rows: list[Row] = []
    for model_id, builds in groups.items():
        opened = model_id in expanded and len(builds) > 1
        rows.append(Row(builds[0], "model", len(builds), opened))
        if opened:
            rows += [Row(b, "member", last=i == len(builds) - 2) for i, b in enumerate(builds[1:])]
    return rows
