"""The per-cluster stages of a plan, in the order the arithmetic runs them.

Each stage is a small frozen record made by one function from the build's facts, the
cluster and the stages before it, passed by keyword:

    fit_on        -> Fit         parallelism, the node's memory budget, does it fit
    kv_pool_for   -> KvPool      KV bytes per token, the pool, sessions at the context
    decode_speed  -> DecodeSpeed ceiling, expected speed and range, or the measurement
    first_token   -> FirstToken  prefix caching, uncached tokens, prefill rate, TTFT

`core.plan.evaluate` runs them and keeps their records in the `Plan`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from sparkadvisor.core.formats import FORMATS
from sparkadvisor.core.kv import VLLM_BATCHED_TOKENS, KvShape, sequence_bytes, sessions_of, shape_for
from sparkadvisor.core.memo import once
from sparkadvisor.core.memory import (
    Budget,
    Reserve,
    Weights,
    node_budget,
    node_fits,
    runtime_reserve,
    valid_parallelism,
)
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Caveat, Hardware, Measurement, Model, Recipe, Speculative
from sparkadvisor.core.speed import (
    DecodeEstimate,
    DecodeInputs,
    PassCost,
    PrefillInputs,
    SpeedConstants,
    estimate_decode,
    estimate_for_weights,
    estimate_prefill,
    launch_flag,
    pass_cost,
    prefill_chunk,
    prefill_inputs,
    weight_class,
)
from sparkadvisor.core.units import GB, GiB
from sparkadvisor.core.workload import DEFAULT_SETTINGS, Settings, Workload

if TYPE_CHECKING:
    from sparkadvisor.core.index import BuildFacts

PREFIX_OFF_KINDS = ("prefix-caching-disabled",)
"""Caveat kinds that force prefix caching off, whatever the recipe says."""


BLOCK_DRAFTERS = ("dflash", "dspark")
"""Drafters that propose their whole block in one pass (the others run once per proposed token)."""

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


def pick_recipe(facts: BuildFacts, hardware: Hardware, nodes: int) -> Recipe | None:
    """The vLLM recipe for this build on exactly `nodes` of this hardware: the newest one the
    user's own `sparkadvisor bench` recorded, else the best-measured published one."""
    on_hardware = facts.recipes.get(hardware.id)
    if not on_hardware:
        return None
    candidates = [r for r in on_hardware if r.nodes == nodes]
    own = [r for r in candidates if r.id in facts.own_recipes]
    return own[-1] if own else published_recipe(facts, hardware, nodes)


def published_recipe(facts: BuildFacts, hardware: Hardware, nodes: int) -> Recipe | None:
    """The best-measured published vLLM recipe for this build on exactly `nodes` of this hardware
    (a bench run copies from it what a server cannot tell)."""
    candidates = [r for r in facts.recipes_on(hardware) if r.nodes == nodes and r.id not in facts.own_recipes]
    return max(candidates, key=lambda r: len(r.measurements), default=None)


# --- fit ----------------------------------------------------------------------


@record
class Fit:
    """Does the build run on these nodes, and what does each node's memory hold?"""

    tp: int
    pp: int
    parallel_reason: str
    """Why this split: the recipe's, or what the head counts allow."""
    budget: Budget
    """One node's memory: engine share, weights, reserve, KV cache."""
    fits: bool
    """The build runs here: by the arithmetic or, failing that, by a measured recipe."""
    fit_by_recipe: bool
    """Only a measured recipe shows it runs (the arithmetic says it is short)."""
    nodes_needed: int | None
    """Smallest cluster that fits by the same rule, or None beyond max_nodes."""
    kv_cache_dtype: str
    """--kv-cache-dtype in force: the user's override, else the recipe's, else auto."""


def fit_on(*, facts: BuildFacts, hardware: Hardware, nodes: int, recipe: Recipe | None,
           settings: Settings) -> Fit:
    """The fit on `nodes` of `hardware`; `nodes_needed` asks the same question of each size."""
    tp, pp, reason = valid_parallelism(facts.model, nodes, recipe)
    budget, fits, by_recipe = _fits(facts, hardware, recipe, settings, tp * pp)
    needed = _nodes_needed(facts, hardware, settings, nodes, fits, budget)
    return Fit(tp=tp, pp=pp, parallel_reason=reason, budget=budget, fits=fits, fit_by_recipe=by_recipe,
               nodes_needed=needed, kv_cache_dtype=settings.kv_cache_dtype or (recipe.kv_cache_dtype if recipe
                                                                                 else "auto"))


