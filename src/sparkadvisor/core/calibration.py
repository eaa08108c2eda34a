"""Fit the speed model's rates to the catalog's measurements, per hardware, engine and mode.

A decode step's time is a sum of physical quantities, each times a rate (core.speed): the
weights at the published read test (a format's dequantization overhead on top), the KV bytes
the attention kernel reads, the GEMM FLOPs of the tokens verified, the drafter steps, the
layers (with and without CUDA graphs), the all-reduces. The rates are the least-squares
solution, in relative error and all non-negative, over every decode measurement on the
hardware: the physics is shared by all engines, the fixed costs are each engine's own once
two of its recipes are measured (the others pool theirs), and eager mode has its own cost
per layer. How far a batch's routing spreads over the experts is chosen from a short list by
the same fit. Prefill: the same kind of fit over prefill measurements, with a rate per
compute precision and experts at their own efficiency.

Recipes whose models read per-token tables (PLE, Engram) do not fit: the bytes they read are
unpublished, and their time would pass for a rate. Models without layer facts do not either.
Ranges: the errors on recipes left out of the fit, in folds. `exclude` leaves recipes out, so
a measurement never predicts itself (leave-one-out).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.lsq import nnls
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Hardware, Measurement, Recipe
from sparkadvisor.core.speed import (
    MIN_BAND,
    PRECISIONS,
    DecodeInputs,
    PrefillInputs,
    SpeedConstants,
    default_constants,
    estimate_decode,
    estimate_prefill,
    link_ms,
    prefill_inputs,
    prefill_link_s_per_token,
    prefill_range,
    read_ms,
    tensor_peak_flops,
    attention_flops_per_token,
)
from sparkadvisor.core.stages import DEFAULT_DECODE_CONTEXT, as_measured, decode_inputs, recipe_kv_read

BAND_QUANTILE = 0.8
"""The range covers this share of the errors the model makes on measurements left out of the fit."""

BAND_FOLDS = 5
"""Cross-validation groups for the ranges (leave-one-recipe-out below five recipes)."""

MIN_ENGINE_RECIPES = 2
"""Measured recipes an engine needs before its fixed costs are its own rather than pooled."""

MIN_CLASS_RECIPES = 2
"""Measured recipes a weight format or compute precision needs before it gets its own rate."""

SPREADS = (0.3, 0.4, 0.5, 0.65, 0.8, 1.0)
"""Candidate shares of the experts a batch's routing spreads over (1: uniform independent draws)."""

EXPERT_FACTORS = (1.0, 1.5, 2.0, 3.0)
"""Candidate costs of an expert prefill FLOP in dense FLOPs."""

DECODE_METRICS = ("decode_tok_s", "aggregate_tok_s")

POOLED = "*"
"""The group of engines with too few measured recipes for constants of their own."""


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

    def step_ms(self, acceptance: float) -> float:
        """The measured time of one pass: every stream's accepted tokens over the total rate."""
        i = self.inputs
        accepted = i.acceptance if i.acceptance is not None else acceptance
        return i.streams * (1 + i.spec_tokens * accepted) / self.total_tok_s * 1e3


@record(kw_only=False)
class Calibration:
    """Speed constants for one hardware profile, for every engine the catalog measured there."""

    hardware: str
    engines: dict[str, SpeedConstants]
    """Constants of each engine with measured recipes of its own, and of the pooled group."""
    reference: SpeedConstants
    """For an engine nobody measured: the pooled group's, else vLLM's, else the assumptions."""

    def for_engine(self, engine: str) -> SpeedConstants:
        """The constants a plan on this engine uses."""
        own = self.engines.get(engine)
        if own is not None:
            return own
        return replace(self.reference, engine=engine, basis={
            **self.reference.basis, "engine": f"no {engine} measurement: {self.reference.engine}'s fixed costs"})


def calibrate(index: CatalogIndex, hardware: Hardware, engine: str = "vllm",
              exclude: frozenset[str] = frozenset()) -> SpeedConstants:
    """Constants for `hardware` and `engine`, fitted to every recipe measured there but `exclude`."""
    return calibrate_all(index, hardware, exclude).for_engine(engine)


