"""One estimator behind every view: a build on a cluster for a workload, as a `Plan`.

The TUI, the CLI, the exporter and the probe all read plans made here; none of them
computes a number of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from sparkadvisor.core.catalog import CatalogIndex
from sparkadvisor.core.formats import FORMATS
from sparkadvisor.core.kv import KvShape, kv_shape, sessions_at
from sparkadvisor.core.memory import (
    Budget,
    Weights,
    build_weights,
    node_budget,
    nodes_needed,
    valid_parallelism,
)
from sparkadvisor.core.schema import Build, Caveat, Hardware, Measurement, Model, Recipe, Speculative
from sparkadvisor.core.speed import (
    DecodeEstimate,
    DecodeInputs,
    SpeedConstants,
    estimate_decode,
    estimate_prefill,
)
from sparkadvisor.core.targets import TargetCheck, check_targets
from sparkadvisor.core.units import GB, GiB
from sparkadvisor.core.workload import DEFAULT_SETTINGS, Settings, Workload

PREFIX_OFF_KINDS = ("prefix-caching-disabled",)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Cluster:
    """`nodes` of one hardware profile."""

    hardware: Hardware
    nodes: int

    @property
    def label(self) -> str:
        """"2 x DGX Spark"."""
        return f"{self.nodes} x {self.hardware.name}"


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything the advisor knows about one build on one cluster for one workload."""

    build: Build
    model: Model
    cluster: Cluster
    workload: Workload
    recipe: Recipe | None
    """The community recipe used for these nodes, if any."""
    tp: int
    pp: int
    parallel_reason: str
    weights: Weights
    budget: Budget
    fits: bool
    """The build runs here: by the arithmetic or, failing that, by a measured recipe."""
    fit_by_recipe: bool
    """True when only a measured recipe shows it runs (the arithmetic says it is short)."""
    nodes_needed: int | None
    """Smallest cluster that fits (a measured recipe counts), or None beyond max_nodes."""
    kv: KvShape | None
    kv_basis: str
    """"config" (computed), "measured pool" (derived from a recipe's pool) or "unknown"."""
    kv_bytes_per_token: float | None
    """Per rank; from config.json or from a measured pool."""
    kv_pool_tokens: float | None
    kv_pool_measured: Measurement | None
    sessions: int | None
    """Sequences of the workload's context that fit in the KV cache."""
    decode: DecodeEstimate | None
    decode_measured: Measurement | None
    prefill_tok_s: float | None
    prefill_basis: str
    """"measured", "estimated" or "unknown"."""
    prefill_measured: Measurement | None
    prefix_caching: bool
    prefix_caching_note: str
    uncached_tokens: int
    ttft_s: float | None
    caveats: tuple[Caveat, ...]
    disqualified_by: Caveat | None
    """A caveat that rules the build out for this workload."""
    constants: SpeedConstants
    kv_cache_dtype: str = "auto"
    """--kv-cache-dtype in force: the user's override, else the recipe's, else auto."""
    ttft_measured: Measurement | None = None
    """A first token measured at this context and reuse (a bench run); it is the plan's ttft_s."""

    @property
    def streams_tables(self) -> bool:
        """The recipe keeps the per-token tables on disk."""
        return bool(self.recipe and self.recipe.streams_tables)

    @property
    def weights_per_node(self) -> float:
        """Bytes of weights each node holds in memory."""
        return self.budget.weights_bytes

    @property
    def short_bytes(self) -> float:
        """How far the whole build, split over the nodes, exceeds each node's usable memory."""
        whole_per_node = self.weights.total_bytes / (self.tp * self.pp)
        return max(0.0, whole_per_node - self.budget.usable_bytes)

    @property
    def decode_tok_s(self) -> float | None:
        """The speed a turn is costed at: measured when the recipe measured it, else expected."""
        if self.decode_measured is not None:
            return self.decode_measured.value
        return self.decode.expected_tok_s if self.decode else None

    @property
    def turn_s(self) -> float | None:
        """First token plus the answer at the decode speed a turn is costed at."""
        speed = self.decode_tok_s
        if self.ttft_s is None or not speed:
            return None
        return self.ttft_s + self.workload.output_tokens / speed

    @property
    def cold_ttft_s(self) -> float | None:
        """First token for the whole prompt computed from scratch (no prefix reuse): measured
        at this context when a bench run did, else from the prefill rate."""
        context = self.workload.context_tokens
        cold = measured_ttft(self.recipe, context, context)
        if cold is not None:
            return cold.value
        rate, _, _ = _prefill(self.model, self.build, self.recipe, self.cluster, self.workload, context,
                              self.constants)
        return context / rate if rate else None

    @property
    def efficiency(self) -> float | None:
        """Measured decode / bandwidth ceiling."""
        if self.decode_measured is None or self.decode is None:
            return None
        return self.decode_measured.value / self.decode.ceiling_tok_s

    @property
    def targets(self) -> tuple[TargetCheck, ...]:
        """Each of the workload's targets: met, missed or unknown (core.targets)."""
        return check_targets(self)

    @property
    def target_misses(self) -> tuple[str, ...]:
        """The workload's targets this plan misses, in words."""
        return tuple(t.text for t in self.targets if t.status == "missed")

    @property
    def unknowns(self) -> tuple[str, ...]:
        """The targets nobody can evaluate for this plan, in words."""
        return tuple(t.text for t in self.targets if t.status == "unknown")

    @property
    def meets_targets(self) -> bool:
        """Fits and every target is known to be met: an unknown is not a pass."""
        return self.fits and all(t.status == "met" for t in self.targets)


