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
from dataclasses import field, replace

from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.lsq import nnls
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Hardware, Measurement, Recipe
from sparkadvisor.core.speed.constants import MIN_BAND, PRECISIONS, SpeedConstants, default_constants, tensor_peak_flops
from sparkadvisor.core.speed.decode import DecodeInputs, drafter_key, estimate_decode, link_ms, read_ms
from sparkadvisor.core.speed.prefill import (
    PrefillInputs,
    attention_flops_per_token,
    estimate_prefill,
    prefill_chunk,
    prefill_indexer,
    prefill_inputs,
    prefill_link_s_per_token,
    prefill_range,
)
from sparkadvisor.core.stages.decode import DEFAULT_DECODE_CONTEXT, as_measured, decode_inputs
from sparkadvisor.core.stages.kv_pool import recipe_kv_read

BAND_QUANTILE = 0.8
"""The share of figures a range is built to hold: of the errors the model makes on measurements
left out of the fit, at most half the rest fall below it and half above (`band_from`)."""

BAND_FOLDS = 5
"""Cross-validation groups for the ranges (leave-one-recipe-out below five recipes)."""

MIN_ENGINE_RECIPES = 2
"""Measured recipes an engine needs before its fixed costs are its own rather than pooled."""

MIN_CLASS_RECIPES = 2
"""Measured recipes a weight format or compute precision needs before it gets its own rate."""

MIN_PATH_RECIPES = 1
"""Measured recipes a prefill tensor path needs for a pooled rate of its own: one measured
effective rate of a path says more than interpolating between its neighbours (an engine's own
rate for a path still needs MIN_CLASS_RECIPES)."""

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

    def step_ms(self, c: SpeedConstants) -> float:
        """The measured time of one pass: every stream's accepted tokens over the total rate (at the
        recipe's own acceptance, else its drafter's or the median in `c`)."""
        i = self.inputs
        accepted = i.acceptance if i.acceptance is not None else c.acceptance_for(i.drafter)
        return i.streams * (1 + i.spec_tokens * accepted) / self.total_tok_s * 1e3


@record(kw_only=False)
class Calibration:
    """Speed constants for one hardware profile, for every engine the catalog measured there."""

    hardware: str
    engines: dict[str, SpeedConstants]
    """Constants of each engine with measured recipes of its own, and of the pooled group."""
    reference: SpeedConstants
    """For an engine nobody measured: the pooled group's, else vLLM's, else the assumptions."""
    prefill: dict[str, PrefillFit] = field(default_factory=dict)
    """Prefill rates of each engine that measured a tensor path on two recipes (the others use
    the pooled rates every constants set carries)."""

    def for_engine(self, engine: str) -> SpeedConstants:
        """The constants a plan on this engine uses."""
        own = self.engines.get(engine)
        if own is None:
            own = replace(self.reference, engine=engine, basis={
                **self.reference.basis, "engine": f"no {engine} measurement: {self.reference.engine}'s fixed costs"})
        fit = self.prefill.get(engine)
        return fit.apply(own) if fit is not None else own


def calibrate(index: CatalogIndex, hardware: Hardware, engine: str = "vllm",
              exclude: frozenset[str] = frozenset()) -> SpeedConstants:
    """Constants for `hardware` and `engine`, fitted to every recipe measured there but `exclude`."""
    return calibrate_all(index, hardware, exclude).for_engine(engine)