def calibrate_all(index: CatalogIndex, hardware: Hardware, exclude: frozenset[str] = frozenset()) -> Calibration:
    """Constants for every engine measured on `hardware`, fitted to all its recipes but `exclude`."""
    recipes = [r for r in index.catalog.recipes if r.hardware == hardware.id and r.id not in exclude
               and r.build in index.builds]
    base = _with_prefill(index, hardware, recipes, _with_acceptance(recipes, default_constants(hardware)))
    observations = [o for r in recipes for m in r.measurements if (o := fittable(index, r, m)) is not None]
    if not observations:
        return Calibration(hardware.id, {}, base)
    fit = fit_decode(observations, hardware.memory_bandwidth_gb_s, base)
    (decode, aggregate), notes = _bands(observations, hardware.memory_bandwidth_gb_s,
                                        next(iter(fit.values())).expert_spread, base)
    engines = {e: replace(c, decode_band=decode, aggregate_band=aggregate, basis={**c.basis, **notes})
               for e, c in fit.items()}
    reference = engines.get(POOLED) or engines.get("vllm") or base
    return Calibration(hardware.id, {e: c for e, c in engines.items() if e != POOLED}, reference)


def observation(index: CatalogIndex, recipe: Recipe, m: Measurement) -> Observation | None:
    """The decode measurement `m` with its step inputs at its own context, streams and mode,
    or None (not decode, or no active params)."""
    if m.metric not in DECODE_METRICS:
        return None
    inputs = recipe_inputs(index, recipe, m.context_tokens, m.streams)
    if inputs is None:
        return None
    return Observation(recipe, m, as_measured(inputs, m))


def fittable(index: CatalogIndex, recipe: Recipe, m: Measurement) -> Observation | None:
    """An observation the decode fit may use: its model's layers known, no unpublished table reads."""
    o = observation(index, recipe, m)
    if o is None or o.inputs.tables or not o.inputs.layers:
        return None
    return o


def recipe_inputs(index: CatalogIndex, recipe: Recipe, context: int | None, streams: int) -> DecodeInputs | None:
    """What one decode step of this recipe reads at `context` tokens with `streams` sequences."""
    facts = index.facts[recipe.build]
    hardware = index.hardware[recipe.hardware]
    kv_read = recipe_kv_read(facts, recipe, hardware, context or DEFAULT_DECODE_CONTEXT)
    return decode_inputs(facts.model, facts.build.format, facts.weights, recipe, recipe.tp, recipe.pp, kv_read,
                         streams)


# --- decode -------------------------------------------------------------------


@record(kw_only=False)
class _Design:
    """The fit's columns for one set of observations: names, rows, targets, weights."""

    columns: list[str]
    rows: list[list[float]]
    targets: list[float]
    weights: list[float]


def fit_decode(observations: Sequence[Observation], bandwidth: float,
               base: SpeedConstants) -> dict[str, SpeedConstants]:
    """Constants per engine group, at the expert spread that fits best."""
    best: tuple[float, dict[str, SpeedConstants]] | None = None
    batched = any(o.inputs.tokens_verified > 1 and o.inputs.routed_experts for o in observations)
    for spread in SPREADS if batched else (base.expert_spread,):
        constants = _fit_at(observations, bandwidth, replace(base, expert_spread=spread))
        error = sum(_log_error(o, bandwidth, constants) ** 2 for o in observations)
        if best is None or error < best[0] - 1e-12:
            best = (error, constants)
    assert best is not None
    return best[1]


def _groups(observations: Sequence[Observation], key, minimum: int) -> set[str]:
    recipes: dict[str, set[str]] = {}
    for o in observations:
        recipes.setdefault(key(o), set()).add(o.recipe.id)
    return {k for k, ids in recipes.items() if len(ids) >= minimum}


def _engine_of(o: Observation, own: set[str]) -> str:
    return o.recipe.engine if o.recipe.engine in own else POOLED


