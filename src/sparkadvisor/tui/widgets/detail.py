"""The highlighted build in full: memory bar, the arithmetic step by step, measured against
predicted, caveats with their sources, and the recipes that run it."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Static

from sparkadvisor.core.catalog import source_ids
from sparkadvisor.core.explain import explain
from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.ranking import Ranked
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.schema import Caveat, Recipe
from sparkadvisor.core.table import BADGES, row_cells
from sparkadvisor.tui.widgets.memory_bar import MemoryBar
from sparkadvisor.tui.widgets.sweep import SweepTable

BASIS_STYLE = {"stated": "$secondary", "derived": "$success", "measured": "bold $success",
               "estimated": "$warning", "assumed": "$accent", "unknown": "bold $error"}
"""How each basis is marked; theme variables only."""
SEVERITY_STYLE = {"info": "$secondary", "warning": "$warning", "critical": "bold $error"}


def heading(text: str) -> Content:
    """A section heading."""
    return Content.assemble((text, "bold $primary"))


def title_content(item: Ranked) -> Content:
    """Model, repo, place and the reason for it."""
    plan = item.plan
    place = (f"rank {item.rank}", "bold $success") if item.rank else ("excluded", "bold $error")
    return Content.assemble((safe_text(plan.model.name), "bold"), safe_text(f" · {plan.build.repo} · "), place,
                            safe_text(f": {item.reason}"))


def steps_content(item: Ranked) -> Content:
    """`core.explain` steps, each with its basis."""
    lines = [heading("The arithmetic")]
    for step in explain(item.plan):
        lines.append(Content.assemble((safe_text(step.title), "bold"), " ",
                                      (f"[{step.basis}]", BASIS_STYLE[step.basis]), safe_text(f" {step.text}")))
    return Content("\n").join(lines)


def speed_content(item: Ranked) -> Content:
    """Ceiling, expected and measured decode side by side, with the efficiency."""
    cells, plan = row_cells(item), item.plan
    parts = [heading("Measured against predicted"), Content(
        f"decode tok/s: ceiling {cells['ceiling']} · expected {cells['expected']} · measured {cells['measured']}")]
    if plan.efficiency is not None:
        parts.append(Content.assemble(("measured / ceiling: ", "bold"), f"{plan.efficiency:.0%}"))
    return Content("\n").join(parts)


def _sources(index: CatalogIndex, refs: str | tuple[str, ...]) -> str:
    texts = []
    for ref in source_ids(refs):
        source = index.catalog.sources.get(ref)
        if source is not None:
            texts.append(source.title + (f" <{source.url}>" if source.url else ""))
    return safe_text("; ".join(texts)) or "no source"


def caveat_line(caveat: Caveat, index: CatalogIndex) -> Content:
    """One caveat: badge, severity, explanation, sources."""
    return Content.assemble((BADGES[caveat.kind], "bold"), " ", (f"({caveat.severity})",
                            SEVERITY_STYLE[caveat.severity]), safe_text(f" {caveat.explanation}"),
                            ("\n  source: ", "italic"), _sources(index, caveat.source))


def caveats_content(item: Ranked, index: CatalogIndex) -> Content:
    """Every caveat of the build and its recipe."""
    caveats = item.plan.caveats
    lines = [heading("Caveats")]
    lines += [caveat_line(c, index) for c in caveats] or [Content("none known")]
    return Content("\n").join(lines)


def recipe_line(recipe: Recipe, in_use: bool, index: CatalogIndex) -> Content:
    """One recipe: title, nodes and parallelism, source."""
    mark = ("● in use ", "bold $success") if in_use else ("○ ", "")
    return Content.assemble(mark, (safe_text(recipe.title), "bold"), safe_text(f" · {recipe.nodes} node(s) · "
                            f"TP={recipe.tp} PP={recipe.pp} · {recipe.hardware}"), ("\n  source: ", "italic"),
                            _sources(index, recipe.source))


def recipes_content(item: Ranked, index: CatalogIndex) -> Content:
    """The community recipes that run this build."""
    plan = item.plan
    recipes = index.recipes_by_build.get(plan.build.id, ())
    lines = [heading("Recipes")]
    lines += [recipe_line(r, plan.recipe is not None and r.id == plan.recipe.id, index) for r in recipes] or \
        [Content("no community recipe for this build")]
    return Content("\n").join(lines)


class DetailPane(VerticalScroll):
    """Everything the advisor knows about the highlighted build: the picture (memory bar,
    sweep, speeds) in one column, the words (arithmetic, caveats, recipes) in the other.
    Side by side; the screen's stylesheet stacks them when narrow."""

    DEFAULT_CSS = """
    DetailPane { layout: horizontal; overflow-y: hidden; }
    DetailPane #detail-side { width: 72; height: 100%; padding: 0 1; border-right: vkey $secondary; }
    DetailPane #detail-words { width: 1fr; height: 100%; padding: 0 1; }
    DetailPane Static, DetailPane MemoryBar, DetailPane SweepTable { margin-bottom: 1; }
    DetailPane .heading { text-style: bold; color: $primary; margin-bottom: 0; }
    """

    def compose(self) -> ComposeResult:
        with Vertical(id="detail-side"):
            yield Static(id="detail-title")
            yield MemoryBar(id="memory-bar")
            yield Static("The same build on 1-4 nodes", id="sweep-title", classes="heading")
            yield SweepTable(id="sweep")
            yield Static(id="detail-speed")
        with VerticalScroll(id="detail-words"):
            yield Static(id="detail-steps")
            yield Static(id="detail-caveats")
            yield Static(id="detail-recipes")

    def show(self, item: Ranked | None, sweep: tuple[Ranked, ...], index: CatalogIndex, empty: str = "") -> None:
        """Show `item` and its cluster sweep, or the `empty` message when there is none."""
        for widget in (self.query_one(MemoryBar), self.query_one(SweepTable), self.query_one("#sweep-title")):
            widget.display = item is not None
        if item is None:
            self.query_one("#detail-title", Static).update(empty)
            for name in ("speed", "steps", "caveats", "recipes"):
                self.query_one(f"#detail-{name}", Static).update("")
            return
        self.query_one("#detail-title", Static).update(title_content(item))
        bar = self.query_one(MemoryBar)
        bar.nodes = item.plan.cluster.nodes
        bar.budget = item.plan.budget
        self.query_one(SweepTable).show(sweep, item.plan.cluster.nodes)
        self.query_one("#detail-speed", Static).update(speed_content(item))
        self.query_one("#detail-steps", Static).update(steps_content(item))
        self.query_one("#detail-caveats", Static).update(caveats_content(item, index))
        self.query_one("#detail-recipes", Static).update(recipes_content(item, index))
