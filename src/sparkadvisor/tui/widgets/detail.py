"""The highlighted build in full: caveats with their sources, memory bar, the build on 1-4
nodes, measured against predicted, the arithmetic step by step, and the recipes that run it.

The same sections make the detail pane under the table and the full-screen build (Enter).
"""

from __future__ import annotations

from functools import partial

from textual.content import Content

from sparkadvisor.core.catalog import source_ids
from sparkadvisor.core.explain import explain
from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.ranking import Ranked
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.schema import Caveat, Recipe
from sparkadvisor.core.table import ABOVE_RANGE, BADGES, BELOW_RANGE, SEVERITY_GLYPHS, row_cells
from sparkadvisor.core.units import plural
from sparkadvisor.tui.widgets.document import Document, Section
from sparkadvisor.tui.widgets.memory_bar import bar_content
from sparkadvisor.tui.widgets.sweep import sweep_content

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
    if plan.no_engine is not None:
        return Content("\n").join([heading("Measured against predicted"), Content(
            f"decode tok/s: none here, no engine serves it: {plan.no_engine} (the arithmetic below says what it "
            "would be if one did)")])
    if not plan.fits:  # as the table's -: a build that cannot load has no speed here
        return Content("\n").join([heading("Measured against predicted"), Content(
            f"decode tok/s: none here, it does not fit on {plural(plan.cluster.nodes, 'node')} (the arithmetic "
            "below says what it would be if it did)")])
    d = plan.decode
    expected = (f"{d.expected_tok_s:.0f}, 80% range {d.low_tok_s:.0f}-{d.high_tok_s:.0f}"
                if d is not None and not d.bound else cells["expected"])
    parts = [heading("Measured against predicted"), Content(
        f"decode tok/s: ceiling {cells['ceiling']} · expected {expected} · measured {cells['measured']}")]
    side, against, m = plan.measured_side, plan.measured_against, plan.decode_measured
    if side in ("above", "below") and against is not None and m is not None:
        mark = ABOVE_RANGE if side == "above" else BELOW_RANGE
        at = f"{m.context_tokens:,} tokens" if m.context_tokens else "its own context"
        parts.append(Content.assemble((f"{mark} measured {side} the range {against[1]:.0f}-{against[2]:.0f} predicted "
                                       f"at its own conditions ({at})", "bold $warning"),
                                      ": the speed model misses this build; trust the measurement."))
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
    """One caveat: glyph, badge, severity, explanation, sources."""
    style = SEVERITY_STYLE[caveat.severity]
    return Content.assemble((SEVERITY_GLYPHS[caveat.severity], style), " ", (BADGES[caveat.kind], "bold"), " ",
                            (f"({caveat.severity})", style), safe_text(f" {caveat.explanation}"),
                            ("\n  source: ", "italic"), _sources(index, caveat.source))


def caveats_content(item: Ranked, index: CatalogIndex) -> Content:
    """Every caveat of the build and its recipe, most severe first."""
    caveats = sorted(item.plan.caveats, key=lambda c: list(SEVERITY_GLYPHS).index(c.severity))
    lines = [heading(f"Caveats ({len(caveats)})" if caveats else "Caveats")]
    lines += [caveat_line(c, index) for c in caveats] or [Content("none known")]
    return Content("\n").join(lines)


def recipe_line(recipe: Recipe, in_use: bool, index: CatalogIndex) -> Content:
    """One recipe: title, nodes and parallelism, whether it is a benchmark's test configuration, source."""
    mark = ("● in use ", "bold $success") if in_use else ("○ ", "")
    test = " · benchmark run: measurements only, followed when chosen (r)" if recipe.benchmark else ""
    return Content.assemble(mark, (safe_text(recipe.title), "bold"), safe_text(f" · {plural(recipe.nodes, 'node')} · "
                            f"TP={recipe.tp} PP={recipe.pp} · {recipe.hardware}{test}"), ("\n  source: ", "italic"),
                            _sources(index, recipe.source))


def recipes_content(item: Ranked, index: CatalogIndex) -> Content:
    """The community recipes that run this build."""
    plan = item.plan
    recipes = index.recipes_by_build.get(plan.build.id, ())
    lines = [heading("Recipes")]
    lines += [recipe_line(r, plan.recipe is not None and r.id == plan.recipe.id, index) for r in recipes] or \
        [Content("no community recipe for this build")]
    return Content("\n").join(lines)


def sections(item: Ranked, plans: tuple[Ranked, ...],
             index: CatalogIndex) -> tuple[list[Section], list[Section], list[Section]]:
    """(pictures, words, stacked): title, memory bar, sweep and speeds; caveats, the arithmetic
    and recipes; and in one column, the caveats right after the title."""
    title, caveats = title_content(item), caveats_content(item, index)
    bar = partial(bar_content, item.plan.budget, by_recipe=item.plan.fit_by_recipe, engine=item.plan.constants.engine)
    pictures: list[Section] = [bar, sweep_content(plans, item.plan.cluster.nodes), speed_content(item)]
    words: list[Section] = [steps_content(item), recipes_content(item, index)]
    return [title, *pictures], [caveats, *words], [title, caveats, *pictures, *words]


class DetailPane(Document):
    """Everything the advisor knows about the highlighted build; two columns when wide."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(split_at=130, id=id)

    def show_build(self, item: Ranked | None, sweep: tuple[Ranked, ...], index: CatalogIndex, empty: str = "") -> None:
        """Show `item` and its cluster sweep, or the `empty` message when there is none."""
        if item is None:
            self.show([Content(empty)])
            return
        left, right, stacked = sections(item, sweep, index)
        self.show(left, right, stacked)