def _design(observations: Sequence[Observation], bandwidth: float, c: SpeedConstants) -> tuple[_Design, set[str]]:
    own = _groups(observations, lambda o: o.recipe.engine, MIN_ENGINE_RECIPES)
    classes = sorted(_groups(observations, lambda o: o.inputs.weight_class, MIN_CLASS_RECIPES))
    multi = _groups([o for o in observations if o.inputs.tp > 1], lambda o: "tp", MIN_ENGINE_RECIPES)
    engines = sorted(own | {_engine_of(o, own) for o in observations})
    columns = ["kv_ms_per_gb", "compute_ms_per_gflop", "spec_ms_per_step", "eager_ms_per_layer"]
    columns += ["allreduce_us"] if multi else []
    columns += [f"{name}:{e}" for e in engines for name in ("fixed_ms", "layer_ms")]
    columns += [f"weight_penalty:{k}" for k in classes]
    bare = replace(c, weight_penalty={}, allreduce_us=0.0 if multi else c.allreduce_us)
    design = _Design(columns, [], [], [])
    for o in observations:
        i, measured = o.inputs, o.step_ms(c.acceptance)
        weights, _, draft, _ = read_ms(i, bandwidth, bare)
        values = {"kv_ms_per_gb": i.kv_bytes_read * i.streams * i.pp / 1e9,
                  "compute_ms_per_gflop": i.tokens_verified * 2 * i.active_params / i.tp / 1e9,
                  "spec_ms_per_step": i.drafter_steps if i.spec_tokens else 0.0,
                  "eager_ms_per_layer": (i.layers or 0) if i.eager else 0.0,
                  "allreduce_us": (2 * (i.layers or 0) * math.log2(i.tp) + i.pp - 1) / 1e3,
                  f"fixed_ms:{_engine_of(o, own)}": float(i.pp),
                  f"layer_ms:{_engine_of(o, own)}": float(i.layers or 0),
                  f"weight_penalty:{i.weight_class}": weights}
        design.rows.append([values.get(name, 0.0) for name in columns])
        design.targets.append(measured - weights - draft - link_ms(i, bare))
        design.weights.append(1 / measured ** 2)
    return design, own


def _fit_at(observations: Sequence[Observation], bandwidth: float, c: SpeedConstants) -> dict[str, SpeedConstants]:
    design, own = _design(observations, bandwidth, c)
    solution = dict(zip(design.columns, nnls(design.rows, design.targets, design.weights), strict=True))
    count = len(observations)
    shared: dict[str, float] = {k: solution[k] for k in ("kv_ms_per_gb", "compute_ms_per_gflop", "spec_ms_per_step",
                                       "eager_ms_per_layer", "allreduce_us")
                                 if k in solution and _exercised(design, k)}
    penalty = {k.split(":", 1)[1]: v for k, v in solution.items() if k.startswith("weight_penalty:")}
    basis = {**c.basis, "weight_penalty": f"fitted to {count} decode measurements (formats with 2+ recipes)"}
    for k in shared:
        basis[k] = _fitted(sum(1 for row in design.rows if row[design.columns.index(k)]), k)
    if "allreduce_us" not in shared:
        basis["allreduce_us"] = c.basis.get("allreduce_us", "assumed")
    basis["expert_spread"] = f"best of {len(SPREADS)} spreads over {count} decode measurements"
    result = {}
    for engine in {k.split(":", 1)[1] for k in design.columns if k.startswith("fixed_ms:")}:
        rows = sum(1 for row in design.rows if row[design.columns.index(f"fixed_ms:{engine}")])
        whose = (f"fitted to {rows} {engine} measurements" if engine != POOLED
                 else f"pooled over engines with fewer than {MIN_ENGINE_RECIPES} measured recipes ({rows} measurements)")
        fitted = replace(c, engine=engine, weight_penalty=penalty, fixed_ms=solution[f"fixed_ms:{engine}"],
                         layer_ms=solution[f"layer_ms:{engine}"], decode_measurements=rows,
                         basis={**basis, "fixed_ms": whose, "layer_ms": whose, "engine": whose})
        result[engine] = _with_rates(fitted, shared)
    return result


