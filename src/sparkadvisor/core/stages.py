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
from sparkadvisor.core.schema import Attention, Caveat, Hardware, Measurement, Model, Recipe, Speculative
from sparkadvisor.core.speed import (
    AttentionTerms,
    DecodeEstimate,
    DecodeInputs,
    PassCost,
    PrefillInputs,
    SpeedConstants,
    attention_terms,
    dense_and_expert_params,
    estimate_decode,
    estimate_for_weights,
    estimate_prefill,
    inputs_for_weights,
    launch_flag,
    pass_cost,
    prefill_chunk,
    prefill_inputs,
    prefill_kv_gb,
    read_bound,
    weight_class,
)
from sparkadvisor.core.targets import usable_context
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


@record(kw_only=False)
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


def fit_on(*, facts: BuildFacts, hardware: Hardware, nodes: int, recipe: Recipe | None, settings: Settings,
           split: Split | None = None) -> Fit:
    """The fit on `nodes` of `hardware`; `nodes_needed` asks the same question of each size. `split`: the
    model's `split_and_terms`, when already worked out."""
    tp, pp, reason, kv_cache_dtype, terms = split or split_and_terms(facts, hardware, nodes, recipe, settings)
    budget = node_budget(hardware, terms.weights_per_node(facts.weights), terms.utilization, terms.kv_pinned_gib,
                         terms.reserve, terms.weights_loaded_gib is not None)
    # A recipe's measured decode proves it runs only with the recipe's own memory settings.
    by_recipe = not budget.fits and terms.runs_as_measured
    fits = budget.fits or by_recipe
    needed = _nodes_needed(facts, hardware, settings, nodes, fits, budget)
    return Fit(tp, pp, reason, budget, fits, by_recipe, needed, kv_cache_dtype)  # positional: see plan.evaluate


@record(kw_only=False)
class NodeTerms:
    """What a node's budget is drawn up with beside the build's own weights, under one recipe, split and
    the user's settings: the same for every build of a model (a ranking works it out once per model)."""

    ranks: int
    """tp x pp."""
    utilization: float
    """--gpu-memory-utilization in force (`utilization`)."""
    kv_pinned_gib: float | None
    """The recipe's pinned KV cache per node, unless the user sets the utilization."""
    reserve: Reserve
    """What vLLM keeps beside weights and KV (`reserve_for`)."""
    weights_loaded_gib: float | None
    """The recipe's logged weights per rank, when it splits over exactly these ranks."""
    streams_tables: bool
    """The recipe keeps the per-token tables on disk."""
    runs_as_measured: bool
    """A measured decode shows the recipe runs, with its own memory settings (no override)."""

    def weights_per_node(self, weights: Weights) -> float:
        """The weights a node holds: the recipe's logged per-rank figure when it has one, else the stored share."""
        loaded = self.weights_loaded_gib
        return loaded * GiB if loaded is not None else weights.resident_bytes(self.streams_tables) / self.ranks


def node_terms(facts: BuildFacts, hardware: Hardware, recipe: Recipe | None, settings: Settings,
               ranks: int) -> NodeTerms:
    """The budget's terms on `ranks` under `recipe` (`facts` is read for its model only)."""
    return NodeTerms(ranks, utilization(settings, recipe, hardware),
                     recipe.kv_cache_gib if recipe and settings.gpu_memory_utilization is None else None,
                     reserve_for(facts, recipe, settings, ranks), _loaded_gib(recipe, ranks),
                     bool(recipe and recipe.streams_tables), _runs_as_measured(recipe, settings))


Split = tuple[int, int, str, str, NodeTerms]
"""(tp, pp, why, --kv-cache-dtype in force, the budget's terms): `split_and_terms`."""


def split_and_terms(facts: BuildFacts, hardware: Hardware, nodes: int, recipe: Recipe | None,
                    settings: Settings) -> Split:
    """(tp, pp, why, --kv-cache-dtype in force, the budget's terms) of a fit: what the model, the recipe
    and the settings decide whatever the build's weights."""
    tp, pp, reason = valid_parallelism(facts.model, nodes, recipe)
    kv_cache_dtype = settings.kv_cache_dtype or (recipe.kv_cache_dtype if recipe else "auto")
    return tp, pp, reason, kv_cache_dtype, node_terms(facts, hardware, recipe, settings, tp * pp)


def _fits_at(facts: BuildFacts, hardware: Hardware, recipe: Recipe | None, settings: Settings, ranks: int) -> bool:
    """Whether the build fits on `ranks` under `recipe`, as `fit_on` judges it, without the budget record."""
    terms = node_terms(facts, hardware, recipe, settings, ranks)
    return (node_fits(hardware, terms.weights_per_node(facts.weights), terms.utilization, terms.kv_pinned_gib,
                      terms.reserve) or terms.runs_as_measured)


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