def calibrate_all(index: CatalogIndex, hardware: Hardware, exclude: frozenset[str] = frozenset()) -> Calibration:
    """Constants for every engine measured on `hardware`, fitted to all its recipes but `exclude`."""
    recipes = [r for r in index.catalog.recipes if r.hardware == hardware.id and r.id not in exclude
               and r.build in index.builds]
    base, prefill = _with_prefill(index, hardware, recipes, _with_acceptance(recipes, default_constants(hardware)))
    observations = [o for r in recipes for m in r.measurements if (o := fittable(index, r, m)) is not None]
    if not observations:
        return Calibration(hardware.id, {}, base, prefill)
    fit = fit_decode(observations, hardware.memory_bandwidth_gb_s, base)
    (decode, aggregate), notes = _bands(observations, hardware.memory_bandwidth_gb_s,
                                        next(iter(fit.values())).expert_spread, base)
    engines = {e: replace(c, decode_band=decode.above, decode_band_below=decode.below,
                          aggregate_band=aggregate.above, aggregate_band_below=aggregate.below,
                          basis={**c.basis, **notes})
               for e, c in fit.items()}
    reference = engines.get(POOLED) or engines.get("vllm") or base
    return Calibration(hardware.id, {e: c for e, c in engines.items() if e != POOLED}, reference, prefill)


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
                         streams, facts.build.decode_read)


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
    paired = bool(_both_modes(observations))
    columns = ["kv_ms_per_gb", "compute_ms_per_gflop", "spec_ms_per_step"]
    columns += ["eager_ms_per_layer"] if paired else []
    columns += ["allreduce_us"] if multi else []
    columns += [f"{name}:{e}" for e in engines for name in ("fixed_ms", "layer_ms")]
    columns += [f"weight_penalty:{k}" for k in classes]
    bare = replace(c, weight_penalty={}, allreduce_us=0.0 if multi else c.allreduce_us)
    design = _Design(columns, [], [], [])
    for o in observations:
        i, measured = o.inputs, o.step_ms(c)
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
        eager = 0.0 if paired or not i.eager else c.eager_ms_per_layer * (i.layers or 0)
        design.targets.append(measured - weights - draft - link_ms(i, bare) - eager)
        design.weights.append(1 / measured ** 2)
    return design, own


def _both_modes(observations: Sequence[Observation]) -> set[str]:
    """Recipes measured both with and without CUDA graphs. Only such a pair tells the eager cost per
    layer apart from the weights and fixed costs (an eager-only recipe leaves them confounded), so
    without one the eager cost stays assumed."""
    modes: dict[str, set[bool]] = {}
    for o in observations:
        modes.setdefault(o.recipe.id, set()).add(o.inputs.eager)
    return {rid for rid, seen in modes.items() if len(seen) == 2}


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
    if "eager_ms_per_layer" not in design.columns:
        basis["eager_ms_per_layer"] = "assumed: no recipe measured both with and without CUDA graphs"
    basis["expert_spread"] = f"best of {len(SPREADS)} spreads over {count} decode measurements"
    result = {}
    for engine in {k.split(":", 1)[1] for k in design.columns if k.startswith("fixed_ms:")}:
        rows = sum(1 for row in design.rows if row[design.columns.index(f"fixed_ms:{engine}")])
        whose = (f"fitted to {rows} {engine} measurements" if engine != POOLED
                 else f"pooled over engines with fewer than {MIN_ENGINE_RECIPES} measured recipes "
                      f"({rows} measurements)")
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
           base: SpeedConstants) -> tuple[tuple[Band, Band], dict[str, str]]:
    """Single-stream and aggregate ranges from the signed errors on recipes held out of the fit, in folds."""
    recipe_ids = list(dict.fromkeys(o.recipe.id for o in observations))
    symmetric = (Band(base.decode_band, base.decode_band), Band(base.aggregate_band, base.aggregate_band))
    if len(recipe_ids) < 2:
        return symmetric, {}
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
                (single if o.inputs.streams == 1 else batched).append(_log_error(o, bandwidth, fitted))
    decode = band_from(single) if single else symmetric[0]
    aggregate = band_from(batched) if len(batched) >= 3 else decode
    basis = {"decode_band": _band_basis(len(single), folds),
             "aggregate_band": _band_basis(len(batched), folds) if len(batched) >= 3 else "the single-stream range"}
    return (decode, aggregate), basis


@record(kw_only=False)
class Band:
    """A range around an expected figure: low = expected / (1 + below), high = expected x (1 + above)."""

    below: float
    above: float


def band_from(errors: list[float]) -> Band:
    """The range an 80% share of new figures falls in, from signed held-out errors log(predicted /
    measured): split-conformal and equal-tailed (Lei et al. 2018, "Distribution-free predictive
    inference for regression"; Romano et al. 2019): the measured figure lies below the range for
    at most 10% of them and above it for at most 10%, each side from its own order statistic
    at the finite-sample rank (ceil((n + 1) x 0.9) of n), so a model that errs more one way
    than the other gets a range that leans the same way. Each side at least MIN_BAND."""
    ordered = sorted(errors)
    n = len(ordered)
    tail = (1 - BAND_QUANTILE) / 2
    over = ordered[min(math.ceil((n + 1) * (1 - tail)), n) - 1]  # predicted too high: measured below
    under = ordered[max(math.floor((n + 1) * tail), 1) - 1]  # predicted too low: measured above
    return Band(max(math.exp(over) - 1, MIN_BAND), max(math.exp(-under) - 1, MIN_BAND))


