"""The CLI's text: the ranked table and the step-by-step explanation (Rich only on a terminal)."""

from __future__ import annotations

import sys

from sparkadvisor.core.advisor import show_steps
from sparkadvisor.core.caveats import by_severity
from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.ranking import Ranked
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.table import (
    ABOVE_RANGE,
    BELOW_RANGE,
    COLUMNS,
    header,
    measured_cell,
    row_cells,
    settings_line,
    workload_line,
)
from sparkadvisor.core.workload import DEFAULT_SETTINGS, Settings, Workload
from sparkadvisor.listing import Listing

SEVERITY_STYLE = {"critical": "bold red", "warning": "dark_orange", "info": "dim"}
"""Caveat severities as the CLI colours them (only on a terminal: Rich drops styles in a pipe)."""

BASIS_STYLE = {"stated": "cyan", "derived": "green", "measured": "bold green", "estimated": "yellow",
               "assumed": "magenta", "unknown": "red"}


RANGE_NOTE = ("tok/s (low-high): an 80% range, sized from the speed model's errors on measurements left out of "
              "its fit (`show` gives each range's basis).")


SHRINKS = {1: 16, 2: 14, 3: 5}
"""On a narrow terminal, model, build and flags give way first (names end in an ellipsis, the flags keep their
glyphs and drop the badge), as in the TUI."""


def ranking_listing(ranked: tuple[Ranked, ...], cluster: Cluster, workload: Workload,
                    notes: tuple[str, ...] = (), settings: Settings = DEFAULT_SETTINGS) -> Listing:
    """The ranked table: the TUI's columns, then each build's id and the reason for its place;
    builds that are excluded come last, dimmed on a terminal."""
    columns = (*(c.label for c in COLUMNS), "id", "why")
    keys = [c.key for c in COLUMNS]
    rows, styles = [], []
    for item in ranked:
        cells = row_cells(item)
        rows.append((*(cells[k] for k in keys), item.plan.build.id, item.reason))
        styles.append(_row_styles(item, keys))
    measured_pool = any(r.plan.kv_pool_measured for r in ranked)
    ranged = any(r.plan.decode is not None for r in ranked)
    reasons = tuple(f"  {f'{r.rank}.' if r.rank else '-'} {r.plan.build.id}: {r.reason}" for r in ranked)
    notes = (RANGE_NOTE,) * ranged + ("* KV pool measured by a recipe.",) * measured_pool + notes
    return Listing(columns, tuple(rows), frozenset(i for i, c in enumerate(COLUMNS) if c.numeric),
                   title=header(cluster, workload, settings), notes=notes,
                   styles=tuple(styles), shrinks=SHRINKS, narrow_notes=("Reasons:", *reasons),
                   first_word=frozenset(i for i, c in enumerate(COLUMNS) if c.key == "flags"))


def _row_styles(item: Ranked, keys: list[str]) -> tuple[str, ...]:
    worst = by_severity(item.plan.caveats)[0].severity if item.plan.caveats else None
    base = "dim" if item.excluded else ""
    coloured = {"flags": SEVERITY_STYLE[worst] if worst else "", "caveats": SEVERITY_STYLE[worst] if worst else "",
                "measured": "yellow" if measured_cell(item.plan)[-1:] in (ABOVE_RANGE, BELOW_RANGE) else ""}
    return (*(" ".join(filter(None, (base, coloured.get(k, "")))) for k in keys), base, base)


def show_lines(item: Ranked, cluster: Cluster, workload: Workload, index: CatalogIndex,
               named: str | None = None, settings: Settings = DEFAULT_SETTINGS) -> list[tuple[tuple[str, str], ...]]:
    """Which recipe the plan follows (`named`: the one --recipe names) and the arithmetic step by step,
    each line marked with how its figure is known: lines of (text, Rich style) pieces."""
    plan = item.plan
    place = f"rank {item.rank}" if item.rank else "excluded"
    lines: list[tuple[tuple[str, str], ...]] = [
        ((plan.model.name, "bold"), (f" · {plan.build.repo} · {place}: {item.reason}", "")),
        ((header(cluster, workload, settings), "dim"),)]
    for step in show_steps(item, index.facts.get(plan.build.id), named):
        title_style = SEVERITY_STYLE[step.severity] if step.severity else "bold"
        lines.append(((step.title, title_style), (" ", ""), (f"[{step.basis}]", BASIS_STYLE[step.basis]),
                      (f" {step.text}", "")))
    sources = _sources(item, index)
    if sources:
        lines.append((("sources", "bold"),))
        lines += [((f"  {ref}: {text}", ""),) for ref, text in sources]
    return lines


def print_show(item: Ranked, cluster: Cluster, workload: Workload, index: CatalogIndex,
               named: str | None = None, settings: Settings = DEFAULT_SETTINGS) -> None:
    """`show` as text: on a terminal styled and wrapped to its width; in a pipe or a file one
    line per step, URLs whole."""
    lines = show_lines(item, cluster, workload, index, named, settings)
    if not sys.stdout.isatty():
        sys.stdout.write("".join("".join(safe_text(text) for text, _ in line) + "\n" for line in lines))
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False)
    for line in lines:
        console.print(Text.assemble(*((safe_text(text), style) for text, style in line)))


def show_listing(item: Ranked, index: CatalogIndex, named: str | None = None,
                 settings: Settings = DEFAULT_SETTINGS) -> Listing:
    """`show --format tsv|md`: the workload and the settings in force, then one row per step (its title,
    basis and text), then one per source."""
    scenario = f"{workload_line(item.plan.workload)}{settings_line(settings)}"
    rows: list[tuple[str, str, str]] = [("workload", "assumed", scenario)]
    rows += [(step.title, step.basis, step.text)
             for step in show_steps(item, index.facts.get(item.plan.build.id), named)]
    rows += [(ref, "source", text) for ref, text in _sources(item, index)]
    return Listing(("item", "basis", "text"), tuple(rows),
                   title=f"{item.plan.model.name} · {item.plan.build.repo} · {item.reason}")


def _sources(item: Ranked, index: CatalogIndex) -> list[tuple[str, str]]:
    lines = []
    for ref in item.plan.source_ids(item.score):
        source = index.catalog.sources.get(ref)
        if source:
            lines.append((ref, source.title + (f" <{source.url}>" if source.url else "")))
    return lines
