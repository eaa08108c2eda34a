"""The candidates table as text cells: one definition shared by the CLI, the TUI and reports."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sparkadvisor.core.caveats import KINDS, SEVERITY_ORDER, badge, by_severity
from sparkadvisor.core.formats import FORMATS
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.ranking import Ranked
from sparkadvisor.core.records import record
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.units import GiB, fmt_seconds, fmt_size, fmt_tokens, plural
from sparkadvisor.core.workload import DEFAULT_SETTINGS, Settings, Workload

if TYPE_CHECKING:
    from sparkadvisor.core.plan import Plan
    from sparkadvisor.core.schema import Caveat
    from sparkadvisor.core.speed.decode import DecodeEstimate

BADGES: dict[str, str] = {kind: info.badge for kind, info in KINDS.items()}
"""Short labels for caveat kinds, as badges in tables."""


SEVERITY_GLYPHS: dict[str, str] = {"critical": "✖", "warning": "▲", "info": "•"}
"""One glyph per caveat severity, most severe first; the flags cell shows each severity present once."""
SEVERITY_MEANING: dict[str, str] = {
    "critical": "rules the build out for a workload it names (e.g. tool calls corrupted for agents)",
    "warning": "costs time or changes the machine (prefix caching off, swap, patches)",
    "info": "worth knowing before you start (custom image, slow cold load)",
}
ABOVE_RANGE, BELOW_RANGE = "↑", "↓"
"""Marks a measured decode speed above or below the predicted low-high range."""


@record(kw_only=False)
class Column:
    """A table column."""

    key: str
    label: str
    numeric: bool = False
    help: str = ""
    """What the column holds, for the help screen and the palette."""


COLUMNS: tuple[Column, ...] = (
    Column("rank", "#", True, "the advisor's rank; - for builds that do not fit or are ruled out"),
    Column("model", "model"),
    Column("build", "build", help="publisher and weight format"),
    Column("flags", "flags", help="one glyph per caveat severity present, then the most severe caveat"),
    Column("fit", "fit", help="fits with X GiB per node left, fits by a recipe, or the nodes it needs"),
    Column("expected", "tok/s", True, "expected decode speed (of all streams together where several decode at "
           "once), with its 80% range (from the model's errors on measurements left out of its fit); ≤ a bound; - "
           "where the build does not fit"),
    Column("ttft", "1st token", True, "time to the first token of a turn, with prefix caching as it runs; ≥ a bound"),
    Column("turn", "turn", True, "first token plus the output at the decode speed; ≥ a bound"),
    Column("kv_pool", "KV pool", True, "tokens the KV cache holds; * measured by a recipe"),
    Column("ceiling", "ceiling", True, "bandwidth over active bytes per node: no faster without speculation"),
    Column("measured", "measured", True, "a recipe's measured tok/s; ↑ or ↓ outside the predicted range"),
    Column("size", "size", True, "weights as the source prints them"),
    Column("per_node", "GiB/node", True, "weights per node"),
    Column("caveats", "caveats", help="every caveat of the build and its recipe"),
)
"""In the order a narrow screen gives them up last: rank, model and build always show,
then flags, fit, speed and first token (the decision), then the rest."""


def _speed(value: float | None) -> str:
    """Tokens per second in whole numbers; below 1, two significant figures (a speed is never shown as 0)."""
    if value is None:
        return "unknown"
    return f"{value:.2g}" if value < 0.95 else f"{value:.0f}"


def fit_cell(ranked: Ranked) -> str:
    """"fits +11.2 GiB", "by recipe", "needs 3 nodes", "> 4 nodes", "too big" (for one-node hardware),
    or "no engine" (none is known to serve it on this hardware)."""
    plan = ranked.plan
    if plan.no_engine is not None:
        return "no engine"
    if plan.fit_by_recipe:
        return "by recipe"
    if plan.fits:
        return f"fits +{plan.budget.left_bytes / GiB:.1f} GiB"
    if plan.nodes_needed:
        return f"needs {plural(plan.nodes_needed, 'node')}"
    most = plan.cluster.hardware.max_nodes
    return f"> {plural(most, 'node')}" if most > 1 else "too big"


def _severity_rank(caveat: Caveat) -> int:
    return SEVERITY_ORDER[caveat.severity]


def flags_cell(plan: Plan) -> str:
    """"✖▲ TOOLCALLS-CORRUPT": each severity present once, most severe first, then the badge
    of the most severe caveat (the first of them in catalog order)."""
    if not plan.caveats:
        return ""
    present = {c.severity for c in plan.caveats}
    glyphs = "".join(glyph for severity, glyph in SEVERITY_GLYPHS.items() if severity in present)
    return f"{glyphs} {badge(by_severity(plan.caveats)[0])}"


def expected_cell(d: DecodeEstimate | None) -> str:
    """"39 (34-46)": the expected decode speed and its range; "≤98" where it is an upper bound (`bound`: it leaves
    out a per-token table whose bytes are unpublished, or a caveat reports the route slower; no range: it is not a
    prediction)."""
    if d is None:
        return "unknown"
    if d.bound:
        return f"≤{_speed(d.expected_tok_s)}"
    return f"{_speed(d.expected_tok_s)} ({_speed(d.low_tok_s)}-{_speed(d.high_tok_s)})"


def measured_cell(plan: Plan) -> str:
    """The measured decode speed, marked when it falls outside the range the model predicts at the measurement's
    own context, streams and mode (`Plan.measured_side`, the verdict `show` gives)."""
    measured = plan.decode_measured
    if measured is None:
        return "-"
    mark = {"above": ABOVE_RANGE, "below": BELOW_RANGE}.get(plan.measured_side or "", "")
    return f"{measured.value:g}{mark}"


def cluster_line(cluster: Cluster) -> str:
    """"2 x DGX Spark: 243.2 GiB in all, 273 GB/s each" (memory for the cluster, bandwidth per node)."""
    bandwidth = f"{cluster.hardware.memory_bandwidth_gb_s:g} GB/s"
    if cluster.nodes == 1:
        return f"{cluster.label}: {cluster.usable_gib:.1f} GiB, {bandwidth}"
    return f"{cluster.label}: {cluster.usable_gib:.1f} GiB in all, {bandwidth} each"


def workload_line(workload: Workload) -> str:
    """"Agentic (Claude Code): 100,000 tokens, 95% reuse, 200 out", and ", 4 streams" when several
    decode at once (the speeds are then their aggregate)."""
    tokens = "token" if workload.context_tokens == 1 else "tokens"
    streams = f", {workload.streams} streams" if workload.streams > 1 else ""
    return (f"{workload.label}: {workload.context_tokens:,} {tokens}, {workload.prefix_reuse:.0%} reuse, "
            f"{workload.output_tokens:,} out{streams}")


def row_cells(ranked: Ranked) -> dict[str, str]:
    """The table's cells for one candidate."""
    plan = ranked.plan
    d = plan.decode
    pool = plan.kv_pool_measured.value if plan.kv_pool_measured else plan.kv_pool_tokens
    pool_text = fmt_tokens(pool) + ("*" if plan.kv_pool_measured else "")
    # Only the model's name and the repo's owner come from a catalog; every other cell is
    # written here from numbers and the registries' own words, so it needs no escaping.
    return {
        "rank": str(ranked.rank) if ranked.rank else "-",
        "model": safe_text(plan.model.name),
        "build": safe_text(f"{plan.build.repo.split('/')[0]} {FORMATS[plan.build.format].label.split(' (')[0]}"),
        "size": fmt_size(plan.weights.total_bytes, plan.weights.unit, 0),
        "per_node": f"{plan.weights_per_node / GiB:.1f}",
        "flags": flags_cell(plan),
        "fit": fit_cell(ranked),
        "kv_pool": pool_text if plan.runs else "-",
        "ceiling": _speed(d.ceiling_tok_s if d else None) if plan.runs else "-",
        "expected": expected_cell(d) if plan.runs else "-",
        "measured": measured_cell(plan),
        "ttft": ("≥" if plan.first_token_bound and plan.ttft_s is not None else "") + fmt_seconds(plan.ttft_s)
        if plan.runs else "-",
        "turn": (("≥" if plan.turn_bound and plan.turn_s is not None else "") + fmt_seconds(plan.turn_s)
                 if plan.runs else "-"),
        "caveats": " ".join(dict.fromkeys(badge(c) for c in by_severity(plan.caveats))),
    }