def _band_basis(count: int, folds: int) -> str:
    return (f"an {BAND_QUANTILE:.0%} range: split-conformal from the errors on {count} "
            f"measurement{'s' if count != 1 else ''} left out of the fit in {folds} folds, at most "
            f"{(1 - BAND_QUANTILE) / 2:.0%} of them below it and {(1 - BAND_QUANTILE) / 2:.0%} above")


def _with_acceptance(recipes: list[Recipe], c: SpeedConstants) -> SpeedConstants:
    """Acceptance for recipes that do not publish theirs: the median their drafter reached in the other
    recipes that published it (`drafter_acceptance`), else the median over every published acceptance.
    `recipes` never holds the recipe being predicted (`calibrate_all`'s `exclude`)."""
    published = [(drafter_key(r.build, r.speculative.method, r.speculative.draft_repo), r.speculative.acceptance)
                 for r in recipes if r.speculative and r.speculative.acceptance is not None]
    if not published:
        return c
    import statistics  # here, not at the top: a warm start reads calibrations from the cache (5 ms spared)

    by_drafter: dict[str, list[float]] = {}
    for drafter, rate in published:
        by_drafter.setdefault(drafter, []).append(rate)
    basis = {**c.basis, "acceptance": f"median of {len(published)} published acceptance rates"}
    for drafter, rates in by_drafter.items():
        basis[f"acceptance:{drafter}"] = (f"{'median of ' if len(rates) > 1 else ''}{len(rates)} other recipe"
                                          f"{'s' if len(rates) > 1 else ''} of this drafter publishing its acceptance")
    return replace(c, acceptance=statistics.median(rate for _, rate in published),
                   drafter_acceptance={d: statistics.median(rates) for d, rates in by_drafter.items()}, basis=basis)


# --- prefill ------------------------------------------------------------------


@record(kw_only=False)
class PrefillPoint:
    """One prefill measurement with what the model says each of its prompt tokens computes."""

    inputs: PrefillInputs
    value: float
    """Measured prompt tokens per second across the cluster."""
    recipe: str
    engine: str


@record(kw_only=False)
class PrefillFit:
    """An engine's own prefill rates: a tensor path it measured on at least two recipes gets its
    own effective rate, and so does attention; every other rate is the pooled fit's."""

    rates: dict[str, float | None]
    """Milliseconds per GFLOP of prefill GEMM by compute precision."""
    attention_ms_per_gflop: float
    """Milliseconds per GFLOP of prefill attention."""
    kv_ms_per_gb: float
    """Milliseconds per GB of K/V a prompt token attends to."""
    measurements: int
    """The engine's prefill measurements behind these rates."""
    basis: dict[str, str]
    """Where each rate comes from (the prefill keys of SpeedConstants.basis)."""
    weight_ms_per_gb: float = 0.0

    def apply(self, c: SpeedConstants) -> SpeedConstants:
        """`c` with this engine's prefill rates (the expert factor and the band stay `c`'s)."""
        return replace(c, prefill_ms_per_gflop=dict(self.rates),
                       prefill_attention_ms_per_gflop=self.attention_ms_per_gflop,
                       prefill_kv_ms_per_gb=self.kv_ms_per_gb, prefill_weight_ms_per_gb=self.weight_ms_per_gb,
                       prefill_measurements=self.measurements,
                       basis={**c.basis, **self.basis})

    def scaled(self, scale: float, kv_scale: float, note: str) -> PrefillFit:
        """These rates on hardware `scale` times slower in compute (a ratio of tensor peaks) and
        `kv_scale` times slower in bandwidth."""
        rates = {p: (r * scale if r else None) for p, r in self.rates.items()}
        return PrefillFit(rates, self.attention_ms_per_gflop * scale, self.kv_ms_per_gb * kv_scale, 0,
                          {**self.basis, "prefill_ms_per_gflop": note})


