"""The decode fit: each decode measurement with what its step reads and runs (`Observation`), the
rates per engine group by non-negative least squares in relative error, the expert spread that
fits best, and the single-stream and aggregate ranges from recipes held out in folds."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from sparkadvisor.core.calibration.evidence import (
    BAND_FOLDS,
    MIN_CLASS_RECIPES,
    MIN_ENGINE_RECIPES,
    POOLED,
    Band,
    band_basis,
    band_from,
    groups_by,
)
from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.lsq import nnls
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Measurement, Recipe
from sparkadvisor.core.speed.constants import SpeedConstants
from sparkadvisor.core.speed.decode import (
    DecodeInputs,
    drafter_key,
    estimate_decode,
    link_ms,
    pass_cost,
    read_ms,
    read_under,
    weights_parts_ms,
)
from sparkadvisor.core.stages.decode import DEFAULT_DECODE_CONTEXT, as_measured, decode_inputs
from sparkadvisor.core.stages.kv_pool import recipe_kv_read

SPREADS = (0.3, 0.4, 0.5, 0.65, 0.8, 1.0)
"""Candidate shares of the experts a batch's routing spreads over (1: uniform independent draws)."""

DECODE_METRICS = ("decode_tok_s", "aggregate_tok_s")
"""The measurements the decode fit reads (per stream and across streams)."""


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
                         streams, read_under(facts.build, recipe))


@record(kw_only=False)
class _Design:
    """The fit's columns for one set of observations: names, rows, targets, weights."""

    columns: list[str]
    rows: list[list[float]]
    targets: list[float]
    weights: list[float]


GemmFloor = tuple[float, str | None]
"""(ms per GFLOP, precision): the rate no decode GEMM beats (`gemm_floor`)."""


def fit_decode(observations: Sequence[Observation], bandwidth: float, base: SpeedConstants,
               floor: GemmFloor = (0.0, None)) -> dict[str, SpeedConstants]:
    """Constants per engine group, at the expert spread that fits best (`floor`: `gemm_floor`)."""
    best: tuple[float, dict[str, SpeedConstants]] | None = None
    batched = any(o.inputs.tokens_verified > 1 and o.inputs.routed_experts for o in observations)
    for spread in SPREADS if batched else (base.expert_spread,):
        constants = _fit_at(observations, bandwidth, replace(base, expert_spread=spread), floor)
        error = sum(_log_error(o, bandwidth, constants) ** 2 for o in observations)
        if best is None or error < best[0] - 1e-12:
            best = (error, constants)
    assert best is not None
    return best[1]


def _groups(observations: Sequence[Observation], key, minimum: int) -> set[str]:
    return groups_by([(key(o), o.recipe.id) for o in observations], minimum)


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
        in_format = weights_parts_ms(pass_cost(i, bare), i.stored_bits, i.tp, bandwidth, bare, i.counted_read,
                                     i.experts_per_token)[1]
        values = {"kv_ms_per_gb": i.kv_bytes_read * i.streams * i.pp / 1e9,
                  "compute_ms_per_gflop": i.tokens_verified * 2 * i.active_params / i.tp / 1e9,
                  "spec_ms_per_step": i.drafter_steps if i.spec_tokens else 0.0,
                  "eager_ms_per_layer": (i.layers or 0) if i.eager else 0.0,
                  "allreduce_us": (2 * (i.layers or 0) * math.log2(i.tp) + i.pp - 1) / 1e3,
                  f"fixed_ms:{_engine_of(o, own)}": 1.0,
                  f"layer_ms:{_engine_of(o, own)}": float(i.layers or 0),
                  f"weight_penalty:{i.weight_class}": in_format}
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


def gemm_floor(constants: Sequence[SpeedConstants]) -> GemmFloor:
    """(ms per GFLOP, precision) of the fastest GEMM rate the prefill fit found on this hardware, for the engine
    whose fastest is slowest (`constants`: the pooled prefill rates and each engine's own): a decode step's
    GEMMs, a few tokens against each weight, run no faster per FLOP than its engine's prefill GEMMs, thousands
    of tokens against each, and one shared decode rate serves every engine (0.0 and None where no prefill rate
    is known)."""
    fastest = [min((rate, precision) for precision, rate in c.prefill_ms_per_gflop.items() if rate)
               for c in constants if any(c.prefill_ms_per_gflop.values())]
    return max(fastest) if fastest else (0.0, None)


def _fit_at(observations: Sequence[Observation], bandwidth: float, c: SpeedConstants,
            gemm: GemmFloor) -> dict[str, SpeedConstants]:
    design, own = _design(observations, bandwidth, c)
    # The compute rate is fitted above the floor: the floor's share of each step leaves the target first.
    floor, precision = gemm
    j = design.columns.index("compute_ms_per_gflop")
    targets = [target - floor * row[j] for target, row in zip(design.targets, design.rows, strict=True)]
    solution = dict(zip(design.columns, nnls(design.rows, targets, design.weights), strict=True))
    at_floor = floor > 0 and solution["compute_ms_per_gflop"] == 0.0
    solution["compute_ms_per_gflop"] += floor
    count = len(observations)
    shared: dict[str, float] = {k: solution[k] for k in ("kv_ms_per_gb", "compute_ms_per_gflop", "spec_ms_per_step",
                                       "eager_ms_per_layer", "allreduce_us")
                                 if k in solution and _exercised(design, k)}
    penalty = {k.split(":", 1)[1]: v for k, v in solution.items() if k.startswith("weight_penalty:")}
    basis = {**c.basis, "weight_penalty": f"fitted to {count} decode measurements (formats with 2+ recipes)"}
    for k in shared:
        basis[k] = _fitted(sum(1 for row in design.rows if row[design.columns.index(k)]), k)
    if at_floor and "compute_ms_per_gflop" in shared:
        basis["compute_ms_per_gflop"] = (f"at {1 / floor:.0f} TFLOPS, its floor: the fastest GEMM rate prefill "
                                         f"reaches here ({precision}); fitted freely it would be faster, which a "
                                         "GEMM of a few tokens is not")
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


def decode_bands(observations: Sequence[Observation], bandwidth: float, spread: float,
                 base: SpeedConstants, floor: GemmFloor = (0.0, None)) -> tuple[tuple[Band, Band], dict[str, str]]:
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
        fitted = _fit_at(train, bandwidth, replace(base, expert_spread=spread), floor)
        for o in observations:
            if o.recipe.id in held:
                (single if o.inputs.streams == 1 else batched).append(_log_error(o, bandwidth, fitted))
    decode = band_from(single) if single else symmetric[0]
    aggregate = band_from(batched) if len(batched) >= 3 else decode
    basis = {"decode_band": band_basis(len(single), folds),
             "aggregate_band": band_basis(len(batched), folds) if len(batched) >= 3 else "the single-stream range"}
    return (decode, aggregate), basis


def with_acceptance(recipes: list[Recipe], c: SpeedConstants) -> SpeedConstants:
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
