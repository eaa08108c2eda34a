"""Fit the speed model's free constants to the catalog's measurements, per hardware and engine.

- Prefill: each measured prefill rate, times the FLOPs per token of its model at its
  context (less the link time), gives the effective FLOP/s per node that run achieved;
  the median is the constant.
- Bandwidth: with three or more decode measurements without speculation, a straight
  line through (bytes read per step, measured step time) gives the effective bandwidth
  (the slope) and the fixed cost (the intercept); otherwise the read test stands.
- Decode: each measured speed, set against the bytes and all-reduces the model says one
  step costs, leaves the fixed cost it implies: measurements without speculation give the
  fixed cost per graph mode (eager or CUDA graphs), speculative ones the extra cost of
  speculation, several streams the cost per further token in a batch. Medians throughout.
- Ranges: the spread of the model's errors on measurements left out of the fit.
Recipes that stream per-token tables from disk do not fit decode constants: the bytes
they read per token are unknown, and their time would pass for a fixed cost.
`exclude` leaves recipes out, so a measurement never predicts itself (leave-one-out).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import replace

from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Hardware, Measurement, Recipe
from sparkadvisor.core.speed import (
    MIN_BAND,
    DecodeEstimate,
    DecodeInputs,
    SpeedConstants,
    default_constants,
    estimate_decode,
    estimate_prefill,
    link_ms,
    prefill_flops_per_token,
    prefill_link_s_per_token,
    prefill_range,
    read_ms,
    tensor_peak_flops,
)
from sparkadvisor.core.stages import decode_inputs, recipe_kv_read

DEFAULT_DECODE_CONTEXT = 2_000
"""Context assumed for a decode measurement that does not state one (a short prompt)."""

BAND_QUANTILE = 0.8
"""The range covers this share of the errors the model makes on its own measurements."""

BAND_FOLDS = 5
"""Cross-validation groups for the decode range (leave-one-recipe-out below five recipes)."""

MIN_BANDWIDTH_FIT = 3
"""Measurements without speculation needed before the bandwidth is fitted rather than read-tested."""

DECODE_METRICS = ("decode_tok_s", "aggregate_tok_s")


@record(kw_only=False)
class Observation:
    """One decode measurement, with what the model says its step reads and runs."""

    recipe: Recipe
    measurement: Measurement
    inputs: DecodeInputs

    @property
    def total_tok_s(self) -> float:
        """Tokens per second across all streams (decode_tok_s is per stream)."""
        m = self.measurement
        return m.value * m.streams if m.metric == "decode_tok_s" else m.value


def calibrate(index: CatalogIndex, hardware: Hardware, engine: str = "vllm",
              exclude: frozenset[str] = frozenset()) -> SpeedConstants:
    """Constants for `hardware` and `engine`, fitted to every recipe measured there but `exclude`."""
    recipes = [r for r in index.recipes_on(hardware.id, engine) if r.id not in exclude]
    constants = _fit_prefill(index, recipes, default_constants(hardware))
    if not constants.basis["prefill_flops_per_node"].startswith("fitted"):
        constants = _borrow_prefill(index, hardware, engine, constants)
    constants = _fit_acceptance(recipes, constants)
    observations = [o for r in recipes if not r.streams_tables for m in r.measurements
                    if (o := observation(index, r, m)) is not None]
    constants = fit_decode(observations, hardware.memory_bandwidth_gb_s, constants)
    return _fit_band(observations, hardware.memory_bandwidth_gb_s, constants)


def fit_decode(observations: list[Observation], bandwidth: float, constants: SpeedConstants) -> SpeedConstants:
    """Bandwidth, fixed costs, speculation and batch constants fitted to decode observations."""
    for fit in (_fit_bandwidth, _fit_fixed, _fit_spec, _fit_batch):
        constants = fit(observations, bandwidth, constants)
    return constants


def observation(index: CatalogIndex, recipe: Recipe, m: Measurement) -> Observation | None:
    """The decode measurement `m` with its step inputs, or None (not decode, or no active params)."""
    if m.metric not in DECODE_METRICS:
        return None
    inputs = recipe_inputs(index, recipe, m.context_tokens, m.streams)
    return Observation(recipe, m, inputs) if inputs is not None else None


def recipe_inputs(index: CatalogIndex, recipe: Recipe, context: int | None, streams: int) -> DecodeInputs | None:
    """What one decode step of this recipe reads at `context` tokens with `streams` sequences."""
    facts = index.facts.get(recipe.build)
    if facts is None:
        return None
    kv_read = recipe_kv_read(facts, recipe, index.hardware[recipe.hardware], context or DEFAULT_DECODE_CONTEXT)
    return decode_inputs(facts.model, facts.build.format, facts.weights, recipe, recipe.tp, recipe.pp, kv_read,
                         streams)


def _fitted(count: int, suffix: str = "") -> str:
    return f"fitted to {count} measurement{'s' if count != 1 else ''}{suffix}"


def _estimate(o: Observation, bandwidth: float, c: SpeedConstants) -> DecodeEstimate:
    return estimate_decode(o.inputs, bandwidth, c)


def _implied(o: Observation, bandwidth: float, c: SpeedConstants, part: Callable[[DecodeEstimate], float]) -> float:
    """Milliseconds a step part must take for the model to meet the measurement exactly."""
    d = _estimate(o, bandwidth, c)
    measured_step = o.inputs.streams * d.tokens_per_pass / o.total_tok_s * 1e3
    return measured_step - (d.step_ms - part(d))


def _plain(o: Observation) -> bool:
    return o.inputs.spec_tokens == 0 and o.inputs.streams == 1


def _fit_bandwidth(obs: list[Observation], bandwidth: float, c: SpeedConstants) -> SpeedConstants:
    """Slope and intercept of measured step time over bytes read, when enough plain measurements exist
    and the hardware has no published read test (a measured bandwidth is not refitted)."""
    plain = [o for o in obs if _plain(o) and not o.inputs.eager]
    if len(plain) < MIN_BANDWIDTH_FIT or c.basis.get("bandwidth_fraction") == "published read test":
        return c
    at_rated = replace(c, bandwidth_fraction=1.0)
    xs = [sum(read_ms(o.inputs, bandwidth, at_rated)) for o in plain]
    ys = [1e3 / o.total_tok_s - link_ms(o.inputs, c) for o in plain]
    if statistics.pvariance(xs) == 0:
        return c
    slope, intercept = statistics.linear_regression(xs, ys)
    if slope <= 1.0 or slope > 2.5 or intercept < 0:
        return c
    basis = {**c.basis, "bandwidth_fraction": _fitted(len(plain), " without speculation"),
             "fixed_ms_graphs": _fitted(len(plain), " without speculation")}
    return replace(c, bandwidth_fraction=1 / slope, fixed_ms_graphs=intercept, basis=basis)


def _fit_fixed(obs: list[Observation], bandwidth: float, c: SpeedConstants) -> SpeedConstants:
    """Fixed cost per graph mode from plain measurements; a mode without any borrows the other's."""
    implied = {eager: [max(_implied(o, bandwidth, c, lambda d: d.fixed_ms), 0.0) / o.inputs.pp
                       for o in obs if _plain(o) and o.inputs.eager == eager] for eager in (True, False)}
    basis, values = dict(c.basis), {}
    for eager, name, other in ((True, "fixed_ms_eager", "CUDA-graph"), (False, "fixed_ms_graphs", "eager")):
        own, others = implied[eager], implied[not eager]
        if basis[name].startswith("fitted"):
            continue
        if own:
            values[name], basis[name] = statistics.median(own), _fitted(len(own), " without speculation")
        elif others:
            values[name] = statistics.median(others)
            basis[name] = f"borrowed from the {other} fit ({len(others)}): no measurement in this mode"
    return replace(c, **values, basis=basis)


