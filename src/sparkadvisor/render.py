"""Rich text for the CLI: the ranked table and the step-by-step explanation."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from sparkadvisor.core.caveats import badge, by_severity
from sparkadvisor.core.explain import explain
from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.ranking import Ranked
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.table import COLUMNS, header, row_cells
from sparkadvisor.core.workload import Workload

SEVERITY_STYLE = {"critical": "bold red", "warning": "dark_orange", "info": "dim"}
"""Caveat severities as the CLI colours them (only on a terminal: Rich drops styles in a pipe)."""

BASIS_STYLE = {"stated": "cyan", "derived": "green", "measured": "bold green", "estimated": "yellow",
               "assumed": "magenta", "unknown": "red"}


def print_ranking(ranked: tuple[Ranked, ...], cluster: Cluster, workload: Workload) -> None:
    """The ranked table, excluded builds dimmed below with their reason."""
    console = Console()
    table = Table(title=escape(safe_text(header(cluster, workload))), title_justify="left")
    for column in COLUMNS:
        table.add_column(column.label, justify="right" if column.numeric else "left", overflow="fold")
    for item in ranked:
        cells = {**{k: Text(safe_text(v)) for k, v in row_cells(item).items()}, "caveats": caveat_badges(item)}
        table.add_row(*(cells[c.key] for c in COLUMNS), style="dim" if item.excluded else None)
    console.print(table)
    console.print("* measured pool. Reasons:")
    for item in ranked:
        place = f"{item.rank}." if item.rank else "-"
        console.print(Text(safe_text(f"  {place} {item.plan.build.id}: {item.reason}"),
                           style="dim" if item.excluded else ""),
                      highlight=False)


def caveat_badges(item: Ranked) -> Text:
    """The caveats column: one badge per kind, coloured by its severity, most serious first."""
    text, seen = Text(), set[str]()
    for caveat in by_severity(item.plan.caveats):
        if caveat.kind not in seen:
            text.append((" " if seen else "") + badge(caveat), SEVERITY_STYLE[caveat.severity])
            seen.add(caveat.kind)
    return text


def print_show(item: Ranked, cluster: Cluster, workload: Workload, index: CatalogIndex) -> None:
    """The arithmetic step by step, each line marked with how its figure is known."""
    console = Console()
    plan = item.plan
    place = f"rank {item.rank}" if item.rank else "excluded"
    console.print(Text.assemble((safe_text(plan.model.name), "bold"),
                                safe_text(f" · {plan.build.repo} · {place}: {item.reason}")),
                  highlight=False)
    console.print(Text(safe_text(header(cluster, workload)), style="dim"), highlight=False)
    for step in explain(plan):
        title_style = SEVERITY_STYLE[step.severity] if step.severity else "bold"
        console.print(Text.assemble((safe_text(step.title), title_style), " ",
                                    (f"[{step.basis}]", BASIS_STYLE[step.basis]), safe_text(f" {step.text}")),
                      highlight=False)
    sources = _sources(item, index)
    if sources:
        console.print(Text("sources", style="bold"))
        for line in sources:
            console.print(Text(safe_text(f"  {line}")), highlight=False)


def _sources(item: Ranked, index: CatalogIndex) -> list[str]:
    lines = []
    for ref in item.plan.source_ids(item.score):
        source = index.catalog.sources.get(ref)
        if source:
            lines.append(f"{ref}: {source.title}" + (f" <{source.url}>" if source.url else ""))
    return lines
