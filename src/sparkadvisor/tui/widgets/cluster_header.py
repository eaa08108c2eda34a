"""The top two lines: the cluster, then the workload and its assumptions."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.content import Content
from textual.widgets import Static

from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.table import cluster_line, settings_line, workload_line
from sparkadvisor.core.workload import Settings, Workload

if TYPE_CHECKING:
    from textual.css.styles import RulesMap


class ClusterHeader(Static):
    """"2 x DGX Spark: 243.2 GiB in all, 273 GB/s each" over "Agentic (Claude Code): 100,000 tokens, ..."."""

    DEFAULT_CSS = """
    ClusterHeader { height: auto; padding: 0 1; background: $panel; }
    """

    def show(self, cluster: Cluster, workload: Workload, settings: Settings) -> None:
        """Update both lines."""
        cluster_text, assumptions = cluster_line(cluster), workload_line(workload).removeprefix(workload.label)
        content = Content.assemble(
            (safe_text(cluster_text), "bold $primary"), "\n", (workload.label, "bold $accent"),
            safe_text(f"{assumptions}{settings_line(settings)}"))
        # A new layout only if the lines wrap to another height: a layout costs the screen a second frame
        # (every scroll bar repaints after it), on each workload toggle and node count.
        width, rules = self.content_region.width, cast("RulesMap", self.styles)  # as textual passes them
        same_height = width > 0 and self.visual.get_height(rules, width) == content.get_height(rules, width)
        self.update(content, layout=not same_height)