ENGINE = "vllm"
"""The serving engine the plans, the speed model and the exported recipes are for."""


def vllm_recipes(index: CatalogIndex, build: Build, hardware: Hardware) -> list[Recipe]:
    """The build's vLLM recipes on this hardware (other engines' figures do not apply to a vLLM plan)."""
    return [r for r in index.recipes_by_build.get(build.id, ()) if r.hardware == hardware.id and r.engine == ENGINE]


def pick_recipe(index: CatalogIndex, build: Build, cluster: Cluster) -> Recipe | None:
    """The vLLM recipe for this build on exactly this cluster: the newest one the user's own
    `sparkadvisor bench` measured, else the best-measured published one."""
    candidates = [r for r in vllm_recipes(index, build, cluster.hardware) if r.nodes == cluster.nodes]
    own = [r for r in candidates if measured_here(index, r)]
    if own:
        return own[-1]
    return published_recipe(index, build, cluster)


def published_recipe(index: CatalogIndex, build: Build, cluster: Cluster) -> Recipe | None:
    """The best-measured published vLLM recipe for this build on exactly this cluster (a bench
    run copies what a server cannot tell from it)."""
    candidates = [r for r in vllm_recipes(index, build, cluster.hardware)
                  if r.nodes == cluster.nodes and not measured_here(index, r)]
    return max(candidates, key=lambda r: len(r.measurements), default=None)


def measured_here(index: CatalogIndex, recipe: Recipe) -> bool:
    """The recipe records a `sparkadvisor bench` run on the user's own cluster."""
    ids = (recipe.source,) if isinstance(recipe.source, str) else recipe.source
    return any((source := index.catalog.sources.get(i)) is not None and source.kind == "bench" for i in ids)


def measured(recipe: Recipe | None, metric: str, streams: int = 1) -> Measurement | None:
    """The recipe's newest measurement of `metric` at `streams` concurrent requests (a later
    bench run is listed after an earlier one; calibration still uses every run)."""
    if recipe is None:
        return None
    return next((m for m in reversed(recipe.measurements) if m.metric == metric and m.streams == streams), None)