def _decode_value(attribute: str) -> Callable[[Ranked], float | None]:
    def value(ranked: Ranked) -> float | None:
        d = ranked.plan.decode
        return getattr(d, attribute) if d and ranked.plan.runs else None
    return value


def _if_fits(figure: Callable[[Plan], float | None]) -> Callable[[Ranked], float | None]:
    """A figure that only a build that loads has: sorted with the unknowns (its cell shows -) otherwise."""
    return lambda ranked: figure(ranked.plan) if ranked.plan.runs else None


def _kv_pool(ranked: Ranked) -> float | None:
    plan = ranked.plan
    return plan.kv_pool_measured.value if plan.kv_pool_measured else plan.kv_pool_tokens


def _flags(ranked: Ranked) -> float:
    """Most severe first: a critical caveat outweighs any number of warnings."""
    return sum(10.0 ** (2 - _severity_rank(c)) for c in ranked.plan.caveats)


SORT_KEYS: dict[str, Callable[[Ranked], float | str | None]] = {
    "rank": lambda r: r.rank,
    "model": lambda r: r.plan.model.name.lower(),
    "build": lambda r: r.plan.build.repo.lower(),
    "flags": _flags,
    "fit": lambda r: r.plan.budget.left_bytes if r.plan.runs else None,
    "expected": lambda r: None if r.plan.decode is not None and r.plan.decode.bound else
    _decode_value("expected_tok_s")(r),  # a bound (≤N) sorts with the unknowns, not as the fastest
    "ttft": _if_fits(lambda plan: None if plan.first_token_bound else plan.ttft_s),  # ≥T: unknown, as its target
    "turn": _if_fits(lambda plan: None if plan.turn_bound else plan.turn_s),  # ≥T: unknown, as its target
    "kv_pool": _kv_pool,
    "ceiling": _decode_value("ceiling_tok_s"),
    "measured": lambda r: r.plan.decode_measured.value if r.plan.decode_measured else None,
    "size": lambda r: r.plan.weights.total_bytes,
    "per_node": lambda r: r.plan.weights_per_node,
    "caveats": lambda r: len(r.plan.caveats),
}
"""What each column sorts by: numbers as numbers, names without case."""