def _fits(facts: BuildFacts, hardware: Hardware, recipe: Recipe | None, settings: Settings,
          ranks: int) -> tuple[Budget, bool, bool]:
    """(budget, fits, fits only by a measured recipe). A recipe's measured decode proves it runs
    only with the recipe's own memory settings, not under a user's override."""
    budget = node_budget(hardware, *_node_share(facts, hardware, recipe, settings, ranks),
                         weights_loaded=_loaded_gib(recipe, ranks) is not None)
    by_recipe = not budget.fits and _runs_as_measured(recipe, settings)
    return budget, budget.fits or by_recipe, by_recipe


def _fits_at(facts: BuildFacts, hardware: Hardware, recipe: Recipe | None, settings: Settings, ranks: int) -> bool:
    """`_fits(...)[1]` without the budget record."""
    return (node_fits(hardware, *_node_share(facts, hardware, recipe, settings, ranks))
            or _runs_as_measured(recipe, settings))


def _node_share(facts: BuildFacts, hardware: Hardware, recipe: Recipe | None, settings: Settings,
                ranks: int) -> tuple[float, float, float | None, Reserve]:
    """(weights per node, utilization, pinned KV GiB, reserve) the budget is drawn up with. The
    weights are the recipe's logged per-rank figure when it has one, else the stored share."""
    streams = bool(recipe and recipe.streams_tables)
    pinned = recipe.kv_cache_gib if recipe and settings.gpu_memory_utilization is None else None
    loaded = _loaded_gib(recipe, ranks)
    weights = loaded * GiB if loaded is not None else facts.weights.resident_bytes(streams) / ranks
    return weights, utilization(settings, recipe, hardware), pinned, reserve_for(facts, recipe, settings, ranks)


def _loaded_gib(recipe: Recipe | None, ranks: int) -> float | None:
    """The recipe's logged weights per rank, when it splits over exactly these ranks."""
    return recipe.weights_loaded_gib if recipe is not None and recipe.tp * recipe.pp == ranks else None


def _runs_as_measured(recipe: Recipe | None, settings: Settings) -> bool:
    """A measured decode shows the recipe runs, with its own memory settings (no override)."""
    return settings.gpu_memory_utilization is None and measured(recipe, "decode_tok_s") is not None


def _nodes_needed(facts: BuildFacts, hardware: Hardware, settings: Settings, nodes: int, fits: bool,
                  budget: Budget) -> int | None:
    """The smallest size that fits by the rule the plan's own fit on `nodes` followed (`budget` is
    that plan's node budget): when it fits there, no size above `nodes` is tried."""
    if not facts.recipes.get(hardware.id):
        # No recipe at any size: only the weights' share changes with the size; the utilization and
        # the reserve (no drafter, so no share of one) are the plan's own budget's, and nothing is pinned.
        # The share grows as the size shrinks, so when `nodes` is short no smaller size is tried either.
        resident = facts.weights.resident_bytes(False)
        for size in range(1, nodes) if fits else range(nodes + 1, hardware.max_nodes + 1):
            if node_fits(hardware, resident / size, budget.utilization, None, budget.reserve):
                return size
        return nodes if fits else None
    # One GPU per node: tp x pp is the node count, a recipe's too (check_references enforces it).
    for size in range(1, nodes if fits else hardware.max_nodes + 1):
        if _fits_at(facts, hardware, pick_recipe(facts, hardware, size), settings, size):
            return size
    return nodes if fits else None


def reserve_for(facts: BuildFacts, recipe: Recipe | None, settings: Settings, ranks: int) -> Reserve:
    """What vLLM keeps beside weights and KV in this recipe's mode (the user's --eager/--cuda-graphs
    first): the profile run (the recipe's logged one, else the general figure), CUDA graphs unless eager,
    a drafter's graphs and weights when it speculates, an indexer's prefill buffer at the max-model-len
    the pool is sized for."""
    eager = settings.enforce_eager if settings.enforce_eager is not None else bool(recipe and recipe.enforce_eager)
    spec = recipe.speculative if recipe else None
    draft = (spec.draft_size_gb or 0.0) * GB / ranks if spec else 0.0
    attention = facts.model.attention
    has_indexer = bool(attention.indexer_head_dim) if attention else facts.model.sparse_indexer is not None
    indexed = (_window(facts, recipe) or 0) if has_indexer else 0
    logged = recipe.reserve if recipe is not None else None
    return runtime_reserve(eager, spec is not None, draft, indexed, logged)  # positional: lru_cache keys them faster


