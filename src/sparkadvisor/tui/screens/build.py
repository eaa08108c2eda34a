"""One build full-screen (Enter): the arithmetic, the 1-4 node sweep, caveats with their
sources, the recipes (`r` follows the next of them on this cluster), and export. Esc returns to
the table where it was."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.screen import Screen

from sparkadvisor.core.catalog import CatalogIndex
from sparkadvisor.core.index import engine_label
from sparkadvisor.core.ranking import Ranked
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.schema import Recipe
from sparkadvisor.core.table import cluster_line, settings_line, workload_line
from sparkadvisor.tui.model import Ranking
from sparkadvisor.tui.screens.early_keys import EarlyKeys
from sparkadvisor.tui.widgets.detail import sections
from sparkadvisor.tui.widgets.document import Document
from sparkadvisor.tui.widgets.footer import KeyFooter


class BuildScreen(EarlyKeys, Screen[None]):
    """Everything about one build, in two columns when the terminal is wide."""

    CSS_PATH = "build.tcss"
    FIRST_FIELD = "#build-document"
    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back", id="build.back", tooltip="Back to the table"),
        Binding("e", "export", "Export", id="build.export", tooltip="Export this build as a launch recipe"),
        Binding("r", "next_recipe", "Recipe", id="build.recipe",
                tooltip="Follow the build's next recipe on this cluster (the table re-ranks with it)"),
        Binding("question_mark", "help", "Help", key_display="?", id="build.help", tooltip="Keys and legend"),
    ]

    def __init__(self, index: CatalogIndex, item: Ranked, sweep: tuple[Ranked, ...], ranking: Ranking,
                 follow: Follow | None = None):
        super().__init__()
        self.keep_early_keys()
        self.index = index
        self.item = item
        self.sweep = sweep
        self.ranking = ranking
        self.follow = follow
        """Re-ranks with a recipe of this build followed, and gives the build's new view (the main screen's)."""

    def compose(self) -> ComposeResult:
        document = Document(split_at=150, left_width=80, id="build-document")
        document.border_title = Content(safe_text(self._title()))
        document.border_subtitle = self._subtitle()
        yield document
        yield KeyFooter()

    def _subtitle(self) -> Content:
        """The workload and the settings that override the recipes' (the recipe `r` follows among them)."""
        scenario = self.ranking.scenario
        return Content(safe_text(workload_line(scenario.workload) + settings_line(scenario.settings)))

    def _title(self) -> str:
        """The build and its cluster with memory and bandwidth, or only the cluster's size where that line
        would be cut (the memory bar and the arithmetic below give both)."""
        build, cluster = self.item.plan.build.id, self.ranking.cluster
        whole = f"{build} · {cluster_line(cluster)}"
        return whole if len(whole) <= self.app.size.width - 6 else f"{build} · {cluster.label}"

    def on_mount(self) -> None:
        self._show()
        self.ready()

    def _show(self) -> None:
        left, right, stacked = sections(self.item, self.sweep, self.index)
        self.query_one(Document).show(left, right, stacked)

    def recipes_here(self) -> list[Recipe | None]:
        """What a plan of the build can follow on this cluster: its recipes, and its engine's defaults (None)
        first where none of them is one to serve with (benchmark runs only, followed when chosen)."""
        facts, cluster = self.index.facts.get(self.item.plan.build.id), self.ranking.cluster
        recipes: list[Recipe | None] = [r for r in facts.recipes_on(cluster.hardware) if r.nodes == cluster.nodes] \
            if facts else []
        return recipes if any(r is not None and not r.benchmark for r in recipes) or not recipes else [None, *recipes]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`r` only where there is another recipe to follow (the footer leaves it out elsewhere)."""
        return action != "next_recipe" or (self.follow is not None and len(self.recipes_here()) > 1)

    def action_next_recipe(self) -> None:
        """Follow the next of the build's recipes on this cluster, after the one its plan follows."""
        choices, current = self.recipes_here(), self.item.plan.recipe
        if self.follow is None or len(choices) < 2:
            return
        followed = current.id if current is not None else None
        at = next((i for i, r in enumerate(choices) if (r.id if r is not None else None) == followed), -1)
        place = (at + 1) % len(choices)
        chosen = choices[place]
        self.item, self.sweep, self.ranking = self.follow(self.item.plan.build.id, chosen.id if chosen else None)
        self.query_one(Document).border_subtitle = self._subtitle()
        self._show()
        what = chosen.id if chosen is not None else f"no recipe ({engine_label(self.item.plan.constants.engine)}'s " \
            "defaults)"
        self.notify(safe_text(f"Following {what} ({place + 1} of {len(choices)} choices here); the table ranks it "
                              "so."), markup=False)

    def action_export(self) -> None:
        """The export dialog for this build, ranked among the others."""
        from sparkadvisor.tui.screens.export import ExportScreen

        self.app.push_screen(ExportScreen(self.index, self.item.plan, self.ranking.ranked))

    def action_help(self) -> None:
        from sparkadvisor.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen())


Follow = Callable[[str, str | None], tuple[Ranked, tuple[Ranked, ...], Ranking]]
"""(build id, recipe id, or None for the engine's defaults) -> the build's ranked entry, its cluster sweep and the
ranking, with the recipe followed."""
