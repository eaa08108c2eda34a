"""The top two lines: the cluster, then the workload and its assumptions."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.content import Content
from textual.widgets import Static

from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.table import cluster_line, workload_line
from sparkadvisor.core.workload import Settings, Workload

if TYPE_CHECKING:
    from textual.css.styles import RulesMap


def settings_text(settings: Settings) -> str:
    """" · gpu-memory-utilization 0.8 · KV dtype fp8" for the settings that override each recipe's, and the
    recipe followed over the advisor's pick for its build (`r` in a build's full-screen view)."""
    text = ""
    if settings.gpu_memory_utilization is not None:
        text += f" · gpu-memory-utilization {settings.gpu_memory_utilization:g}"
    if settings.kv_cache_dtype is not None:
        text += f" · KV dtype {settings.kv_cache_dtype}"
    if settings.recipe is not None:
        text += f" · recipe {settings.recipe}"
    return text


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
            safe_text(f"{assumptions}{settings_text(settings)}"))
        # A new layout only if the lines wrap to another height: a layout costs the screen a second frame
        # (every scroll bar repaints after it), on each workload toggle and node count.
        width, rules = self.content_region.width, cast("RulesMap", self.styles)  # as textual passes them
        same_height = width > 0 and self.visual.get_height(rules, width) == content.get_height(rules, width)
        self.update(content, layout=not same_height)