def _with_rates(c: SpeedConstants, rates: dict[str, float]) -> SpeedConstants:
    """`c` with the shared rates the fit exercised (the others keep their assumed values)."""
    return replace(c, kv_ms_per_gb=rates.get("kv_ms_per_gb", c.kv_ms_per_gb),
                   compute_ms_per_gflop=rates.get("compute_ms_per_gflop", c.compute_ms_per_gflop),
                   spec_ms_per_step=rates.get("spec_ms_per_step", c.spec_ms_per_step),
                   eager_ms_per_layer=rates.get("eager_ms_per_layer", c.eager_ms_per_layer),
                   allreduce_us=rates.get("allreduce_us", c.allreduce_us))


def _exercised(design: _Design, column: str) -> bool:
    j = design.columns.index(column)
    return any(row[j] for row in design.rows)


def _fitted(count: int, what: str) -> str:
    return f"fitted to {count} measurement{'s' if count != 1 else ''}"


def constants_for(engine: str, constants: dict[str, SpeedConstants]) -> SpeedConstants:
    """An engine's own fitted constants, else the pooled group's, else vLLM's, else the first engine's
    by name: the same for every run (a fold can leave an engine without recipes of its own)."""
    return constants.get(engine) or constants.get(POOLED) or constants.get("vllm") or constants[min(constants)]


def _log_error(o: Observation, bandwidth: float, constants: dict[str, SpeedConstants]) -> float:
    d = estimate_decode(o.inputs, bandwidth, constants_for(o.recipe.engine, constants))
    return math.log(d.expected_tok_s / o.total_tok_s)


def _bands(observations: Sequence[Observation], bandwidth: float, spread: float,
           base: SpeedConstants) -> tuple[tuple[float, float], dict[str, str]]:
    """Single-stream and aggregate ranges from the errors on recipes held out of the fit, in folds."""
    recipe_ids = list(dict.fromkeys(o.recipe.id for o in observations))
    if len(recipe_ids) < 2:
        return (base.decode_band, base.aggregate_band), {}
    folds = min(BAND_FOLDS, len(recipe_ids))
    single: list[float] = []
    batched: list[float] = []
    for fold in range(folds):
        held = set(recipe_ids[fold::folds])
        train = [o for o in observations if o.recipe.id not in held]
        if not train:
            continue
        fitted = _fit_at(train, bandwidth, replace(base, expert_spread=spread))
        for o in observations:
            if o.recipe.id in held:
                (single if o.inputs.streams == 1 else batched).append(abs(_log_error(o, bandwidth, fitted)))
    decode = _band(single) if single else base.decode_band
    aggregate = _band(batched) if len(batched) >= 3 else decode
    basis = {"decode_band": _band_basis(len(single)),
             "aggregate_band": _band_basis(len(batched)) if len(batched) >= 3 else "the single-stream range"}
    return (decode, aggregate), basis


def _band(errors: list[float]) -> float:
    return max(math.exp(quantile(errors, BAND_QUANTILE)) - 1, MIN_BAND)


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


def _with_acceptance(recipes: list[Recipe], c: SpeedConstants) -> SpeedConstants:
    """The median published acceptance stands in for recipes that do not publish theirs."""
    rates = [r.speculative.acceptance for r in recipes if r.speculative and r.speculative.acceptance is not None]
    if not rates:
        return c
    import statistics  # here, not at the top: a warm start reads calibrations from the cache (5 ms spared)

    return replace(c, acceptance=statistics.median(rates),
                   basis={**c.basis, "acceptance": f"median of {len(rates)} published acceptance rates"})


# --- prefill ------------------------------------------------------------------