def measured_ttft(recipe: Recipe | None, context_tokens: int, uncached_tokens: int) -> Measurement | None:
    """The newest first token measured at this context with as many tokens from the prefix
    cache as the workload reuses (within 2% of the prompt), or None."""
    if recipe is None:
        return None
    cached = context_tokens - uncached_tokens
    return next((m for m in reversed(recipe.measurements)
                 if m.metric == "ttft_s" and m.context_tokens == context_tokens and m.cached_tokens is not None
                 and abs(m.cached_tokens - cached) <= 0.02 * context_tokens), None)


def evaluate(
    index: CatalogIndex, build: Build, cluster: Cluster, workload: Workload,
    constants: SpeedConstants, settings: Settings = DEFAULT_SETTINGS,
) -> Plan:
    """The plan for one build on one cluster for one workload."""
    model = index.models[build.model]
    hardware = cluster.hardware
    recipe = _memo(index, ("recipe", build.id, hardware.id, cluster.nodes), lambda: pick_recipe(index, build, cluster))
    tp, pp, parallel_reason = _memo(index, ("parallel", model.id, cluster.nodes, recipe.id if recipe else None),
                                    lambda: valid_parallelism(model, cluster.nodes, recipe))
    weights = _memo(index, ("weights", build.id), lambda: build_weights(build, model))
    streams = bool(recipe and recipe.streams_tables)
    utilization = _utilization(settings, recipe, hardware)
    kv_dtype = settings.kv_cache_dtype or (recipe.kv_cache_dtype if recipe else "auto")
    pinned = recipe.kv_cache_gib if recipe and settings.gpu_memory_utilization is None else None
    budget = node_budget(hardware, weights.resident_bytes(streams) / (tp * pp), utilization, pinned)
    decode_measured = measured(recipe, "decode_tok_s")
    fit_by_recipe = not budget.fits and decode_measured is not None
    overridden = settings.gpu_memory_utilization is not None
    needed = _memo(index, ("needed", build.id, hardware.id, utilization, overridden),
                   lambda: _nodes_needed(index, build, weights, hardware, utilization, overridden))
    kv = _memo(index, ("kv", model.id, kv_dtype, tp, pp),
               lambda: kv_shape(model.attention, kv_dtype, tp, pp) if model.attention else None)
    kv_basis, per_token = _memo(index, ("kv-per-token", build.id, hardware.id, kv_dtype, tp, pp),
                                lambda: _kv_per_token(index, build, hardware, kv, weights, tp, pp))
    pool_measured = measured(recipe, "kv_pool_tokens")
    pool = budget.kv_bytes / per_token if per_token and budget.kv_bytes > 0 else None
    sessions = _sessions(kv, per_token, budget, workload)
    caveats = _memo(index, ("caveats", build.id, recipe.id if recipe else None),
                    lambda: _caveats(index, build, recipe))
    prefix_on, prefix_note = _prefix_caching(recipe, caveats)
    uncached = _uncached_tokens(workload, prefix_on)
    decode = _decode(model, build, weights, recipe, tp, pp, kv, per_token, workload, hardware, constants)
    prefill, prefill_basis, prefill_measured = _prefill(model, build, recipe, cluster, workload, uncached, constants)
    ttft_measured = measured_ttft(recipe, workload.context_tokens, uncached)
    ttft = ttft_measured.value if ttft_measured else (uncached / prefill if prefill else None)
    return Plan(
        build, model, cluster, workload, recipe, tp, pp, parallel_reason, weights, budget,
        budget.fits or fit_by_recipe, fit_by_recipe, needed, kv, kv_basis, per_token, pool,
        pool_measured, sessions, decode, decode_measured, prefill, prefill_basis, prefill_measured,
        prefix_on, prefix_note, uncached, ttft, caveats, _disqualifier(caveats, workload), constants,
        kv_dtype, ttft_measured,
    )


def _memo(index: CatalogIndex, key: tuple[object, ...], compute: Callable[[], T]) -> T:
    """A figure that depends only on the catalog and `key`, computed once per catalog."""
    memo = index.memo
    if key not in memo:
        memo[key] = compute()
    return memo[key]  # type: ignore[return-value]