def prefill_point(index: CatalogIndex, recipe: Recipe, m: Measurement) -> PrefillInputs | None:
    """What a prefill measurement computed per prompt token, or None (no active parameters).
    The prompt attends to the cached depth plus, on average, half of itself."""
    facts = index.facts[recipe.build]
    model, params = facts.model, facts.model.params
    if params.active_b is None:
        return None
    attended = (m.depth_tokens or 0) + (m.context_tokens or 0) / 2
    w = facts.weights
    return prefill_inputs(recipe.nodes, params.active_b * 1e9, params.total_b * 1e9, params.routed_experts,
                          params.experts_per_token, facts.build.format, model.attention, attended,
                          engine=recipe.engine, kv_cache_dtype=recipe.kv_cache_dtype,
                          weight_bytes=w.transformer_bytes,
                          chunk_tokens=prefill_chunk(recipe.engine, recipe.extra_args, m.context_tokens,
                                                     m.chunk_tokens), extra_args=recipe.extra_args)


def prefill_points(index: CatalogIndex, recipes: list[Recipe]) -> list[PrefillPoint]:
    """The prefill measurements the fit may use (no unpublished per-token table reads)."""
    return [PrefillPoint(p, m.value, r.id, r.engine) for r in recipes for m in r.measurements
            if m.metric == "prefill_tok_s" and not index.facts[r.build].model.tables
            and (p := prefill_point(index, r, m)) is not None]


def _with_prefill(index: CatalogIndex, hardware: Hardware, recipes: list[Recipe], c: SpeedConstants,
                  borrow: bool = True) -> tuple[SpeedConstants, dict[str, PrefillFit]]:
    """The pooled prefill constants (every engine's measurements) and each engine's own rates.
    The expert factor is the one of EXPERT_FACTORS under which the engines' rates predict the
    measurements best."""
    points = prefill_points(index, recipes)
    if not points:
        return _borrow_prefill(index, hardware, c) if borrow else (c, {})
    best = min((_fit_prefill_all(points, replace(c, expert_prefill_factor=f)) for f in EXPERT_FACTORS),
               key=lambda fitted: sum(_prefill_error(pt, *fitted) ** 2 for pt in points))
    pooled, own = best
    basis = {**pooled.basis, "expert_prefill_factor": f"best of {len(EXPERT_FACTORS)} factors over "
                                                      f"{len(points)} prefill measurements"}
    return _with_prefill_band(points, replace(pooled, basis=basis), own)


def _fit_prefill_all(points: list[PrefillPoint], c: SpeedConstants) -> tuple[SpeedConstants, dict[str, PrefillFit]]:
    pooled = _fit_prefill(points, c)
    own = {}
    for engine in sorted({pt.engine for pt in points}):
        fit = _fit_engine(engine, [pt for pt in points if pt.engine == engine], pooled)
        if fit is not None:
            own[engine] = fit
    return pooled, own


def _paths(pt: PrefillPoint) -> set[str]:
    return {pt.inputs.precision, pt.inputs.expert_precision or pt.inputs.precision}


def _path_pairs(points: list[PrefillPoint]) -> list[tuple[str, str]]:
    """(tensor path, recipe) for every path a measurement's GEMMs ran on."""
    return [(path, pt.recipe) for pt in points for path in _paths(pt)]


ATTENTION_TERMS = ("attention", "kv")
"""The two costs of prefill attention, each at its own rate: its FLOPs, and the cached K/V it
streams once per tile of queries."""


def _attention_terms(p: PrefillInputs) -> dict[str, float]:
    """GFLOP of attention (the indexer's scoring included, replicated per node) and GB of attended
    K/V, per prompt token per node; "weights" also carries the indexer's logits, both streamed at
    the read test."""
    indexer, logits_gb, _ = prefill_indexer(p)
    return {"attention": attention_flops_per_token(p.attention, p.attended_tokens) / p.nodes / 1e9 + indexer,
            "kv": p.kv_gb, "weights": p.weight_gb + logits_gb}


def _attention_rates(c: SpeedConstants) -> dict[str, float]:
    return {"attention": c.prefill_attention_ms_per_gflop, "kv": c.prefill_kv_ms_per_gb,
            "weights": c.prefill_weight_ms_per_gb}