def utilization(settings: Settings, recipe: Recipe | None, hardware: Hardware) -> float:
    """--gpu-memory-utilization in force: the user's, else the recipe's, else the hardware default."""
    if settings.gpu_memory_utilization is not None:
        return settings.gpu_memory_utilization
    if recipe is not None and recipe.gpu_memory_utilization is not None:
        return recipe.gpu_memory_utilization
    return hardware.gpu_memory_utilization


def short_bytes(weights: Weights, fit: Fit) -> float:
    """How far the whole build, split over the ranks, exceeds each node's usable memory."""
    return max(0.0, weights.total_bytes / (fit.tp * fit.pp) - fit.budget.usable_bytes)


# --- KV pool ------------------------------------------------------------------


@record
class PoolInputs:
    """The engine settings vLLM sizes its pool with, and where each came from."""

    max_model_len: int | None
    """--max-model-len: the recipe's, else the model's native context (None: unknown)."""
    block_tokens: int | None
    """--block-size as the recipe sets it (None: vLLM's default, grown for hybrids)."""
    batched_tokens: int
    """--max-num-batched-tokens: the recipe's, else vLLM's API-server default."""
    speculative_tokens: int
    """num_speculative_tokens (each costs a linear layer one more state page per request)."""
    ssm_cache_dtype: str
    """--mamba-ssm-cache-dtype (auto: the model dtype)."""
    prefix_caching: bool = False
    """Prefix caching on: vLLM keeps linear-attention states in its "align" mode, one more page per request."""
    draft_layers: int = 0
    """An MTP drafter's layers, which vLLM caches like the target's full-attention layers."""
    origins: tuple[str, ...] = ()
    """Where each figure came from, in the order above, e.g. "the recipe's --max-model-len"."""


@record
class KvPool:
    """The KV cache: what a token costs, how many tokens and sessions the pool holds."""

    shape: KvShape | None
    """Per-rank KV cost from config.json; None when its attention facts are unpublished."""
    basis: str
    """"config" (computed), "measured pool" (derived from a recipe's pool) or "unknown"."""
    bytes_per_token: float | None
    """Per rank; from config.json or from a measured pool."""
    pool_tokens: float | None
    """Tokens the KV budget holds at bytes_per_token."""
    measured: Measurement | None
    """The recipe's measured pool, when it logged one."""
    sessions: int | None
    """Sequences of the workload's context that fit in the KV cache."""
    inputs: PoolInputs | None = None
    """The engine settings the pool was sized with."""
    request_bytes: float | None = None
    """What vLLM reserves per request of max_model_len on one rank (None without config facts)."""


def engine_arg(recipe: Recipe | None, flag: str) -> str | None:
    """The value a recipe passes for a `vllm serve` flag among its extra arguments (`--flag v` or
    `--flag=v`, dashes or underscores), or None."""
    return launch_flag(recipe.extra_args, (flag,)) if recipe is not None else None


def pool_inputs(facts: BuildFacts, recipe: Recipe | None) -> PoolInputs:
    """The settings vLLM sizes the pool with: the recipe's flags, else vLLM's defaults."""
    batched = engine_arg(recipe, "--max-num-batched-tokens")
    ssm = engine_arg(recipe, "--mamba-ssm-cache-dtype")
    spec = recipe.speculative.tokens_per_pass if recipe and recipe.speculative else 0
    window = _window(facts, recipe)
    prefix_on, prefix_note = _prefix_caching(recipe, facts.caveats)
    origins = (
        "the recipe's --max-model-len" if recipe is not None and recipe.max_model_len
        else "the model's native context" if window else "unknown",
        "the recipe's --block-size" if recipe is not None and recipe.block_size else "vLLM's default",
        "the recipe's --max-num-batched-tokens" if batched and batched.isdecimal()
        else "vLLM's API-server default",
        "the recipe's speculative tokens" if spec else "no speculation",
        "the recipe's --mamba-ssm-cache-dtype" if ssm else "the model dtype",
        prefix_note,
    )
    return PoolInputs(max_model_len=window, block_tokens=recipe.block_size if recipe else None,
                      batched_tokens=int(batched) if batched and batched.isdecimal() else VLLM_BATCHED_TOKENS,
                      speculative_tokens=spec, ssm_cache_dtype=ssm or "auto", prefix_caching=prefix_on,
                      draft_layers=_mtp_layers(facts, recipe), origins=origins)