def _utilization(settings: Settings, recipe: Recipe | None, hardware: Hardware) -> float:
    if settings.gpu_memory_utilization is not None:
        return settings.gpu_memory_utilization
    if recipe is not None and recipe.gpu_memory_utilization is not None:
        return recipe.gpu_memory_utilization
    return hardware.gpu_memory_utilization


def _nodes_needed(index: CatalogIndex, build: Build, weights: Weights, hardware: Hardware,
                  utilization: float, overridden: bool) -> int | None:
    """By the arithmetic, or by a measured recipe unless the user overrode the recipes' settings."""
    by_arithmetic = nodes_needed(weights, hardware, utilization)
    recipes = [] if overridden else vllm_recipes(index, build, hardware)
    by_recipe = [r.nodes for r in recipes if measured(r, "decode_tok_s")]
    options = [n for n in (by_arithmetic, *by_recipe) if n is not None]
    return min(options, default=None)


def _kv_per_token(index: CatalogIndex, build: Build, hardware: Hardware, kv: KvShape | None,
                  weights: Weights, tp: int, pp: int) -> tuple[str, float | None]:
    """KV bytes per token per rank: from config.json, else from a recipe's measured pool."""
    if kv is not None:
        return "config", kv.bytes_per_token
    for recipe in vllm_recipes(index, build, hardware):
        pool = measured(recipe, "kv_pool_tokens")
        if pool is None:
            continue
        kv_bytes = pool.kv_gib * GiB if pool.kv_gib else _recipe_kv_bytes(recipe, weights, hardware)
        if kv_bytes > 0:
            # Per rank, scaled from the recipe's split to this one, assuming the KV splits across ranks.
            return "measured pool", kv_bytes / pool.value * (recipe.tp * recipe.pp) / (tp * pp)
    return "unknown", None


def _recipe_kv_bytes(recipe: Recipe, weights: Weights, hardware: Hardware) -> float:
    """The KV memory per node a recipe had, by the budget arithmetic, when it does not say."""
    utilization = recipe.gpu_memory_utilization or hardware.gpu_memory_utilization
    resident = weights.resident_bytes(recipe.streams_tables)
    return node_budget(hardware, resident / recipe.nodes, utilization, recipe.kv_cache_gib).kv_bytes