@record(kw_only=False)
class PoolInputs:
    """The engine settings vLLM sizes its pool with, and where each came from."""

    max_model_len: int | None
    """--max-model-len: the recipe's, else the model's native context (None: unknown); the usable context."""
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


@record(kw_only=False)
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
    inputs: PoolInputs
    """The engine settings the pool was sized with."""
    request_bytes: float | None = None
    """What vLLM reserves per request of max_model_len on one rank (None without config facts)."""
    bytes_read: float = 0.0
    """KV bytes one rank reads per decoded token at the workload's context (`kv_bytes_read`)."""


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
    prefix_on, prefix_note = prefix_caching(recipe, facts.caveats)
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
    # Positional (see plan.evaluate): max_model_len, block_tokens, batched_tokens, speculative_tokens,
    # ssm_cache_dtype, prefix_caching, draft_layers, origins.
    return PoolInputs(window, recipe.block_size if recipe else None,
                      int(batched) if batched and batched.isdecimal() else VLLM_BATCHED_TOKENS, spec, ssm or "auto",
                      prefix_on, _mtp_layers(facts, recipe), origins)


def _mtp_layers(facts: BuildFacts, recipe: Recipe | None) -> int:
    """The MTP layers a recipe's speculation runs (num_nextn_predict_layers, else one): vLLM caches their
    KV beside the target's."""
    spec = recipe.speculative if recipe else None
    if spec is None or spec.method != "mtp":
        return 0
    mtp = facts.model.mtp
    return mtp.layers if mtp and mtp.layers else 1


def kv_pool_for(*, facts: BuildFacts, hardware: Hardware, recipe: Recipe | None, fit: Fit, workload: Workload,
                per_request: PerRequest | None = None) -> KvPool:
    """The pool this fit leaves, at the workload's context (`per_request`: the model's `pool_per_request`,
    when already worked out)."""
    context = workload.context_tokens
    inputs, shape, request, sequence, read = per_request or pool_per_request(facts, recipe, fit.kv_cache_dtype,
                                                                              fit.tp, fit.pp, context)
    basis, per_token = _kv_per_token(facts, hardware, shape, fit.tp, fit.pp)
    kv_bytes = fit.budget.kv_bytes
    # Positional (see plan.evaluate): shape, basis, bytes_per_token, pool_tokens, measured, sessions, inputs,
    # request_bytes, bytes_read.
    return KvPool(shape, basis, per_token, pool_tokens(per_token, kv_bytes, request, inputs.max_model_len),
                  measured(recipe, "kv_pool_tokens"), _sessions(shape, per_token, kv_bytes, context, sequence),
                  inputs, request, read if shape is not None else kv_bytes_read(None, per_token, context))


PerRequest = tuple[PoolInputs, KvShape | None, float | None, float | None, float]
"""(pool inputs, KV shape, request bytes, sequence bytes, bytes read): `pool_per_request`."""


def pool_per_request(facts: BuildFacts, recipe: Recipe | None, kv_cache_dtype: str, tp: int, pp: int,
                     context_tokens: int) -> PerRequest:
    """(pool inputs, KV shape, bytes of a request of max-model-len, bytes of a running sequence of the
    context, bytes a decode step reads at the context): what the pool's arithmetic reads from the model
    and the recipe alone, the same for every build of the model (`facts` is read for its model only)."""
    attention = facts.model.attention
    inputs = pool_inputs(facts, recipe)
    shape = shape_for(attention, kv_cache_dtype, tp, pp, inputs.ssm_cache_dtype, inputs.draft_layers) \
        if attention else None
    if shape is None:
        return inputs, None, None, None, 0.0
    sequence = sequence_bytes(shape, context_tokens, inputs.block_tokens, inputs.speculative_tokens,
                              inputs.prefix_caching)
    return inputs, shape, _request_bytes(shape, inputs), sequence, shape.bytes_read(context_tokens)


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
    """The max_model_len the pool is sized for: the usable context (the recipe's, else the model's native)."""
    return usable_context(facts.model, recipe).tokens


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


