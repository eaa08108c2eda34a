"""`sparkadvisor compare A B [C]`: two or three builds side by side, the TUI's compare screen as text."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from sparkadvisor.commands.common import UsageError, add_scenario_options, find_build_id, load, print_json, scenario

if TYPE_CHECKING:
    from sparkadvisor.core.index import CatalogIndex
    from sparkadvisor.core.ranking import Ranked
    from sparkadvisor.listing import Listing

MAX_BUILDS = 3
"""As many as the TUI's compare screen takes."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("builds", nargs="+", metavar="BUILD",
                        help="two or three build ids, repo names or close spellings of them")
    add_scenario_options(parser, output="format")


def run(args: argparse.Namespace) -> int:
    from sparkadvisor.core.advisor import advise, settings_dict, workload_dict

    if not 2 <= len(args.builds) <= MAX_BUILDS:
        raise UsageError(f"compare takes two or three builds; {len(args.builds)} given")
    index = load(args)
    ids = list(dict.fromkeys(find_build_id(index, typed) for typed in args.builds))
    if len(ids) < 2:
        typed = list(dict.fromkeys(args.builds))
        given = (f"{typed[0]} is given {len(args.builds)} times" if len(typed) == 1 else
                 f"{' and '.join(typed)} both name {ids[0]}" if len(typed) == 2 else
                 f"{', '.join(typed)} all name {ids[0]}")
        raise UsageError(f"{given}; compare needs two different builds")
    cluster, workload, settings = scenario(args, index)
    by_id = {r.plan.build.id: r for r in advise(index, cluster, workload, settings)}
    chosen = [by_id[i] for i in ids]
    if args.format == "json":
        print_json({"hardware": cluster.hardware.id, "nodes": cluster.nodes, "workload": workload_dict(workload),
                    "settings": settings_dict(settings),
                    "builds": [_build_json(r) for r in chosen], "rows": _rows_json(chosen)})
        return 0
    from sparkadvisor.core.table import header
    from sparkadvisor.listing import print_listing

    print_listing(compare_listing(chosen, index, header(cluster, workload, settings)), args.format)
    return 0


def compare_listing(chosen: list[Ranked], index: CatalogIndex, title: str) -> Listing:
    """One line per figure (the TUI's COMPARE_ROWS), one column per build; below, why each
    ranks where it does, and its caveats with their sources."""
    from sparkadvisor.core.table import COMPARE_ROWS, compare_cells
    from sparkadvisor.listing import Listing

    cells = [compare_cells(r) for r in chosen]
    rows = tuple((label, *(c[key] for c in cells)) for key, label in COMPARE_ROWS if key != "reason")
    why = tuple(f"why {r.plan.build.id}: {r.reason}" for r in chosen)
    columns = ("", *(r.plan.build.id for r in chosen))
    return Listing(columns, rows, title=title, keep=len(columns), wrap=True,
                   notes=("", *why, *(line for r in chosen for line in caveat_lines(r, index))))


def caveat_lines(item: Ranked, index: CatalogIndex) -> list[str]:
    """"build: caveats", then one line per caveat, most severe first, with its sources."""
    from sparkadvisor.core.caveats import badge, by_severity

    caveats = by_severity(item.plan.caveats)
    from sparkadvisor.core.units import plural

    lines = ["", f"{item.plan.build.id}: {plural(len(caveats), 'caveat') if caveats else 'no caveats known'}"]
    for caveat in caveats:
        lines.append(f"  {badge(caveat)} ({caveat.severity}): {caveat.explanation} [{_sources(caveat, index)}]")
    return lines


def _sources(caveat: Any, index: CatalogIndex) -> str:
    from sparkadvisor.core.advisor import source_ids

    parts = []
    for ref in source_ids(caveat.source):
        source = index.catalog.sources.get(ref)
        parts.append(f"{ref}: {source.url}" if source is not None and source.url else ref)
    return "; ".join(parts)


def _build_json(item: Ranked) -> dict[str, Any]:
    """The candidate, and its cold first token beside the cached one (null with them where it does not fit)."""
    from sparkadvisor.core.advisor import LOADED_ONLY, candidate_figures, if_it_fit

    plan = item.plan
    cold = {"cold_ttft_s": None if plan.cold_ttft_s is None else round(plan.cold_ttft_s, 1)}
    return if_it_fit(cold | candidate_figures(item), plan.runs, ("cold_ttft_s", *LOADED_ONLY))


def _rows_json(chosen: list[Ranked]) -> list[dict[str, Any]]:
    from sparkadvisor.core.table import COMPARE_ROWS, compare_cells

    cells = [compare_cells(r) for r in chosen]
    return [{"key": key, "label": label, "cells": [c[key] for c in cells]} for key, label in COMPARE_ROWS]