def sort_value(ranked: Ranked, key: str) -> tuple[int, float | str]:
    """A sort key for a column: numbers as numbers, unknowns last."""
    value = SORT_KEYS[key](ranked)
    return (1, 0.0) if value is None else (0, value)


COMPARE_ROWS: tuple[tuple[str, str], ...] = (
    ("rank", "rank"), ("model", "model"), ("repo", "repo"), ("engine", "engine, split"), ("flags", "flags"),
    ("fit", "fit"), ("per_node", "GiB/node"), ("kv_pool", "KV pool"), ("ceiling", "decode ceiling tok/s"),
    ("expected", "expected tok/s"), ("measured", "measured tok/s"), ("ttft", "1st token, as it runs"),
    ("cold", "1st token, cold"), ("turn", "turn"), ("prefix", "prefix caching"), ("caveats", "caveats"),
    ("reason", "why"),
)
"""(key, label) of each line of a side-by-side comparison."""


def compare_cells(ranked: Ranked) -> dict[str, str]:
    """One build's column in a comparison: the table's cells plus the engine and its split, the cold first token
    and prefix caching."""
    plan = ranked.plan
    return row_cells(ranked) | {
        "rank": str(ranked.rank) if ranked.rank else "excluded", "repo": safe_text(plan.build.repo),
        # The engine is a recipe's (catalog text) or the user's choice.
        "engine": safe_text(f"{plan.constants.engine}, {split_text(plan.tp, plan.pp)}"),
        "cold": ("≥" if plan.first_token_bound and plan.cold_ttft_s is not None else "") + fmt_seconds(plan.cold_ttft_s)
        if plan.runs else "-", "reason": safe_text(ranked.reason),
        "prefix": "on" if plan.prefix_caching else "OFF",
        "caveats": ", ".join(dict.fromkeys(badge(c) for c in by_severity(plan.caveats))) or "none known",
    }


def split_text(tp: int, pp: int) -> str:
    """"one node", "TP=2" (the heads split across the nodes), "PP=2" (the layers: one stage a node), or both, in
    the words of show's parallelism step (short enough for a compare column at 80 columns)."""
    if tp * pp == 1:
        return "one node"
    return f"TP={tp}" if pp == 1 else f"PP={pp}" if tp == 1 else f"TP={tp}, PP={pp}"


def settings_line(settings: Settings) -> str:
    """" · gpu-memory-utilization 0.8 · max-model-len 65,536 · KV dtype fp8" for the settings that override each
    recipe's, and the recipe followed over the advisor's pick for its build ("" for none)."""
    text = ""
    if settings.gpu_memory_utilization is not None:
        text += f" · gpu-memory-utilization {settings.gpu_memory_utilization:g}"
    if settings.max_model_len is not None:
        text += f" · max-model-len {settings.max_model_len:,}"
    if settings.batched_tokens is not None:
        text += f" · {settings.batched_tokens:,} batched tokens"
    if settings.kv_cache_dtype is not None:
        text += f" · KV dtype {settings.kv_cache_dtype}"
    if settings.engine is not None:
        text += f" · {settings.engine} without a recipe"
    if settings.enforce_eager is not None:
        text += " · eager" if settings.enforce_eager else " · CUDA graphs"
    if settings.speculation is False:
        text += " · no speculation"
    if settings.recipe is not None:
        text += f" · recipe {settings.recipe}"
    return text


def header(cluster: Cluster, workload: Workload, settings: Settings = DEFAULT_SETTINGS) -> str:
    """The cluster, the workload and the settings that override the recipes' on one line, as the CLI and
    the TUI head a ranking."""
    return f"{cluster_line(cluster)} · {workload_line(workload)}{settings_line(settings)}"
