"""The top two lines: the cluster, then the workload and its assumptions."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.table import cluster_line, workload_line
from sparkadvisor.core.workload import Settings, Workload


def settings_text(settings: Settings) -> str:
    """" · gpu-memory-utilization 0.8 · KV dtype fp8" for the settings that override each recipe's."""
    text = ""
    if settings.gpu_memory_utilization is not None:
        text += f" · gpu-memory-utilization {settings.gpu_memory_utilization:g}"
    if settings.kv_cache_dtype is not None:
        text += f" · KV dtype {settings.kv_cache_dtype}"
    return text


class ClusterHeader(Static):
    """"2 x DGX Spark · 243.2 GiB · 273 GB/s" over "Agentic (Claude Code): 100,000 tokens, ..."."""

    DEFAULT_CSS = """
    ClusterHeader { height: auto; padding: 0 1; background: $panel; }
    """

    def show(self, cluster: Cluster, workload: Workload, settings: Settings) -> None:
        """Update both lines."""
        cluster_text, assumptions = cluster_line(cluster), workload_line(workload).removeprefix(workload.label)
        self.update(Content.assemble(
            (safe_text(cluster_text), "bold $primary"), "\n", (workload.label, "bold $accent"),
            safe_text(f"{assumptions}{settings_text(settings)}")))
