"""The top two lines: the cluster and the settings that override the recipes', then the workload."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from rich.cells import cell_len
from textual.content import Content
from textual.widgets import Static

from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.table import cluster_line, settings_line, workload_line
from sparkadvisor.core.workload import Settings, Workload

if TYPE_CHECKING:
    from textual.css.styles import RulesMap


class ClusterHeader(Static):
    """"2 x DGX Spark: 243.2 GiB in all, 273 GB/s each · 2,048 batched tokens" over "Agentic (Claude Code):
    100,000 tokens, ...". The settings follow the cluster they serve on; where that line has no room for them
    and the workload's has, they follow the workload, so one setting at 80 columns costs the table no row."""

    DEFAULT_CSS = """
    ClusterHeader { height: auto; padding: 0 1; background: $panel; }
    """

    _shown: tuple[Cluster, Workload, Settings] | None = None

    def show(self, cluster: Cluster, workload: Workload, settings: Settings) -> None:
        """Update both lines."""
        self._shown = cluster, workload, settings
        cluster_text, assumptions = cluster_line(cluster), workload_line(workload).removeprefix(workload.label)
        settings_text, width = settings_line(settings), self.content_region.width
        after_workload = (width > 0 and cell_len(cluster_text + settings_text) > width
                          and cell_len(workload.label + assumptions + settings_text) <= width)
        if after_workload:
            assumptions += settings_text
        else:
            cluster_text += settings_text
        content = Content.assemble(
            (safe_text(cluster_text), "bold $primary"), "\n", (workload.label, "bold $accent"),
            safe_text(assumptions))
        # A new layout only if the lines wrap to another height: a layout costs the screen a second frame
        # (every scroll bar repaints after it), on each workload toggle and node count.
        rules = cast("RulesMap", self.styles)  # as textual passes them
        same_height = width > 0 and self.visual.get_height(rules, width) == content.get_height(rules, width)
        self.update(content, layout=not same_height)

    def on_resize(self) -> None:
        """Lay the lines out again for the new width: the settings may move to the other line."""
        if self._shown is not None:
            self.show(*self._shown)