def _fit_spec(obs: list[Observation], bandwidth: float, c: SpeedConstants) -> SpeedConstants:
    spec = [o for o in obs if o.inputs.spec_tokens and o.inputs.streams == 1]
    if not spec:
        return c
    values = [max(_implied(o, bandwidth, c, lambda d: d.spec_ms), 0.0) for o in spec]
    return replace(c, spec_ms=statistics.median(values), basis={**c.basis, "spec_ms": _fitted(len(spec))})


def _fit_batch(obs: list[Observation], bandwidth: float, c: SpeedConstants) -> SpeedConstants:
    batched = [o for o in obs if o.inputs.streams > 1]
    if not batched:
        return c
    values = [max(_implied(o, bandwidth, c, lambda d: d.batch_ms), 0.0)
              / ((o.inputs.streams - 1) * (o.inputs.spec_tokens + 1)) for o in batched]
    return replace(c, batch_ms_per_token=statistics.median(values),
                   basis={**c.basis, "batch_ms_per_token": _fitted(len(batched))})


def _fit_band(obs: list[Observation], bandwidth: float, c: SpeedConstants) -> SpeedConstants:
    """The decode range from errors on measurements the fit did not see: the recipes are
    split into up to BAND_FOLDS groups, each predicted from a fit to the others."""
    recipe_ids = list(dict.fromkeys(o.recipe.id for o in obs))
    if len(recipe_ids) < 2:
        return c
    folds = min(BAND_FOLDS, len(recipe_ids))
    errors = []
    for fold in range(folds):
        held = set(recipe_ids[fold::folds])
        fitted = fit_decode([o for o in obs if o.recipe.id not in held], bandwidth, c)
        errors += [abs(math.log(_estimate(o, bandwidth, fitted).expected_tok_s / o.total_tok_s))
                   for o in obs if o.recipe.id in held]
    band = max(math.exp(quantile(errors, BAND_QUANTILE)) - 1, MIN_BAND)
    return replace(c, decode_band=band, basis={**c.basis, "decode_band": _band_basis(len(errors))})


