"""The fourth stage, `first_token` -> `FirstToken`: what prefix caching leaves uncached, the prefill
rate (measured, scaled from another depth, or estimated by `core.speed.prefill`), and the wait.
"""

from __future__ import annotations

import math

from sparkadvisor.core.index import ENGINE
from sparkadvisor.core.memo import once
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Attention, Caveat, Measurement, Model, Recipe
from sparkadvisor.core.speed.chunks import llama_batches, pipeline_ubatches, prefill_chunk
from sparkadvisor.core.speed.constants import SpeedConstants
from sparkadvisor.core.speed.prefill import (
    AttentionTerms,
    PrefillInputs,
    attention_terms,
    chunk_read_share,
    dense_and_expert_params,
    estimate_prefill,
    inputs_for_weights,
    prefill_inputs,
    prefill_kv_gb,
)
from sparkadvisor.core.stages.recipe import measured_ttft, prefix_caching
from sparkadvisor.core.workload import Workload


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
                model_prefill: ModelPrefill | None = None, batched: int | None = None, stages: int = 1) -> FirstToken:
    """The first token of a turn of this workload (`model_prefill`: the model's `prefill_shared` at
    this turn's uncached tokens, when already worked out; `batched`: the user's --max-num-batched-tokens;
    `stages`: the pipeline stages, pp)."""
    prefix_on, note = prefix_caching(recipe, caveats)
    uncached = uncached_tokens(workload, prefix_on)
    rate, basis, measurement, point = prefill(model, recipe, nodes, workload.context_tokens, uncached, constants,
                                              weight_format, weight_bytes, kv_cache_dtype, model_prefill, batched,
                                              stages)
    ttft = measured_ttft(recipe, workload.context_tokens, uncached)
    # Positional (see plan.evaluate): prefix_caching, prefix_caching_note, uncached_tokens, prefill_tok_s,
    # prefill_basis, prefill_measured, prefill_inputs, ttft_s, ttft_measured.
    return FirstToken(prefix_on, note, uncached, rate, basis, measurement, point,
                      ttft.value if ttft else (uncached / rate if rate else None), ttft)


def uncached_tokens(workload: Workload, prefix_on: bool) -> int:
    """Prompt tokens computed afresh each turn: the whole context, or what prefix caching does not reuse,
    never less than the last token: vLLM recomputes it when the whole prompt hits the cache, for its
    logits (v1 kv_cache_manager.get_computed_blocks caps a hit at the prompt's length - 1)."""
    if not prefix_on:
        return workload.context_tokens
    return max(1, round(workload.context_tokens * (1 - workload.prefix_reuse)))


def prefill(model: Model, recipe: Recipe | None, nodes: int, context_tokens: int, uncached: int,
            constants: SpeedConstants, weight_format: str = "bf16", weight_bytes: float = 0.0,
            kv_cache_dtype: str = "auto", shared: ModelPrefill | None = None, batched: int | None = None,
            stages: int = 1) -> tuple[float | None, str, Measurement | None, PrefillInputs | None]:
    """(prompt tok/s, basis, measurement, inputs) for `uncached` new tokens on top of a cached prefix, the
    transformer's `weight_bytes` streamed once per prefill chunk (vLLM's: the user's --max-num-batched-tokens
    `batched`, else the recipe's).

    A measured rate holds at its own depth: the recipe's prefill measurement nearest this one in
    attended depth is used as measured when the depth is the same (or the measurement states no
    prompt length, so its depth is unknown), and otherwise scaled by the model's ratio of its own
    estimates here and there (attention FLOPs, the indexer's scoring, K/V reads and the weights per
    chunk all move with depth): basis "scaled"."""
    extra = recipe.extra_args if recipe else ()
    # What every build of the model shares here: once per model, recipe and depth in a ranking.
    attended, figures, terms = shared or once(("prefill", id(model), id(recipe), nodes, context_tokens, uncached,
                                               kv_cache_dtype, id(constants), batched, stages), prefill_shared,
                                              model, recipe, nodes, context_tokens, uncached, kv_cache_dtype,
                                              constants, batched, stages)
    point = None if figures is None else inputs_for_weights(*figures, weight_format, constants.engine, weight_bytes,
                                                            extra)
    measurement = _nearest_prefill(recipe, attended)
    if measurement is not None:
        depth = measured_attended(measurement)
        there = None if depth is None else _prefill_point(model, (nodes, stages), depth, measurement, constants,
                                                          weight_format, weight_bytes, kv_cache_dtype, extra)
        scale = _depth_scale(point, there, constants)
        if scale is None:
            return measurement.value, "measured", measurement, point
        return measurement.value * scale, "scaled", measurement, point
    if point is None:
        return None, "unknown", None, None
    rate = estimate_prefill(point, constants, terms)
    return rate, ("estimated" if rate else "unknown"), None, point