def _sessions(kv: KvShape | None, per_token: float | None, budget: Budget, workload: Workload) -> int | None:
    if kv is not None:
        return sessions_at(kv, budget.kv_bytes, workload.context_tokens)
    if per_token:
        return max(0, int(budget.kv_bytes // (per_token * workload.context_tokens)))
    return None


def _caveats(index: CatalogIndex, build: Build, recipe: Recipe | None) -> tuple[Caveat, ...]:
    ids = list(build.caveats) + (list(recipe.caveats) if recipe else [])
    return tuple(index.caveats[c] for c in dict.fromkeys(ids) if c in index.caveats)


def _disqualifier(caveats: tuple[Caveat, ...], workload: Workload) -> Caveat | None:
    return next((c for c in caveats if workload.kind in c.disqualifies), None)


def _prefix_caching(recipe: Recipe | None, caveats: tuple[Caveat, ...]) -> tuple[bool, str]:
    forced = next((c for c in caveats if c.kind in PREFIX_OFF_KINDS), None)
    if forced is not None:
        return False, forced.explanation
    if recipe is not None and not recipe.prefix_caching:
        return False, f"the recipe ({recipe.title}) disables prefix caching"
    return True, "prefix caching on (vLLM's default)"


def _uncached_tokens(workload: Workload, prefix_on: bool) -> int:
    if not prefix_on:
        return workload.context_tokens
    return round(workload.context_tokens * (1 - workload.prefix_reuse))


def _decode(model: Model, build: Build, weights: Weights, recipe: Recipe | None, tp: int, pp: int,
            kv: KvShape | None, per_token: float | None, workload: Workload, hardware: Hardware,
            constants: SpeedConstants) -> DecodeEstimate | None:
    inputs = decode_inputs(model, build, weights, recipe, tp, pp,
                           kv_bytes_read(kv, per_token, workload.context_tokens))
    return estimate_decode(inputs, hardware.memory_bandwidth_gb_s, constants) if inputs else None


def kv_bytes_read(kv: KvShape | None, per_token: float | None, context_tokens: int) -> float:
    """KV bytes one rank reads per decoded token at `context_tokens`: from config.json facts,
    else from a measured pool's bytes per token, else nothing (unknown, not counted)."""
    if kv is not None:
        return kv.bytes_per_sequence(context_tokens)
    return (per_token or 0.0) * context_tokens


def recipe_kv_read(index: CatalogIndex, recipe: Recipe, context_tokens: int) -> float:
    """`kv_bytes_read` for a recipe's own build, dtype and split (what calibration predicts with)."""
    build = index.builds[recipe.build]
    model = index.models[build.model]
    hardware = index.hardware[recipe.hardware]
    kv = kv_shape(model.attention, recipe.kv_cache_dtype, recipe.tp, recipe.pp) if model.attention else None
    weights = build_weights(build, model)
    _, per_token = _kv_per_token(index, build, hardware, kv, weights, recipe.tp, recipe.pp)
    return kv_bytes_read(kv, per_token, context_tokens)


def decode_inputs(model: Model, build: Build, weights: Weights, recipe: Recipe | None,
                  tp: int, pp: int, kv_read: float, streams: int = 1) -> DecodeInputs | None:
    """What a decode step reads and runs for this build under this recipe."""
    params = model.params
    if params.active_b is None:
        return None
    spec = recipe.speculative if recipe else None
    attention = model.attention
    return DecodeInputs(
        active_params=params.active_b * 1e9,
        total_params=params.total_b * 1e9,
        routed_experts=params.routed_experts,
        experts_per_token=params.experts_per_token,
        nominal_bits=FORMATS[build.format].nominal_bits,
        stored_bits=weights.stored_bits,
        tp=tp, pp=pp, kv_bytes_read=kv_read,
        layers=attention.layers if attention else None,
        eager=bool(recipe and recipe.enforce_eager),
        spec_tokens=spec.tokens_per_pass if spec else 0,
        draft_bytes_per_pass=_draft_bytes(spec, weights, params.active_b / params.total_b, tp) if spec else 0.0,
        acceptance=spec.acceptance if spec else None,
        hidden_size=attention.hidden_size if attention else None,
        streams=streams,
        tables=" + ".join(dict.fromkeys(t.kind.upper() if t.kind == "ple" else t.kind.title() for t in model.tables)),
    )


def _draft_bytes(spec: Speculative, weights: Weights, active_share: float, tp: int) -> float:
    """Bytes the drafter reads per pass on one node. An MTP head is one more layer of the
    model, so each proposed token reads its active share (the model's active / total); a
    DFlash or DSpark drafter proposes the whole block in one pass; other drafts run per token."""
    if spec.method == "mtp":
        return weights.mtp_bytes * min(active_share, 1.0) / tp * spec.tokens_per_pass
    draft = (spec.draft_size_gb or 0.0) * GB / tp
    return draft if spec.method in ("dflash", "dspark") else draft * spec.tokens_per_pass


def _prefill(model: Model, build: Build, recipe: Recipe | None, cluster: Cluster, workload: Workload,
             uncached: int, constants: SpeedConstants) -> tuple[float | None, str, Measurement | None]:
    measurement = measured(recipe, "prefill_tok_s")
    if measurement is not None:
        return measurement.value, "measured", measurement
    if model.params.active_b is None:
        return None, "unknown", None
    # New tokens attend to the cached prefix plus, on average, half of themselves.
    attended = workload.context_tokens - uncached / 2
    rate = estimate_prefill(cluster.nodes, model.params.active_b * 1e9, model.attention, attended, constants)
    return rate, ("estimated" if rate else "unknown"), None