def _band_basis(count: int) -> str:
    return (f"covers {BAND_QUANTILE:.0%} of the errors on {count} measurement{'s' if count != 1 else ''} "
            "left out of the fit")


def quantile(values: list[float], share: float) -> float:
    """The `share` quantile of `values` (linear interpolation between order statistics)."""
    ordered = sorted(values)
    position = share * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _fit_acceptance(recipes: list[Recipe], c: SpeedConstants) -> SpeedConstants:
    """The median published acceptance stands in for recipes that do not publish theirs."""
    rates = [r.speculative.acceptance for r in recipes if r.speculative and r.speculative.acceptance is not None]
    if not rates:
        return c
    return replace(c, acceptance=statistics.median(rates),
                   basis={**c.basis, "acceptance": f"median of {len(rates)} published acceptance rates"})


# --- prefill ------------------------------------------------------------------


def _fit_prefill(index: CatalogIndex, recipes: list[Recipe], c: SpeedConstants) -> SpeedConstants:
    rates = [rate for r in recipes for m in r.measurements
             if m.metric == "prefill_tok_s" and (rate := _prefill_flops(index, r, m, c)) is not None]
    if not rates:
        return c
    middle = statistics.median(rates)
    basis = {**c.basis, "prefill_flops_per_node": _fitted(len(rates))}
    band = c.prefill_band
    if len(rates) > 1:
        errors = [abs(math.log(r / statistics.median(rates[:i] + rates[i + 1:]))) for i, r in enumerate(rates)]
        band = max(math.exp(quantile(errors, BAND_QUANTILE)) - 1, MIN_BAND)
        basis["prefill_band"] = _band_basis(len(rates))
    return replace(c, prefill_flops_per_node=middle, prefill_band=band, basis=basis)


def _borrow_prefill(index: CatalogIndex, hardware: Hardware, engine: str, c: SpeedConstants) -> SpeedConstants:
    """Without prefill measurements of its own, a hardware profile takes the share of the tensor
    peak that measured hardware reaches (the median over those profiles) times its own peak."""
    own_peak = tensor_peak_flops(hardware)
    if not own_peak:
        return c
    shares, donors = [], []
    for other in index.catalog.hardware:
        recipes = index.recipes_on(other.id, engine)
        fitted = _fit_prefill(index, recipes, default_constants(other))
        peak = tensor_peak_flops(other)
        if other.id != hardware.id and peak and fitted.basis["prefill_flops_per_node"].startswith("fitted"):
            shares.append(fitted.prefill_flops_per_node / peak)  # type: ignore[operator]
            donors.append(other.name)
    if not shares:
        return c
    share = statistics.median(shares)
    basis = {**c.basis, "prefill_flops_per_node": f"{share:.1%} of the tensor peak, as measured on {', '.join(donors)}"}
    return replace(c, prefill_flops_per_node=own_peak * share, basis=basis)


def _prefill_flops(index: CatalogIndex, recipe: Recipe, m: Measurement, c: SpeedConstants) -> float | None:
    """Effective FLOP/s per node the measured rate implies, after the link's share of the time."""
    model = index.models.get(index.builds[recipe.build].model)
    if model is None or model.params.active_b is None:
        return None
    flops = prefill_flops_per_token(model.params.active_b * 1e9, model.attention, (m.context_tokens or 0) / 2)
    compute_s = 1 / m.value - prefill_link_s_per_token(recipe.nodes, model.attention, c.link_gb_s)
    return flops / (recipe.nodes * compute_s) if compute_s > 0 else None


# --- predictions for the report card ------------------------------------------


def recipe_decode(index: CatalogIndex, recipe: Recipe, m: Measurement,
                  constants: SpeedConstants) -> tuple[float, float, float] | str:
    """(expected, low, high) in the measurement's own terms (per stream for decode_tok_s,
    all streams for aggregate_tok_s), or why it cannot be predicted."""
    o = observation(index, recipe, m)
    if o is None:
        return "active parameters unpublished"
    hardware = index.hardware[recipe.hardware]
    d = estimate_decode(o.inputs, hardware.memory_bandwidth_gb_s, constants)
    per = m.streams if m.metric == "decode_tok_s" else 1
    return d.expected_tok_s / per, d.low_tok_s / per, d.high_tok_s / per


def recipe_prefill(index: CatalogIndex, recipe: Recipe, m: Measurement,
                   constants: SpeedConstants) -> tuple[float, float, float] | str:
    """(expected, low, high) prompt tok/s for a recipe at the measurement's context, or why not."""
    model = index.models.get(index.builds[recipe.build].model)
    if model is None or model.params.active_b is None:
        return "active parameters unpublished"
    rate = estimate_prefill(recipe.nodes, model.params.active_b * 1e9, model.attention,
                            (m.context_tokens or 0) / 2, constants)
    if rate is None:
        return "no effective prefill rate (no compute peak and no other prefill measurement)"
    return (rate, *prefill_range(rate, constants))
