"""The candidates table as text cells: one definition shared by the CLI, the TUI and reports."""

from __future__ import annotations

from sparkadvisor.core.caveats import KINDS, badge, by_severity
from sparkadvisor.core.formats import FORMATS
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.ranking import Ranked
from sparkadvisor.core.records import record
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.units import GiB, fmt_seconds, fmt_size, fmt_tokens
from sparkadvisor.core.workload import Workload

BADGES: dict[str, str] = {kind: info.badge for kind, info in KINDS.items()}
"""Short labels for caveat kinds, as badges in tables."""


@record(kw_only=False)
class Column:
    """A table column."""

    key: str
    label: str
    numeric: bool = False


COLUMNS: tuple[Column, ...] = (
    Column("rank", "#", True),
    Column("model", "model"),
    Column("build", "build"),
    Column("size", "size", True),
    Column("per_node", "GiB/node", True),
    Column("fit", "fit"),
    Column("kv_pool", "KV pool", True),
    Column("ceiling", "ceiling", True),
    Column("expected", "expected", True),
    Column("measured", "measured", True),
    Column("ttft", "1st token", True),
    Column("turn", "turn", True),
    Column("caveats", "caveats"),
)


def _speed(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.0f}"


def fit_cell(ranked: Ranked) -> str:
    """"fits +11.2 GiB", "by recipe", "needs 3 nodes", or "too big"."""
    plan = ranked.plan
    if plan.fit_by_recipe:
        return "by recipe"
    if plan.fits:
        return f"fits +{plan.budget.left_bytes / GiB:.1f} GiB"
    if plan.nodes_needed:
        return f"needs {plan.nodes_needed} nodes"
    return f"> {plan.cluster.hardware.max_nodes} nodes"


def row_cells(ranked: Ranked) -> dict[str, str]:
    """The table's cells for one candidate."""
    plan = ranked.plan
    d = plan.decode
    measured = plan.decode_measured
    pool = plan.kv_pool_measured.value if plan.kv_pool_measured else plan.kv_pool_tokens
    pool_text = fmt_tokens(pool) + ("*" if plan.kv_pool_measured else "")
    cells = {
        "rank": str(ranked.rank) if ranked.rank else "-",
        "model": plan.model.name,
        "build": f"{plan.build.repo.split('/')[0]} {FORMATS[plan.build.format].label.split(' (')[0]}",
        "size": fmt_size(plan.weights.total_bytes, plan.weights.unit, 0),
        "per_node": f"{plan.weights_per_node / GiB:.1f}",
        "fit": fit_cell(ranked),
        "kv_pool": pool_text if plan.fits else "-",
        "ceiling": _speed(d.ceiling_tok_s if d else None),
        "expected": (f"{d.expected_tok_s:.0f} ({d.low_tok_s:.0f}-{d.high_tok_s:.0f})" if d else "unknown"),
        "measured": f"{measured.value:g}" if measured else "-",
        "ttft": fmt_seconds(plan.ttft_s),
        "turn": fmt_seconds(plan.turn_s),
        "caveats": " ".join(dict.fromkeys(badge(c) for c in by_severity(plan.caveats))),
    }
    return {key: safe_text(text) for key, text in cells.items()}


def sort_value(ranked: Ranked, key: str) -> tuple[int, float | str]:
    """A sort key for a column: numbers as numbers, unknowns last."""
    plan = ranked.plan
    d = plan.decode
    values: dict[str, float | str | None] = {
        "rank": ranked.rank, "model": plan.model.name, "build": plan.build.repo,
        "size": plan.weights.total_bytes, "per_node": plan.weights_per_node,
        "fit": plan.budget.left_bytes if plan.fits else None,
        "kv_pool": plan.kv_pool_measured.value if plan.kv_pool_measured else plan.kv_pool_tokens,
        "ceiling": d.ceiling_tok_s if d else None, "expected": d.expected_tok_s if d else None,
        "measured": plan.decode_measured.value if plan.decode_measured else None,
        "ttft": plan.ttft_s, "turn": plan.turn_s, "caveats": len(plan.caveats),
    }
    value = values.get(key)
    return (1, 0.0) if value is None else (0, value)


def cluster_line(cluster: Cluster) -> str:
    """"2 x DGX Spark · 243.2 GiB · 273 GB/s"."""
    hw = cluster.hardware
    return f"{cluster.label} · {cluster.usable_gib:.1f} GiB · {hw.memory_bandwidth_gb_s:g} GB/s"


def workload_line(workload: Workload) -> str:
    """"Agentic (Claude Code): 100,000 tokens, 95% reuse, 200 out"."""
    return (f"{workload.label}: {workload.context_tokens:,} tokens, {workload.prefix_reuse:.0%} reuse, "
            f"{workload.output_tokens} out")


def header(cluster: Cluster, workload: Workload) -> str:
    """The cluster and the workload on one line, as the CLI and the TUI head a ranking."""
    return f"{cluster_line(cluster)} · {workload_line(workload)}"
