"""One build full-screen (Enter): the arithmetic, the 1-4 node sweep, caveats with their
sources, the recipes, and export. Esc returns to the table where it was."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.screen import Screen

from sparkadvisor.core.catalog import CatalogIndex
from sparkadvisor.core.ranking import Ranked
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.table import cluster_line, workload_line
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
        Binding("question_mark", "help", "Help", key_display="?", id="build.help", tooltip="Keys and legend"),
    ]

    def __init__(self, index: CatalogIndex, item: Ranked, sweep: tuple[Ranked, ...], ranking: Ranking):
        super().__init__()
        self.keep_early_keys()
        self.index = index
        self.item = item
        self.sweep = sweep
        self.ranking = ranking

    def compose(self) -> ComposeResult:
        document = Document(split_at=150, left_width=80, id="build-document")
        document.border_title = Content(safe_text(self._title()))
        document.border_subtitle = Content(safe_text(workload_line(self.ranking.scenario.workload)))
        yield document
        yield KeyFooter()

    def _title(self) -> str:
        """The build and its cluster with memory and bandwidth, or only the cluster's size where that line
        would be cut (the memory bar and the arithmetic below give both)."""
        build, cluster = self.item.plan.build.id, self.ranking.cluster
        whole = f"{build} · {cluster_line(cluster)}"
        return whole if len(whole) <= self.app.size.width - 6 else f"{build} · {cluster.label}"

    def on_mount(self) -> None:
        document = self.query_one(Document)
        left, right, stacked = sections(self.item, self.sweep, self.index)
        document.show(left, right, stacked)
        self.ready()

    def action_export(self) -> None:
        """The export dialog for this build, ranked among the others."""
        from sparkadvisor.tui.screens.export import ExportScreen

        self.app.push_screen(ExportScreen(self.index, self.item.plan, self.ranking.ranked))

    def action_help(self) -> None:
        from sparkadvisor.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen())
