"""Fit the speed model's free constants to the catalog's measurements, per hardware.

- Prefill: each measured prefill rate times the FLOPs per token of its model gives the
  effective FLOP/s per node that run achieved; the median is the constant.
- Decode: each measured single-stream speed, set against the bytes and all-reduces the
  model says one pass costs, leaves the fixed cost per pass it implies; the median per
  graph mode (eager or CUDA graphs) is the constant.
`exclude` leaves recipes out, so a measurement never predicts itself (leave-one-out).
"""

from __future__ import annotations

import statistics
from dataclasses import replace

from sparkadvisor.core.catalog import CatalogIndex
from sparkadvisor.core.kv import kv_shape
from sparkadvisor.core.memory import build_weights
from sparkadvisor.core.plan import decode_inputs, measured
from sparkadvisor.core.schema import Hardware, Recipe
from sparkadvisor.core.speed import (
    SpeedConstants, default_constants, estimate_decode, estimate_prefill, prefill_flops_per_token, read_ms,
    tokens_per_pass,
)

DEFAULT_DECODE_CONTEXT = 2_000
"""Context assumed for a decode measurement that does not state one (a short prompt)."""


def calibrate(index: CatalogIndex, hardware: Hardware, engine: str = "vllm",
              exclude: frozenset[str] = frozenset()) -> SpeedConstants:
    """Constants for `hardware`, fitted to every recipe measured on it but `exclude`."""
    constants = default_constants(hardware)
    recipes = [r for r in index.catalog.recipes
               if r.hardware == hardware.id and r.engine == engine and r.id not in exclude]
    basis = dict(constants.basis)
    prefill = [rate for r in recipes if (rate := _prefill_flops(index, r)) is not None]
    if prefill:
        constants = replace(constants, prefill_flops_per_node=statistics.median(prefill))
        basis["prefill_flops_per_node"] = _fitted(len(prefill))
    for eager, name in ((True, "fixed_ms_eager"), (False, "fixed_ms_graphs")):
        fixed = [f for r in recipes if r.enforce_eager == eager
                 and (f := _implied_fixed_ms(index, r, hardware, constants)) is not None]
        if fixed:
            constants = replace(constants, **{name: statistics.median(fixed)})
            basis[name] = _fitted(len(fixed))
    return replace(constants, basis=basis)


def _fitted(count: int) -> str:
    return f"fitted to {count} measurement{'s' if count != 1 else ''}"


def _prefill_flops(index: CatalogIndex, recipe: Recipe) -> float | None:
    measurement = measured(recipe, "prefill_tok_s")
    model = index.models[index.builds[recipe.build].model]
    if measurement is None or model.params.active_b is None:
        return None
    attended = (measurement.context_tokens or 0) / 2
    flops = prefill_flops_per_token(model.params.active_b * 1e9, model.attention, attended)
    return measurement.value * flops / recipe.nodes


def _implied_fixed_ms(index: CatalogIndex, recipe: Recipe, hardware: Hardware,
                      constants: SpeedConstants) -> float | None:
    """The fixed cost per pass that makes the model meet this recipe's measured speed."""
    measurement = measured(recipe, "decode_tok_s")
    if measurement is None:
        return None
    build = index.builds[recipe.build]
    model = index.models[build.model]
    weights = build_weights(build, model)
    context = measurement.context_tokens or DEFAULT_DECODE_CONTEXT
    kv = kv_shape(model.attention, recipe.kv_cache_dtype, recipe.tp, recipe.pp) if model.attention else None
    kv_read = kv.bytes_per_sequence(context) if kv else 0.0
    inputs = decode_inputs(model, build, weights, recipe, recipe.tp, recipe.pp, kv_read)
    if inputs is None:
        return None
    variable_ms = sum(read_ms(inputs, hardware.memory_bandwidth_gb_s, constants))
    tokens = tokens_per_pass(inputs.spec_tokens, inputs.acceptance, constants.acceptance)
    fixed = tokens / measurement.value * 1e3 - variable_ms
    return max(fixed / inputs.pp, 0.0)


def recipe_decode(index: CatalogIndex, recipe: Recipe, context: int | None, streams: int,
                  constants: SpeedConstants) -> tuple[float, float, float] | str:
    """(expected, low, high) tok/s for a recipe, or why it cannot be predicted."""
    if streams != 1:
        return "the model has no batching term"
    build = index.builds[recipe.build]
    model = index.models[build.model]
    weights = build_weights(build, model)
    kv = kv_shape(model.attention, recipe.kv_cache_dtype, recipe.tp, recipe.pp) if model.attention else None
    kv_read = kv.bytes_per_sequence(context or DEFAULT_DECODE_CONTEXT) if kv else 0.0
    inputs = decode_inputs(model, build, weights, recipe, recipe.tp, recipe.pp, kv_read)
    if inputs is None:
        return "active parameters unpublished"
    hardware = index.hardware[recipe.hardware]
    d = estimate_decode(inputs, hardware.memory_bandwidth_gb_s, constants)
    return d.expected_tok_s, d.low_tok_s, d.high_tok_s


def recipe_prefill(index: CatalogIndex, recipe: Recipe, context: int | None,
                   constants: SpeedConstants) -> tuple[float, float, float] | str:
    """(expected, low, high) prompt tok/s for a recipe, or why it cannot be predicted."""
    model = index.models[index.builds[recipe.build].model]
    if model.params.active_b is None:
        return "active parameters unpublished"
    rate = estimate_prefill(recipe.nodes, model.params.active_b * 1e9, model.attention, (context or 0) / 2,
                            constants)
    if rate is None:
        return "no effective prefill rate (no compute peak and no other prefill measurement)"
    return rate, rate, rate