def prefill_point(index: CatalogIndex, recipe: Recipe, m: Measurement) -> PrefillInputs | None:
    """What a prefill measurement computed per prompt token, or None (no active parameters).
    The prompt attends to the cached depth plus, on average, half of itself."""
    facts = index.facts[recipe.build]
    model, params = facts.model, facts.model.params
    if params.active_b is None:
        return None
    attended = (m.depth_tokens or 0) + (m.context_tokens or 0) / 2
    return prefill_inputs(recipe.nodes, params.active_b * 1e9, params.total_b * 1e9, params.routed_experts,
                          params.experts_per_token, facts.build.format, model.attention, attended)


def _with_prefill(index: CatalogIndex, hardware: Hardware, recipes: list[Recipe],
                  c: SpeedConstants, borrow: bool = True) -> SpeedConstants:
    points = [(p, m.value, r.id) for r in recipes for m in r.measurements
              if m.metric == "prefill_tok_s" and not index.facts[r.build].model.tables
              and (p := prefill_point(index, r, m)) is not None]
    if not points:
        return _borrow_prefill(index, hardware, c) if borrow else c
    best = min((_fit_prefill(points, replace(c, expert_prefill_factor=f)) for f in EXPERT_FACTORS),
               key=lambda fitted: sum(_prefill_error(p, v, fitted) ** 2 for p, v, _ in points))
    return _with_prefill_band(points, best)


def _fit_prefill(points: list[tuple[PrefillInputs, float, str]], c: SpeedConstants) -> SpeedConstants:
    own = _groups_by([(p.precision, rid) for p, _, rid in points], MIN_CLASS_RECIPES)
    columns = [*sorted(own), "attention"]
    rows, targets, weights = [], [], []
    for p, value, _ in points:
        gemm = 2 * (p.dense_params + c.expert_prefill_factor * p.expert_params) / p.nodes / 1e9
        row = [gemm if p.precision == name else 0.0 for name in columns[:-1]]
        row.append(attention_flops_per_token(p.attention, p.attended_tokens) / p.nodes / 1e9)
        ms = 1e3 / value
        rows.append(row)
        targets.append(ms - prefill_link_s_per_token(p.nodes, p.attention, c.link_gb_s) * 1e3)
        weights.append(1 / ms ** 2)
    solution = dict(zip(columns, nnls(rows, targets, weights), strict=True))
    rates: dict[str, float | None] = {name: solution.get(name) or None for name in PRECISIONS}
    basis = dict(c.basis)
    for name in PRECISIONS:
        count = sum(1 for q, _, _ in points if q.precision == name)
        basis[f"prefill:{name}"] = f"fitted to {count} prefill measurements" if rates[name] else ""
    rates, basis = _fill_precisions(rates, basis)
    attention = solution["attention"] or rates.get("bf16") or 0.0
    basis["prefill_ms_per_gflop"] = f"fitted to {len(points)} prefill measurements (all engines)"
    basis["expert_prefill_factor"] = f"best of {len(EXPERT_FACTORS)} factors over {len(points)} prefill measurements"
    return replace(c, prefill_ms_per_gflop=rates, prefill_attention_ms_per_gflop=attention,
                   prefill_measurements=len(points), basis=basis)


def _groups_by(pairs: list[tuple[str, str]], minimum: int) -> set[str]:
    ids: dict[str, set[str]] = {}
    for key, rid in pairs:
        ids.setdefault(key, set()).add(rid)
    return {k for k, v in ids.items() if len(v) >= minimum}


def _fill_precisions(rates: dict[str, float | None], basis: dict[str, str]) -> tuple[dict[str, float | None],
                                                                                      dict[str, str]]:
    """A precision without measurements of its own: between its neighbours on the fp4 < fp8 < bf16
    ladder (the geometric mean), else the slower neighbour's rate (no speed-up assumed)."""
    filled = dict(rates)
    ladder = ("fp4", "fp8", "bf16")
    for i, p in enumerate(ladder):
        if filled.get(p):
            continue
        lower = next((filled[q] for q in reversed(ladder[:i]) if filled.get(q)), None)
        upper = next((filled[q] for q in ladder[i + 1:] if filled.get(q)), None)
        if lower and upper:
            filled[p], basis[f"prefill:{p}"] = math.sqrt(lower * upper), "no measurement: between its neighbours"
        elif upper or lower:
            filled[p] = upper or lower
            basis[f"prefill:{p}"] = "no measurement: a neighbouring precision's rate, no speed-up assumed"
    if not filled.get("int8"):
        filled["int8"], basis["prefill:int8"] = filled.get("fp8"), "as fp8"
    return filled, basis