PrefillFigures = tuple[int, float, float, Attention | None, float, float, int | None, float, tuple[int, int]]
"""(nodes, dense params, expert params, attention, attended tokens, K/V GB, chunk tokens, chunk read share,
(ubatches, stages) of the pipeline): the leading arguments of `inputs_for_weights`."""
ModelPrefill = tuple[float, PrefillFigures | None, AttentionTerms | None]
"""(attended tokens, `PrefillFigures`, `attention_terms`): `prefill_shared`."""


def prefill_shared(model: Model, recipe: Recipe | None, nodes: int, context_tokens: int, uncached: int,
                   kv_cache_dtype: str, constants: SpeedConstants, batched: int | None = None,
                   stages: int = 1) -> ModelPrefill:
    """(attended tokens, the leading arguments of `inputs_for_weights`, `attention_terms`) of `prefill`:
    what the model, the recipe and the depth decide whatever the build's format (None without active
    parameters; `batched`: the user's --max-num-batched-tokens, which sets vLLM's chunk; `stages`: pp)."""
    p = model.params
    # New tokens attend to the cached prefix plus, on average, half of themselves.
    attended = context_tokens - uncached / 2
    if p.active_b is None:
        return attended, None, None
    chunk, ubatches = prefill_launch(constants.engine, recipe, stages, uncached, batched)
    dense, expert = dense_and_expert_params(p.active_b * 1e9, p.total_b * 1e9, p.routed_experts, p.experts_per_token)
    kv_gb = prefill_kv_gb(model.attention, attended, nodes, kv_cache_dtype, stages)
    share = chunk_read_share(p.total_b * 1e9, dense, expert, p.routed_experts, p.experts_per_token, chunk)
    figures = (nodes, dense, expert, model.attention, attended, kv_gb, chunk, share, (ubatches, stages))
    return attended, figures, attention_terms(model.attention, attended, nodes, constants.link_gb_s, stages)


def prefill_launch(engine: str, recipe: Recipe | None, stages: int, prompt_tokens: float | None,
                   batched: int | None = None) -> tuple[int | None, int]:
    """(prompt tokens per forward pass, ubatches through the `stages` of a pipeline together) of the launch a plan
    is costed for. On llama.cpp, the launch the export writes (`llama_batches`, from `batched`, the user's
    --max-num-batched-tokens); its recipes are measurements (llama-bench's, a bench run's), whose flags the export
    does not copy. Elsewhere the recipe's flags, else the engine's defaults, `batched` setting vLLM's chunk."""
    extra = recipe.extra_args if recipe else ()
    if engine == "llama.cpp":
        batch, ubatch = llama_batches(batched, stages)
        return (prefill_chunk(engine, extra, prompt_tokens, ubatch),
                pipeline_ubatches(engine, stages, extra, prompt_tokens, ubatch, batch))
    stated = batched if engine == ENGINE else None
    chunk = prefill_chunk(engine, extra, prompt_tokens, stated)
    return chunk, pipeline_ubatches(engine, stages, extra, prompt_tokens, prefill_chunk(engine, extra, None, stated))


def _prefill_point(model: Model, split: tuple[int, int], attended: float, m: Measurement, constants: SpeedConstants,
                   weight_format: str, weight_bytes: float, kv_cache_dtype: str,
                   extra: tuple[str, ...]) -> PrefillInputs | None:
    """What one prompt token of prefill measurement `m` computed at `attended` depth for this build on (nodes,
    pipeline stages) `split`, None without active parameters."""
    p = model.params
    if p.active_b is None:
        return None
    engine, (nodes, stages) = constants.engine, split
    ubatch = prefill_chunk(engine, extra, None, m.chunk_tokens)
    return prefill_inputs(nodes, p.active_b * 1e9, p.total_b * 1e9, p.routed_experts, p.experts_per_token,
                          weight_format, model.attention, attended, engine=engine,
                          kv_cache_dtype=kv_cache_dtype, weight_bytes=weight_bytes,
                          chunk_tokens=prefill_chunk(engine, extra, m.context_tokens, m.chunk_tokens),
                          extra_args=extra,
                          ubatches=pipeline_ubatches(engine, stages, extra, m.context_tokens, ubatch), stages=stages)


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