def _fit_prefill(points: list[PrefillPoint], c: SpeedConstants) -> SpeedConstants:
    """Rates pooled over every engine: a rate per compute precision measured on a recipe, and
    the two attention rates."""
    own = _groups_by(_path_pairs(points), MIN_PATH_RECIPES)
    columns = [*sorted(own), *ATTENTION_TERMS]
    rows, targets, weights = [], [], []
    for pt in points:
        p = pt.inputs
        terms = _attention_terms(p)
        gflop = p.gflop_by_precision(c.expert_prefill_factor)
        rows.append([gflop.get(name, 0.0) for name in sorted(own)]
                    + [terms[t] for t in ATTENTION_TERMS])
        ms = 1e3 / pt.value
        targets.append(ms - prefill_link_s_per_token(p.nodes, p.attention, c.link_gb_s) * 1e3
                       - terms["weights"] * c.prefill_weight_ms_per_gb)
        weights.append(1 / ms ** 2)
    solution = dict(zip(columns, nnls(rows, targets, weights), strict=True)) if rows else {}
    rates: dict[str, float | None] = {name: solution.get(name) or None for name in PRECISIONS}
    basis = dict(c.basis)
    engines = _count_by(pt.engine for pt in points)
    for name in PRECISIONS:
        count = sum(1 for pt in points if name in _paths(pt))
        basis[f"prefill:{name}"] = f"pooled over engines, fitted to {count} prefill measurements" if rates[name] else ""
    rates, basis = _fill_precisions(rates, basis)
    attention = (solution.get("attention") or rates.get("bf16") or 0.0) if "attention" in ATTENTION_TERMS else 0.0
    basis["prefill_attention"] = (f"pooled over engines, fitted to {len(rows)} prefill measurements"
                                  if solution.get("attention") else "no fit: the bf16 GEMM rate")
    basis["prefill_kv"] = (f"pooled over engines, fitted to {len(rows)} prefill measurements"
                           if solution.get("kv") else "fitted to 0: no cost beyond the FLOPs")
    basis["prefill_ms_per_gflop"] = (f"pooled over engines, fitted to {len(points)} prefill measurements "
                                     f"({engines})")
    return replace(c, prefill_ms_per_gflop=rates, prefill_attention_ms_per_gflop=attention,
                   prefill_kv_ms_per_gb=solution.get("kv") or 0.0,
                   prefill_measurements=len(points), basis=basis)


def _fit_engine(engine: str, points: list[PrefillPoint], pooled: SpeedConstants) -> PrefillFit | None:
    """The engine's own rate for each tensor path it measured on two recipes, and its own
    attention rates once two of its recipes were measured at several depths; the pooled rates
    for the rest, held fixed. None when the engine has no path of its own."""
    own = sorted(_groups_by(_path_pairs(points), MIN_CLASS_RECIPES))
    if not own:
        return None
    recipes = {pt.recipe for pt in points}
    own_terms = ATTENTION_TERMS if len(_swept(points)) >= MIN_CLASS_RECIPES else ()
    pooled_rates = _attention_rates(pooled)
    columns = [*own, *own_terms]
    rows, targets, weights = [], [], []
    for pt in points:
        p = pt.inputs
        gflop, terms = p.gflop_by_precision(pooled.expert_prefill_factor), _attention_terms(p)
        ms = 1e3 / pt.value
        fixed = (prefill_link_s_per_token(p.nodes, p.attention, pooled.link_gb_s) * 1e3
                 + terms["weights"] * pooled.prefill_weight_ms_per_gb)
        rates = {path: pooled.prefill_ms_per_gflop.get(path) for path in gflop if path not in own}
        if any(rate is None for rate in rates.values()):
            continue
        fixed += sum(gflop[path] * (rate or 0.0) for path, rate in rates.items())
        fixed += sum(terms[t] * pooled_rates[t] for t in ATTENTION_TERMS if t not in own_terms)
        rows.append([gflop.get(name, 0.0) for name in own] + [terms[t] for t in own_terms])
        targets.append(ms - fixed)
        weights.append(1 / ms ** 2)
    solution = dict(zip(columns, nnls(rows, targets, weights), strict=True))
    rates, basis = dict(pooled.prefill_ms_per_gflop), {}
    for name in own:
        if solution[name]:
            rates[name] = solution[name]
            measured = [pt for pt in points if name in _paths(pt)]
            basis[f"prefill:{name}"] = (f"{engine}'s own, fitted to {len(measured)} prefill measurements of "
                                        f"{len({pt.recipe for pt in measured})} recipes")
    attention = dict(pooled_rates)
    for t in own_terms:  # FLOPs and bytes cost something: an own fit of 0 keeps the pooled rate
        if solution[t]:
            attention[t] = solution[t]
            basis[f"prefill_{t}"] = f"{engine}'s own, fitted to {len(rows)} prefill measurements"
        else:
            basis[f"prefill_{t}"] = f"pooled over engines ({engine}'s own fit gave 0)"
    mine = [name for name in own if solution[name]]
    basis["prefill_ms_per_gflop"] = (f"{engine}'s own rates for {', '.join(mine) or 'no path'} (fitted to "
                                     f"{len(points)} {engine} prefill measurements of {len(recipes)} recipes), "
                                     "the pooled fit's for the rest")
    return PrefillFit(rates, attention["attention"], attention["kv"], len(points), basis,
                      pooled.prefill_weight_ms_per_gb)


