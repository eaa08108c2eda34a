"""The second stage, `kv_pool_for` -> `KvPool`: what a token of KV costs per rank, the pool the
fit's budget leaves as vLLM sizes it, and the sessions of the workload's context it holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkadvisor.core.kv import VLLM_BATCHED_TOKENS, KvShape, sequence_bytes, sessions_of, shape_for
from sparkadvisor.core.memory import node_budget
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Hardware, Measurement, Model, Recipe
from sparkadvisor.core.stages.fit import Fit, reserve_for
from sparkadvisor.core.stages.recipe import engine_arg, measured, prefix_caching, recipe_batched_tokens
from sparkadvisor.core.targets import NATIVE_ORIGIN, usable_context
from sparkadvisor.core.units import GiB
from sparkadvisor.core.workload import DEFAULT_SETTINGS, Settings, Workload

if TYPE_CHECKING:
    from sparkadvisor.core.index import BuildFacts


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
    limit: int | None = None
    """The user's --max-model-len, a ceiling on `max_model_len` (`usable_context`)."""
    batched_set: bool = False
    """`batched_tokens` is the user's --max-num-batched-tokens, which an export passes itself."""


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
    """Sequences of the workload's context that fit in the pool the table shows: the measured one when
    the recipe logged one, else the model's (`modelled_sessions`)."""
    inputs: PoolInputs
    """The engine settings the pool was sized with."""
    request_bytes: float | None = None
    """What vLLM reserves per request of max_model_len on one rank (None without config facts)."""
    bytes_read: float = 0.0
    """KV bytes one rank reads per decoded token at the workload's context (`kv_bytes_read`)."""
    modelled_sessions: int | None = None
    """Sequences of the workload's context that fit in the model's own pool (`pool_tokens`)."""
    set_aside: str = ""
    """The settings that size this pool otherwise than the recipe's logged one was (e.g. "--gpu-memory-utilization
    0.5"), when the recipe logged one: `measured` is then None, the logged pool describing another server."""


def pool_inputs(facts: BuildFacts, recipe: Recipe | None, prefix: tuple[bool, str] | None = None,
                limit: int | None = None, batched_set: int | None = None) -> PoolInputs:
    """The settings vLLM sizes the pool with: the user's, else the recipe's flags, else vLLM's defaults
    (`prefix`: prefix caching on and why, by the plan's caveats, the build's and the recipe's; else by the
    build's; `limit`: the user's --max-model-len; `batched_set`: the user's --max-num-batched-tokens)."""
    own = recipe_batched_tokens(recipe)
    ssm = engine_arg(recipe, "--mamba-ssm-cache-dtype")
    spec = recipe.speculative.tokens_per_pass if recipe and recipe.speculative else 0
    usable = usable_context(facts.model, recipe, limit)
    prefix_on, prefix_note = prefix or prefix_caching(recipe, facts.caveats)
    origins = (
        CONTEXT_ORIGINS[usable.basis] if not usable.asked else "the longest this build serves here",
        "the recipe's --block-size" if recipe is not None and recipe.block_size else "vLLM's default",
        "--max-num-batched-tokens as set" if batched_set
        else "the recipe's --max-num-batched-tokens" if own else "vLLM's API-server default",
        "the recipe's speculative tokens" if spec else "no speculation",
        "the recipe's --mamba-ssm-cache-dtype" if ssm else "the model dtype",
        prefix_note,
    )
    # Positional (see plan.evaluate): max_model_len, block_tokens, batched_tokens, speculative_tokens,
    # ssm_cache_dtype, prefix_caching, draft_layers, origins, limit, batched_set.
    return PoolInputs(usable.tokens, recipe.block_size if recipe else None,
                      batched_set or own or VLLM_BATCHED_TOKENS, spec, ssm or "auto",
                      prefix_on, _mtp_layers(facts, recipe), origins, limit, bool(batched_set))


CONTEXT_ORIGINS = {"setting": "--max-model-len as set", "recipe": "the recipe's --max-model-len",
                   "native": NATIVE_ORIGIN, "pool": NATIVE_ORIGIN, "unknown": "unknown"}
"""Where the max-model-len the pool is sized for comes from, by the usable context's basis."""


def _mtp_layers(facts: BuildFacts, recipe: Recipe | None) -> int:
    """The MTP layers a recipe's speculation runs (num_nextn_predict_layers, else one): vLLM caches their
    KV beside the target's. A separate draft model under the mtp method (Gemma 4's assistant) is not the
    target's MTP layers: none are counted."""
    spec = recipe.speculative if recipe else None
    if spec is None or spec.method != "mtp" or spec.draft_repo:
        return 0
    mtp = facts.model.mtp
    return mtp.layers if mtp and mtp.layers else 1