def _mtp_layers(facts: BuildFacts, recipe: Recipe | None) -> int:
    """The MTP layers a recipe's speculation runs (num_nextn_predict_layers, else one): vLLM caches their
    KV beside the target's."""
    spec = recipe.speculative if recipe else None
    if spec is None or spec.method != "mtp":
        return 0
    mtp = facts.model.mtp
    return mtp.layers if mtp and mtp.layers else 1


def kv_pool_for(*, facts: BuildFacts, hardware: Hardware, recipe: Recipe | None, fit: Fit,
                workload: Workload) -> KvPool:
    """The pool this fit leaves, at the workload's context."""
    context, dtype = workload.context_tokens, fit.kv_cache_dtype
    inputs, shape, request, sequence = once(("pool per request", id(facts.model), id(recipe), dtype, fit.tp, fit.pp,
                                             context), _per_request, facts, recipe, dtype, fit.tp, fit.pp, context)
    basis, per_token = _kv_per_token(facts, hardware, shape, fit.tp, fit.pp)
    kv_bytes = fit.budget.kv_bytes
    return KvPool(shape=shape, basis=basis, bytes_per_token=per_token,
                  pool_tokens=pool_tokens(per_token, kv_bytes, request, inputs.max_model_len),
                  measured=measured(recipe, "kv_pool_tokens"),
                  sessions=_sessions(shape, per_token, kv_bytes, context, sequence),
                  inputs=inputs, request_bytes=request)


def _per_request(facts: BuildFacts, recipe: Recipe | None, kv_cache_dtype: str, tp: int, pp: int,
                 context_tokens: int) -> tuple[PoolInputs, KvShape | None, float | None, float | None]:
    """(pool inputs, KV shape, bytes of a request of max-model-len, bytes of a running sequence of the
    context): what the pool's arithmetic reads from the model and the recipe alone, the same for every
    build of the model (`facts` is read for its model only)."""
    attention = facts.model.attention
    inputs = pool_inputs(facts, recipe)
    shape = shape_for(attention, kv_cache_dtype, tp, pp, inputs.ssm_cache_dtype, inputs.draft_layers) \
        if attention else None
    if shape is None:
        return inputs, None, None, None
    sequence = sequence_bytes(shape, context_tokens, inputs.block_tokens, inputs.speculative_tokens,
                              inputs.prefix_caching)
    return inputs, shape, _request_bytes(shape, inputs), sequence


def _request_bytes(shape: KvShape | None, inputs: PoolInputs) -> float | None:
    if shape is None or not inputs.max_model_len:
        return None
    return shape.request_bytes(inputs.max_model_len, inputs.block_tokens, inputs.batched_tokens,
                               inputs.speculative_tokens, inputs.prefix_caching)


def pool_tokens(per_token: float | None, kv_bytes: float, request_bytes: float | None,
                max_model_len: int | None) -> float | None:
    """The pool as vLLM logs it ("GPU KV cache size: N tokens" = int(max concurrency x
    max_model_len), kv_cache_utils.py): how many requests of max_model_len fit, times max_model_len.
    A request's fixed costs (linear-attention states and their speculative copies, a sliding
    window plus a prefill chunk, block rounding) are paid once per request."""
    if not per_token or kv_bytes <= 0:
        return None
    if not request_bytes or not max_model_len:
        return kv_bytes / per_token
    return kv_bytes / request_bytes * max_model_len


def _window(facts: BuildFacts, recipe: Recipe | None) -> int | None:
    """The max_model_len the pool is sized for: the recipe's, else the model's native context."""
    if recipe is not None and recipe.max_model_len:
        return recipe.max_model_len
    return facts.model.context.native_tokens if facts.model.context else None