@record(kw_only=False)
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
                 workload: Workload, constants: SpeedConstants, eager: bool | None = None,
                 pass_terms: PassTerms | None = None) -> DecodeSpeed:
    """The decode estimate at the workload's context and streams, in the recipe's mode unless `eager`
    says otherwise, beside the recipe's measurement at those streams (`pass_terms`: the model's
    `shared_decode` at the pool's KV read, when already worked out)."""
    kv_read = pool.bytes_read
    streams = workload.streams
    mode = decode_mode(recipe, eager)
    # The inputs and what a pass costs beside the weights: once per model, recipe, split and KV read in a ranking.
    shared = pass_terms or once(("decode pass", id(facts.model), id(recipe), fit.tp, fit.pp, kv_read, streams, mode,
                                 id(constants)), shared_decode, facts, recipe, fit.tp, fit.pp, kv_read, streams, mode,
                                constants)
    inputs, cost = shared
    estimate = None
    if inputs is not None and cost is not None:
        estimate = _estimate_for_build(facts, recipe, inputs, cost, hardware.memory_bandwidth_gb_s, constants)
    same_mode = eager is None or recipe is None or eager == recipe.enforce_eager
    found = (measured(recipe, "decode_tok_s") if streams == 1 else measured(recipe, "aggregate_tok_s", streams))
    if not same_mode:
        found = None
    # Positional (see plan.evaluate): estimate, measured, tok_s, eager, streams.
    return DecodeSpeed(estimate, found, stream_speed(estimate, found, streams),
                       mode if inputs is not None else bool(eager), streams)


def decode_mode(recipe: Recipe | None, eager: bool | None) -> bool:
    """Whether decode runs without CUDA graphs: the user's --eager/--cuda-graphs, else the recipe's."""
    return eager if eager is not None else bool(recipe and recipe.enforce_eager)


PassTerms = tuple[DecodeInputs, PassCost] | tuple[None, None]
"""(decode inputs, `pass_cost`), or (None, None) without active parameters: `shared_decode`."""


def shared_decode(facts: BuildFacts, recipe: Recipe | None, tp: int, pp: int, kv_read: float, streams: int,
                  eager: bool, constants: SpeedConstants) -> PassTerms:
    """This build's decode inputs in mode `eager` and their `pass_cost`, (None, None) without active
    parameters. Only the weights' own fields differ between builds of the model (`_estimate_for_build`)."""
    inputs = decode_inputs(facts.model, facts.build.format, facts.weights, recipe, tp, pp, kv_read, streams)
    if inputs is None:
        return None, None
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
    estimate = estimate_for_weights(inputs, cost, FORMATS[weight_format].nominal_bits, weights.stored_bits,
                                    weight_class(weight_format), draft, bandwidth_gb_s, constants)
    bound = read_bound(facts.build.decode_read, constants.engine, inputs.tp, bandwidth_gb_s)
    return estimate if bound is None else replace(estimate, read_bound_tok_s=bound)


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
    return DecodeInputs(  # positional (see plan.evaluate), one field a line in their order
        params.active_b * 1e9,  # active_params
        params.total_b * 1e9,  # total_params
        params.routed_experts,  # routed_experts
        params.experts_per_token,  # experts_per_token
        FORMATS[weight_format].nominal_bits,  # nominal_bits
        weights.stored_bits,  # stored_bits
        tp, pp, kv_read,  # tp, pp, kv_bytes_read
        attention.layers if attention else None,  # layers
        bool(recipe and recipe.enforce_eager),  # eager
        weight_class(weight_format),  # weight_class
        spec.tokens_per_pass if spec else 0,  # spec_tokens
        (1 if spec.method in BLOCK_DRAFTERS else spec.tokens_per_pass) if spec else 0,  # drafter_steps
        _draft_bytes(spec, weights, params.active_b / params.total_b, tp) if spec else 0.0,  # draft_bytes_per_pass
        spec.acceptance if spec else None,  # acceptance
        attention.hidden_size if attention else None,  # hidden_size
        streams,  # streams
        _tables_label(model) if model.tables else "",  # tables
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


@record(kw_only=False)
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
                weight_bytes: float = 0.0, kv_cache_dtype: str = "auto",
                model_prefill: ModelPrefill | None = None) -> FirstToken:
    """The first token of a turn of this workload (`model_prefill`: the model's `prefill_shared` at
    this turn's uncached tokens, when already worked out)."""
    prefix_on, note = prefix_caching(recipe, caveats)
    uncached = uncached_tokens(workload, prefix_on)
    rate, basis, measurement, point = prefill(model, recipe, nodes, workload.context_tokens, uncached, constants,
                                              weight_format, weight_bytes, kv_cache_dtype, model_prefill)
    ttft = measured_ttft(recipe, workload.context_tokens, uncached)
    # Positional (see plan.evaluate): prefix_caching, prefix_caching_note, uncached_tokens, prefill_tok_s,
    # prefill_basis, prefill_measured, prefill_inputs, ttft_s, ttft_measured.
    return FirstToken(prefix_on, note, uncached, rate, basis, measurement, point,
                      ttft.value if ttft else (uncached / rate if rate else None), ttft)


def uncached_tokens(workload: Workload, prefix_on: bool) -> int:
    """Prompt tokens computed afresh each turn: the whole context, or what prefix caching does not reuse."""
    return workload.context_tokens if not prefix_on else round(workload.context_tokens * (1 - workload.prefix_reuse))