def _swept(points: list[PrefillPoint]) -> set[str]:
    """Recipes measured at two or more attended depths: only such a sweep tells an engine's
    attention cost apart from its GEMM rate (a single depth per recipe leaves them confounded)."""
    depths: dict[str, set[float]] = {}
    for pt in points:
        depths.setdefault(pt.recipe, set()).add(pt.inputs.attended_tokens)
    return {rid for rid, seen in depths.items() if len(seen) >= 2}


def _count_by(keys) -> str:
    counts: dict[str, int] = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


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
        filled["int8"], basis["prefill:int8"] = filled.get("fp8"), "no measurement: as fp8"
    return filled, basis


def _prefill_constants(pooled: SpeedConstants, own: dict[str, PrefillFit], engine: str) -> SpeedConstants:
    fit = own.get(engine)
    return fit.apply(pooled) if fit is not None else pooled


def _prefill_error(pt: PrefillPoint, pooled: SpeedConstants, own: dict[str, PrefillFit]) -> float:
    rate = estimate_prefill(pt.inputs, _prefill_constants(pooled, own, pt.engine))
    return math.log(rate / pt.value) if rate else 10.0


def _with_prefill_band(points: list[PrefillPoint], c: SpeedConstants,
                       own: dict[str, PrefillFit]) -> tuple[SpeedConstants, dict[str, PrefillFit]]:
    recipe_ids = list(dict.fromkeys(pt.recipe for pt in points))
    if len(recipe_ids) < 2:
        return c, own
    folds = min(BAND_FOLDS, len(recipe_ids))
    errors = []
    for fold in range(folds):
        held = set(recipe_ids[fold::folds])
        train = [pt for pt in points if pt.recipe not in held]
        if train:
            fitted = _fit_prefill_all(train, c)
            errors += [_prefill_error(pt, *fitted) for pt in points if pt.recipe in held]
    band = band_from(errors)
    return replace(c, prefill_band=band.above, prefill_band_below=band.below,
                   basis={**c.basis, "prefill_band": _band_basis(len(errors), folds)}), own


def _borrow_prefill(index: CatalogIndex, hardware: Hardware,
                    c: SpeedConstants) -> tuple[SpeedConstants, dict[str, PrefillFit]]:
    """Without prefill measurements of its own, a hardware profile takes the share of the tensor
    peak measured hardware reaches, times its own peak."""
    own_peak = tensor_peak_flops(hardware)
    if not own_peak:
        return c, {}
    for other in index.catalog.hardware:
        if other.id == hardware.id or not tensor_peak_flops(other):
            continue
        recipes = [r for r in index.catalog.recipes if r.hardware == other.id and r.build in index.builds]
        donor, donor_own = _with_prefill(index, other, recipes, default_constants(other), borrow=False) \
            if recipes else (None, {})
        if donor is None or not donor.prefill_measurements:
            continue
        scale = tensor_peak_flops(other) / own_peak
        kv_scale = other.memory_bandwidth_gb_s / hardware.memory_bandwidth_gb_s
        note = f"{other.name}'s measured rates, scaled by the tensor peaks"
        rates = {p: (r * scale if r else None) for p, r in donor.prefill_ms_per_gflop.items()}
        basis = {**c.basis, "prefill_ms_per_gflop": note}
        return (replace(c, prefill_ms_per_gflop=rates, expert_prefill_factor=donor.expert_prefill_factor,
                        prefill_attention_ms_per_gflop=donor.prefill_attention_ms_per_gflop * scale,
                        prefill_kv_ms_per_gb=donor.prefill_kv_ms_per_gb * kv_scale,
                        prefill_band=donor.prefill_band, basis=basis),
                {e: fit.scaled(scale, kv_scale, f"{other.name}'s measured {e} rates, scaled by the tensor peaks")
                 for e, fit in donor_own.items()})
    return c, {}


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