def _kv_per_token(facts: BuildFacts, hardware: Hardware, shape: KvShape | None,
                  tp: int, pp: int) -> tuple[str, float | None]:
    """KV bytes per token per rank: from config.json, else from a recipe's measured pool."""
    if shape is not None:
        return "config", shape.bytes_per_token
    for recipe in facts.recipes_on(hardware):
        pool = measured(recipe, "kv_pool_tokens")
        if pool is None:
            continue
        kv_bytes = pool.kv_gib * GiB if pool.kv_gib else _recipe_kv_bytes(facts, recipe, hardware)
        if kv_bytes > 0:
            # Per rank, scaled from the recipe's split to this one, assuming the KV splits across ranks.
            return "measured pool", kv_bytes / pool.value * (recipe.tp * recipe.pp) / (tp * pp)
    return "unknown", None


def _recipe_kv_bytes(facts: BuildFacts, recipe: Recipe, hardware: Hardware) -> float:
    """The KV memory per node a recipe had, by the budget arithmetic, when it does not say."""
    used = recipe.gpu_memory_utilization or hardware.gpu_memory_utilization
    loaded = recipe.weights_loaded_gib
    per_node = loaded * GiB if loaded else facts.weights.resident_bytes(recipe.streams_tables) / recipe.nodes
    reserve = reserve_for(facts, recipe, DEFAULT_SETTINGS, recipe.nodes)
    return node_budget(hardware, per_node, used, recipe.kv_cache_gib, reserve).kv_bytes