def kv_pool_for(*, facts: BuildFacts, hardware: Hardware, recipe: Recipe | None, fit: Fit, workload: Workload,
                per_request: PerRequest | None = None, settings: Settings = DEFAULT_SETTINGS) -> KvPool:
    """The pool this fit leaves, at the workload's context (`per_request`: the model's `pool_per_request`,
    when already worked out). The recipe's logged pool stands for it only where the settings size the pool as
    the recipe did (`resized_by`)."""
    context = workload.context_tokens
    inputs, shape, request, sequence, read = per_request or pool_per_request(facts, recipe, fit.kv_cache_dtype,
                                                                              fit.tp, fit.pp, context)
    basis, per_token = _kv_per_token(facts, hardware, shape, fit.tp, fit.pp)
    kv_bytes = fit.budget.kv_bytes
    pool, logged = pool_tokens(per_token, kv_bytes, request, inputs.max_model_len), measured(recipe, "kv_pool_tokens")
    resizable = logged is not None and settings is not DEFAULT_SETTINGS
    aside = resized_by(facts.model, recipe, hardware, settings, inputs) if resizable else ""
    logged = None if aside else logged
    modelled = _sessions(shape, per_token, kv_bytes, context, sequence)
    # The logged pool, as the KV memory that holds it at the model's cost per token and per request.
    shown = _sessions(shape, per_token, kv_bytes * logged.value / pool, context, sequence) if logged and pool \
        else modelled
    # Positional (see plan.evaluate): shape, basis, bytes_per_token, pool_tokens, measured, sessions, inputs,
    # request_bytes, bytes_read, modelled_sessions, set_aside.
    return KvPool(shape, basis, per_token, pool, logged, shown, inputs, request,
                  read if shape is not None else kv_bytes_read(None, per_token, context), modelled, aside)


def resized_by(model: Model, recipe: Recipe | None, hardware: Hardware, settings: Settings, inputs: PoolInputs) -> str:
    """The user's settings that size the pool otherwise than the recipe ran (its gpu-memory-utilization unless
    it pins the KV memory, KV dtype, max-model-len, batched tokens, graph mode), as "--flag value" phrases;
    "" when none does, so its logged pool is this plan's."""
    if recipe is None:
        return ""
    changed = []
    used = settings.gpu_memory_utilization
    if used is not None and not recipe.kv_cache_gib \
            and used != (recipe.gpu_memory_utilization or hardware.gpu_memory_utilization):
        changed.append(f"--gpu-memory-utilization {used:g}")
    if settings.kv_cache_dtype not in (None, recipe.kv_cache_dtype):
        changed.append(f"--kv-cache-dtype {settings.kv_cache_dtype}")
    if settings.max_model_len is not None and inputs.max_model_len != usable_context(model, recipe).tokens:
        changed.append(f"--max-model-len {inputs.max_model_len:,}")
    if inputs.batched_set and inputs.batched_tokens != (recipe_batched_tokens(recipe) or VLLM_BATCHED_TOKENS):
        changed.append(f"--max-num-batched-tokens {inputs.batched_tokens:,}")
    if settings.enforce_eager is not None and settings.enforce_eager != recipe.enforce_eager:
        changed.append("--enforce-eager" if settings.enforce_eager else "CUDA graphs")
    return ", ".join(changed)


PerRequest = tuple[PoolInputs, KvShape | None, float | None, float | None, float]
"""(pool inputs, KV shape, request bytes, sequence bytes, bytes read): `pool_per_request`."""


def pool_per_request(facts: BuildFacts, recipe: Recipe | None, kv_cache_dtype: str, tp: int, pp: int,
                     context_tokens: int, prefix: tuple[bool, str] | None = None,
                     limit: int | None = None, batched: int | None = None) -> PerRequest:
    """(pool inputs, KV shape, bytes of a request of max-model-len, bytes of a running sequence of the
    context, bytes a decode step reads at the context): what the pool's arithmetic reads from the model
    and the recipe alone, the same for every build of the model (`facts` is read for its model only;
    `limit`: the user's --max-model-len; `batched`: the user's --max-num-batched-tokens)."""
    attention = facts.model.attention
    inputs = pool_inputs(facts, recipe, prefix, limit, batched)
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