def prefix_caching(recipe: Recipe | None, caveats: tuple[Caveat, ...]) -> tuple[bool, str]:
    """(on, why in a sentence): a caveat that turns it off, else the recipe's setting."""
    for caveat in caveats:
        if caveat.kind in PREFIX_OFF_KINDS:
            return False, caveat.explanation
    if recipe is not None and not recipe.prefix_caching:
        return False, f"the recipe ({recipe.title}) disables prefix caching"
    return True, "prefix caching on (vLLM's default)"


def prefill(model: Model, recipe: Recipe | None, nodes: int, context_tokens: int, uncached: int,
            constants: SpeedConstants, weight_format: str = "bf16", weight_bytes: float = 0.0,
            kv_cache_dtype: str = "auto", shared: ModelPrefill | None = None,
            ) -> tuple[float | None, str, Measurement | None, PrefillInputs | None]:
    """(prompt tok/s, basis, measurement, inputs) for `uncached` new tokens on top of a cached prefix, the
    transformer's `weight_bytes` streamed once per prefill chunk.

    A measured rate holds at its own depth: the recipe's prefill measurement nearest this one in
    attended depth is used as measured when the depth is the same (or the measurement states no
    prompt length, so its depth is unknown), and otherwise scaled by the model's ratio of its own
    estimates here and there (attention FLOPs, the indexer's scoring, K/V reads and the weights per
    chunk all move with depth): basis "scaled"."""
    extra = recipe.extra_args if recipe else ()
    # What every build of the model shares here: once per model, recipe and depth in a ranking.
    attended, figures, terms = shared or once(("prefill", id(model), id(recipe), nodes, context_tokens, uncached,
                                               kv_cache_dtype, id(constants)), prefill_shared, model, recipe, nodes,
                                              context_tokens, uncached, kv_cache_dtype, constants)
    point = None if figures is None else inputs_for_weights(*figures, weight_format, constants.engine, weight_bytes,
                                                            extra)
    measurement = _nearest_prefill(recipe, attended)
    if measurement is not None:
        depth = measured_attended(measurement)
        there = None if depth is None else _prefill_point(model, nodes, depth, prefill_chunk(
            constants.engine, extra, measurement.context_tokens, measurement.chunk_tokens), constants, weight_format,
            weight_bytes, kv_cache_dtype, extra)
        scale = _depth_scale(point, there, constants)
        if scale is None:
            return measurement.value, "measured", measurement, point
        return measurement.value * scale, "scaled", measurement, point
    if point is None:
        return None, "unknown", None, None
    rate = estimate_prefill(point, constants, terms)
    return rate, ("estimated" if rate else "unknown"), None, point


PrefillFigures = tuple[int, float, float, Attention | None, float, float, int | None]
"""(nodes, dense params, expert params, attention, attended tokens, K/V GB, chunk tokens): the leading
arguments of `inputs_for_weights`."""
ModelPrefill = tuple[float, PrefillFigures | None, AttentionTerms | None]
"""(attended tokens, `PrefillFigures`, `attention_terms`): `prefill_shared`."""


def prefill_shared(model: Model, recipe: Recipe | None, nodes: int, context_tokens: int, uncached: int,
                   kv_cache_dtype: str, constants: SpeedConstants) -> ModelPrefill:
    """(attended tokens, the leading arguments of `inputs_for_weights`, `attention_terms`) of `prefill`:
    what the model, the recipe and the depth decide whatever the build's format (None without active
    parameters)."""
    p = model.params
    # New tokens attend to the cached prefix plus, on average, half of themselves.
    attended = context_tokens - uncached / 2
    if p.active_b is None:
        return attended, None, None
    chunk = prefill_chunk(constants.engine, recipe.extra_args if recipe else (), uncached)
    dense, expert = dense_and_expert_params(p.active_b * 1e9, p.total_b * 1e9, p.routed_experts, p.experts_per_token)
    kv_gb = prefill_kv_gb(model.attention, attended, nodes, kv_cache_dtype)
    figures = (nodes, dense, expert, model.attention, attended, kv_gb, chunk)
    return attended, figures, attention_terms(model.attention, attended, nodes, constants.link_gb_s)


def _prefill_point(model: Model, nodes: int, attended: float, chunk: int | None, constants: SpeedConstants,
                   weight_format: str, weight_bytes: float, kv_cache_dtype: str,
                   extra: tuple[str, ...]) -> PrefillInputs | None:
    """What one prompt token computes at `attended` depth for this build, None without active parameters."""
    p = model.params
    if p.active_b is None:
        return None
    return prefill_inputs(nodes, p.active_b * 1e9, p.total_b * 1e9, p.routed_experts, p.experts_per_token,
                          weight_format, model.attention, attended, engine=constants.engine,
                          kv_cache_dtype=kv_cache_dtype, weight_bytes=weight_bytes, chunk_tokens=chunk,
                          extra_args=extra)


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