def _sessions(shape: KvShape | None, per_token: float | None, kv_bytes: float, context_tokens: int,
              sequence: float | None) -> int | None:
    """Sequences of the context that fit in `kv_bytes`: each costs `sequence` bytes (what vLLM allocates
    a running request, from the shape), else the measured pool's bytes per token times the context."""
    if shape is not None and sequence is not None:
        return sessions_of(kv_bytes, sequence)
    if per_token:
        return max(0, int(kv_bytes // (per_token * context_tokens)))
    return None


def kv_bytes_read(shape: KvShape | None, per_token: float | None, context_tokens: int) -> float:
    """KV bytes one rank reads per decoded token at `context_tokens`: what the attention kernel
    reads by config.json's facts (top-k, windows and compression bound it), else a measured pool's
    bytes per token times the context, else nothing (unknown, not counted)."""
    if shape is not None:
        return shape.bytes_read(context_tokens)
    return (per_token or 0.0) * context_tokens


def recipe_kv_read(facts: BuildFacts, recipe: Recipe, hardware: Hardware, context_tokens: int) -> float:
    """`kv_bytes_read` for a recipe's own dtype and split (what calibration predicts with)."""
    attention = facts.model.attention
    ssm = engine_arg(recipe, "--mamba-ssm-cache-dtype") or "auto"
    shape = shape_for(attention, recipe.kv_cache_dtype, recipe.tp, recipe.pp, ssm) if attention else None
    _, per_token = _kv_per_token(facts, hardware, shape, recipe.tp, recipe.pp)
    return kv_bytes_read(shape, per_token, context_tokens)


# --- decode -------------------------------------------------------------------


@record
class DecodeSpeed:
    """Tokens per second for one stream: the model's estimate and the recipe's measurement."""

    estimate: DecodeEstimate | None
    """Ceiling, expected speed (all streams together) and range; None without active parameters."""
    measured: Measurement | None
    """The recipe's decode measurement at the workload's streams (single-stream or aggregate)."""
    tok_s: float | None
    """The speed each stream's turn is costed at: measured when the recipe measured it, else expected
    (`stream_speed`)."""
    eager: bool = False
    """The execution mode the estimate assumed (True: without CUDA graphs)."""
    streams: int = 1
    """Sequences decoding at once."""


def stream_speed(estimate: DecodeEstimate | None, measurement: Measurement | None, streams: int) -> float | None:
    """Tokens per second each stream sees: the measurement (single-stream, or aggregate / streams),
    else the estimate's."""
    if measurement is not None:
        return measurement.value if measurement.metric == "decode_tok_s" else measurement.value / streams
    return estimate.per_stream_tok_s if estimate else None


def decode_speed(*, facts: BuildFacts, hardware: Hardware, recipe: Recipe | None, fit: Fit, pool: KvPool,
                 workload: Workload, constants: SpeedConstants, eager: bool | None = None) -> DecodeSpeed:
    """The decode estimate at the workload's context and streams, in the recipe's mode unless `eager`
    says otherwise, beside the recipe's measurement at those streams."""
    kv_read = _kv_read(pool, workload.context_tokens)
    streams = workload.streams
    mode = eager if eager is not None else bool(recipe and recipe.enforce_eager)
    # The inputs and what a pass costs beside the weights: once per model, recipe and split in a ranking.
    shared = once(("decode pass", id(facts.model), id(recipe), fit.tp, fit.pp, kv_read, streams, mode,
                   id(constants)), _shared_decode, facts, recipe, fit.tp, fit.pp, kv_read, streams, mode, constants)
    estimate = None
    if shared is not None:
        estimate = _estimate_for_build(facts, recipe, *shared, hardware.memory_bandwidth_gb_s, constants)
    same_mode = eager is None or recipe is None or eager == recipe.enforce_eager
    found = (measured(recipe, "decode_tok_s") if streams == 1 else measured(recipe, "aggregate_tok_s", streams))
    if not same_mode:
        found = None
    return DecodeSpeed(estimate=estimate, measured=found, tok_s=stream_speed(estimate, found, streams),
                       eager=mode if shared is not None else bool(eager), streams=streams)


def _shared_decode(facts: BuildFacts, recipe: Recipe | None, tp: int, pp: int, kv_read: float, streams: int,
                   eager: bool, constants: SpeedConstants) -> tuple[DecodeInputs, PassCost] | None:
    """This build's decode inputs in mode `eager` and their `pass_cost`, None without active parameters.
    Only the weights' own fields differ between builds of the model (`_estimate_for_build`)."""
    inputs = decode_inputs(facts.model, facts.build.format, facts.weights, recipe, tp, pp, kv_read, streams)
    if inputs is None:
        return None
    if inputs.eager != eager:
        inputs = replace(inputs, eager=eager)
    return inputs, pass_cost(inputs, constants)


def _estimate_for_build(facts: BuildFacts, recipe: Recipe | None, inputs: DecodeInputs, cost: PassCost,
                        bandwidth_gb_s: float, constants: SpeedConstants) -> DecodeEstimate:
    """The decode estimate of this build's weights, with the inputs and pass cost of the model's."""
    weight_format, weights, active_b = facts.build.format, facts.weights, facts.model.params.active_b
    spec = recipe.speculative if recipe else None
    draft = (_draft_bytes(spec, weights, active_b / facts.model.params.total_b, inputs.tp)
             if spec and active_b is not None else 0.0)
    return estimate_for_weights(inputs, cost, FORMATS[weight_format].nominal_bits, weights.stored_bits,
                                weight_class(weight_format), draft, bandwidth_gb_s, constants)


def _kv_read(pool: KvPool, context_tokens: int) -> float:
    """`kv_bytes_read` of the pool at the context: from its shape once per model in a ranking."""
    if pool.shape is None:
        return kv_bytes_read(None, pool.bytes_per_token, context_tokens)
    return once(("kv read", id(pool.shape), context_tokens), KvShape.bytes_read, pool.shape, context_tokens)


DEFAULT_DECODE_CONTEXT = 2_000
"""Context assumed for a decode measurement that does not state one (a short prompt)."""


def decode_at(facts_model: Model, weight_format: str, weights: Weights, recipe: Recipe | None, tp: int, pp: int,
              pool: KvPool, hardware: Hardware, constants: SpeedConstants, m: Measurement) -> DecodeEstimate | None:
    """The estimate at a measurement's own context, streams and mode: the like-for-like prediction
    `show` prints beside it."""
    kv_read = kv_bytes_read(pool.shape, pool.bytes_per_token, m.context_tokens or DEFAULT_DECODE_CONTEXT)
    inputs = decode_inputs(facts_model, weight_format, weights, recipe, tp, pp, kv_read, m.streams)
    if inputs is None:
        return None
    return estimate_decode(as_measured(inputs, m), hardware.memory_bandwidth_gb_s, constants)


def as_measured(inputs: DecodeInputs, m: Measurement) -> DecodeInputs:
    """The step inputs under the measurement's own conditions where it states them: its execution
    mode, and its own draft acceptance when the step speculates. The fit and `show`'s like-for-like
    prediction both compare a measurement with this."""
    if m.enforce_eager is not None:
        inputs = replace(inputs, eager=m.enforce_eager)
    if m.acceptance is not None and inputs.spec_tokens:
        inputs = replace(inputs, acceptance=m.acceptance)
    return inputs


def decode_inputs(model: Model, weight_format: str, weights: Weights, recipe: Recipe | None,
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
        nominal_bits=FORMATS[weight_format].nominal_bits,
        stored_bits=weights.stored_bits,
        tp=tp, pp=pp, kv_bytes_read=kv_read,
        layers=attention.layers if attention else None,
        eager=bool(recipe and recipe.enforce_eager),
        weight_class=weight_class(weight_format),
        spec_tokens=spec.tokens_per_pass if spec else 0,
        drafter_steps=(1 if spec.method in BLOCK_DRAFTERS else spec.tokens_per_pass) if spec else 0,
        draft_bytes_per_pass=_draft_bytes(spec, weights, params.active_b / params.total_b, tp) if spec else 0.0,
        acceptance=spec.acceptance if spec else None,
        hidden_size=attention.hidden_size if attention else None,
        streams=streams,
        tables=_tables_label(model) if model.tables else "",
    )


def _tables_label(model: Model) -> str:
    """"PLE", "Engram" or "PLE + Engram": the per-token tables a decode step reads."""
    return " + ".join(dict.fromkeys(t.kind.upper() if t.kind == "ple" else t.kind.title() for t in model.tables))


def _draft_bytes(spec: Speculative, weights: Weights, active_share: float, tp: int) -> float:
    """Bytes the drafter reads per pass on one node. An MTP head is one more layer of the
    model, so each proposed token reads its active share (the model's active / total); a
    DFlash or DSpark drafter proposes the whole block in one pass; other drafts run per token."""
    if spec.method == "mtp":
        return weights.mtp_bytes * min(active_share, 1.0) / tp * spec.tokens_per_pass
    draft = (spec.draft_size_gb or 0.0) * GB / tp
    return draft if spec.method in BLOCK_DRAFTERS else draft * spec.tokens_per_pass


# --- first token --------------------------------------------------------------


@record
class FirstToken:
    """The wait before the first token: what prefix caching saves, and the prefill rate."""

    prefix_caching: bool
    """Prefix caching is on for this recipe and build."""
    prefix_caching_note: str
    """Why it is on or off, in a sentence."""
    uncached_tokens: int
    """Prompt tokens computed afresh each turn."""
    prefill_tok_s: float | None
    """Prompt tokens per second across the cluster."""
    prefill_basis: str
    """"measured" (at this depth, or at an unstated one), "scaled" (measured at another depth and
    scaled by the model to this one), "estimated" or "unknown"."""
    prefill_measured: Measurement | None
    """The recipe's prefill measurement, when it has one."""
    prefill_inputs: PrefillInputs | None
    """What each uncached prompt token computes and streams, when the rate is estimated."""
    ttft_s: float | None
    """Seconds to the first token: measured at this context and reuse, else uncached tokens at the
    prefill rate."""
    ttft_measured: Measurement | None = None
    """A first token a bench run measured at this context and reuse."""


def first_token(*, model: Model, recipe: Recipe | None, nodes: int, caveats: tuple[Caveat, ...],
                workload: Workload, constants: SpeedConstants, weight_format: str = "bf16",
                weight_bytes: float = 0.0, kv_cache_dtype: str = "auto") -> FirstToken:
    """The first token of a turn of this workload."""
    prefix_on, note = _prefix_caching(recipe, caveats)
    uncached = workload.context_tokens if not prefix_on else round(workload.context_tokens
                                                                   * (1 - workload.prefix_reuse))
    rate, basis, measurement, point = prefill(model, recipe, nodes, workload.context_tokens, uncached, constants,
                                              weight_format, weight_bytes, kv_cache_dtype)
    ttft = measured_ttft(recipe, workload.context_tokens, uncached)
    return FirstToken(prefix_caching=prefix_on, prefix_caching_note=note, uncached_tokens=uncached,
                      prefill_tok_s=rate, prefill_basis=basis, prefill_measured=measurement, prefill_inputs=point,
                      ttft_s=ttft.value if ttft else (uncached / rate if rate else None), ttft_measured=ttft)


def _prefix_caching(recipe: Recipe | None, caveats: tuple[Caveat, ...]) -> tuple[bool, str]:
    for caveat in caveats:
        if caveat.kind in PREFIX_OFF_KINDS:
            return False, caveat.explanation
    if recipe is not None and not recipe.prefix_caching:
        return False, f"the recipe ({recipe.title}) disables prefix caching"
    return True, "prefix caching on (vLLM's default)"


def prefill(model: Model, recipe: Recipe | None, nodes: int, context_tokens: int, uncached: int,
            constants: SpeedConstants, weight_format: str = "bf16", weight_bytes: float = 0.0,
            kv_cache_dtype: str = "auto") -> tuple[float | None, str, Measurement | None, PrefillInputs | None]:
    """(prompt tok/s, basis, measurement, inputs) for `uncached` new tokens on top of a cached prefix, the
    transformer's `weight_bytes` streamed once per prefill chunk.

    A measured rate holds at its own depth: the recipe's prefill measurement nearest this one in
    attended depth is used as measured when the depth is the same (or the measurement states no
    prompt length, so its depth is unknown), and otherwise scaled by the model's ratio of its own
    estimates here and there (attention FLOPs, the indexer's scoring, K/V reads and the weights per
    chunk all move with depth): basis "scaled"."""
    p = model.params
    extra = recipe.extra_args if recipe else ()

    def inputs_at(attended: float, chunk: int | None) -> PrefillInputs | None:
        if p.active_b is None:
            return None
        return prefill_inputs(nodes, p.active_b * 1e9, p.total_b * 1e9, p.routed_experts, p.experts_per_token,
                              weight_format, model.attention, attended, engine=constants.engine,
                              kv_cache_dtype=kv_cache_dtype, weight_bytes=weight_bytes, chunk_tokens=chunk,
                              extra_args=extra)

    # New tokens attend to the cached prefix plus, on average, half of themselves.
    attended = context_tokens - uncached / 2
    point = inputs_at(attended, prefill_chunk(constants.engine, extra, uncached))
    measurement = _nearest_prefill(recipe, attended)
    if measurement is not None:
        depth = measured_attended(measurement)
        there = None if depth is None else inputs_at(depth, prefill_chunk(constants.engine, extra,
                                                                          measurement.context_tokens,
                                                                          measurement.chunk_tokens))
        scale = _depth_scale(point, there, constants)
        if scale is None:
            return measurement.value, "measured", measurement, point
        return measurement.value * scale, "scaled", measurement, point
    if point is None:
        return None, "unknown", None, None
    rate = estimate_prefill(point, constants)
    return rate, ("estimated" if rate else "unknown"), None, point


def measured_attended(m: Measurement) -> float | None:
    """Tokens the average prompt token of a prefill measurement attended to (its cached depth plus
    half its prompt), or None when the source states no prompt length."""
    return None if m.context_tokens is None else (m.depth_tokens or 0) + m.context_tokens / 2


def _nearest_prefill(recipe: Recipe | None, attended: float) -> Measurement | None:
    """The recipe's prefill measurement nearest `attended` in depth (by ratio; the newest of equals,
    and one of unstated depth only when none states it)."""
    if recipe is None:
        return None
    rows = [m for m in reversed(recipe.measurements) if m.metric == "prefill_tok_s" and m.streams == 1]
    stated = [(abs(math.log(max(depth, 1.0) / max(attended, 1.0))), i, m) for i, m in enumerate(rows)
              if (depth := measured_attended(m)) is not None]
    if not stated:
        return rows[0] if rows else None
    return min(stated, key=lambda t: (t[0], t[1]))[2]


def _depth_scale(here: PrefillInputs | None, there: PrefillInputs | None, c: SpeedConstants) -> float | None:
    """The model's rate here over its rate at the measurement (None: no model, or the same point)."""
    if here is None or there is None:
        return None
    rate_here, rate_there = estimate_prefill(here, c), estimate_prefill(there, c)
    if not rate_here or not rate_there or abs(rate_here / rate_there - 1) < 0.005:
        return None
    return rate_here / rate_there