def _prefill_error(p: PrefillInputs, value: float, c: SpeedConstants) -> float:
    rate = estimate_prefill(p, c)
    return math.log(rate / value) if rate else 10.0


def _with_prefill_band(points: list[tuple[PrefillInputs, float, str]], c: SpeedConstants) -> SpeedConstants:
    recipe_ids = list(dict.fromkeys(rid for _, _, rid in points))
    if len(recipe_ids) < 2:
        return c
    folds = min(BAND_FOLDS, len(recipe_ids))
    errors = []
    for fold in range(folds):
        held = set(recipe_ids[fold::folds])
        train = [pt for pt in points if pt[2] not in held]
        if train:
            fitted = _fit_prefill(train, c)
            errors += [abs(_prefill_error(p, v, fitted)) for p, v, rid in points if rid in held]
    return replace(c, prefill_band=_band(errors), basis={**c.basis, "prefill_band": _band_basis(len(errors))})


def _borrow_prefill(index: CatalogIndex, hardware: Hardware, c: SpeedConstants) -> SpeedConstants:
    """Without prefill measurements of its own, a hardware profile takes the share of the tensor
    peak measured hardware reaches, times its own peak."""
    own_peak = tensor_peak_flops(hardware)
    if not own_peak:
        return c
    for other in index.catalog.hardware:
        if other.id == hardware.id or not tensor_peak_flops(other):
            continue
        recipes = [r for r in index.catalog.recipes if r.hardware == other.id and r.build in index.builds]
        donor = _with_prefill(index, other, recipes, default_constants(other), borrow=False) if recipes else None
        if donor is None or not donor.prefill_measurements:
            continue
        scale = tensor_peak_flops(other) / own_peak
        rates = {p: (r * scale if r else None) for p, r in donor.prefill_ms_per_gflop.items()}
        basis = {**c.basis, "prefill_ms_per_gflop": f"{other.name}'s measured rates, scaled by the tensor peaks"}
        return replace(c, prefill_ms_per_gflop=rates, expert_prefill_factor=donor.expert_prefill_factor,
                       prefill_attention_ms_per_gflop=donor.prefill_attention_ms_per_gflop * scale,
                       prefill_band=donor.prefill_band, basis=basis)
    return c


# --- predictions for the report card ------------------------------------------


def recipe_decode(index: CatalogIndex, recipe: Recipe, m: Measurement,
                  constants: SpeedConstants) -> tuple[float, float, float] | str:
    """(expected, low, high) in the measurement's own terms (per stream for decode_tok_s,
    all streams for aggregate_tok_s), at its own context, streams and mode, or why it cannot
    be predicted."""
    o = observation(index, recipe, m)
    if o is None:
        return "active parameters unpublished"
    hardware = index.hardware[recipe.hardware]
    d = estimate_decode(o.inputs, hardware.memory_bandwidth_gb_s, constants)
    per = m.streams if m.metric == "decode_tok_s" else 1
    return d.expected_tok_s / per, d.low_tok_s / per, d.high_tok_s / per


def recipe_prefill(index: CatalogIndex, recipe: Recipe, m: Measurement,
                   constants: SpeedConstants) -> tuple[float, float, float] | str:
    """(expected, low, high) prompt tok/s for a recipe at the measurement's context and depth, or why not."""
    p = prefill_point(index, recipe, m)
    if p is None:
        return "active parameters unpublished"
    rate = estimate_prefill(p, constants)
    if rate is None:
        return "no effective prefill rate (no compute peak and no other prefill measurement)"
    return (rate, *prefill_range(rate, constants))
