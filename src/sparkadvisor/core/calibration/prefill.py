"""The prefill fit: each prefill measurement with what its prompt tokens compute (`PrefillPoint`),
a rate per compute precision and for attention pooled over engines, each engine's own rates once
two of its recipes measured a path, the expert factor that fits best, and the range from recipes
held out in folds. Hardware without prefill measurements borrows another's, scaled by the
tensor peaks."""

from __future__ import annotations

import math
from dataclasses import replace

from sparkadvisor.core.calibration.evidence import (
    BAND_FOLDS,
    MIN_CLASS_RECIPES,
    MIN_PATH_RECIPES,
    band_basis,
    band_from,
    groups_by,
)
from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.lsq import nnls
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Hardware, Measurement, Recipe
from sparkadvisor.core.speed.chunks import pipeline_ubatches, prefill_chunk
from sparkadvisor.core.speed.constants import PRECISIONS, SpeedConstants, default_constants, tensor_peak_flops
from sparkadvisor.core.speed.prefill import (
    PrefillInputs,
    attention_flops_per_token,
    estimate_prefill,
    prefill_indexer,
    prefill_inputs,
    prefill_link_s_per_token,
    prefill_range,
)

EXPERT_FACTORS = (1.0, 1.5, 2.0, 3.0)
"""Candidate costs of an expert prefill FLOP in dense FLOPs."""


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
                                                     m.chunk_tokens), extra_args=recipe.extra_args,
                          ubatches=pipeline_ubatches(recipe.engine, recipe.pp, recipe.extra_args, m.context_tokens,
                                                     prefill_chunk(recipe.engine, recipe.extra_args, None,
                                                                   m.chunk_tokens)), stages=recipe.pp)


def prefill_points(index: CatalogIndex, recipes: list[Recipe]) -> list[PrefillPoint]:
    """The prefill measurements the fit may use (no unpublished per-token table reads)."""
    return [PrefillPoint(p, m.value, r.id, r.engine) for r in recipes for m in r.measurements
            if m.metric == "prefill_tok_s" and not index.facts[r.build].model.tables
            and (p := prefill_point(index, r, m)) is not None]


def with_prefill(index: CatalogIndex, hardware: Hardware, recipes: list[Recipe], c: SpeedConstants,
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
    own = groups_by(_path_pairs(points), MIN_PATH_RECIPES)
    columns = [*sorted(own), *ATTENTION_TERMS]
    rows, targets, weights = [], [], []
    for pt in points:
        p = pt.inputs
        terms = _attention_terms(p)
        gflop = p.gflop_by_precision(c.expert_prefill_factor)
        stage = p.stage_factor  # a layer split's pipeline stretches every term but the link
        rows.append([stage * gflop.get(name, 0.0) for name in sorted(own)]
                    + [stage * terms[t] for t in ATTENTION_TERMS])
        ms = 1e3 / pt.value
        targets.append(ms - prefill_link_s_per_token(p.nodes, p.attention, c.link_gb_s, p.stages) * 1e3
                       - stage * terms["weights"] * c.prefill_weight_ms_per_gb)
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
    own = sorted(groups_by(_path_pairs(points), MIN_CLASS_RECIPES))
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
        stage = p.stage_factor
        rates = {path: pooled.prefill_ms_per_gflop.get(path) for path in gflop if path not in own}
        if any(rate is None for rate in rates.values()):
            continue
        staged = (terms["weights"] * pooled.prefill_weight_ms_per_gb
                  + sum(gflop[path] * (rate or 0.0) for path, rate in rates.items())
                  + sum(terms[t] * pooled_rates[t] for t in ATTENTION_TERMS if t not in own_terms))
        fixed = prefill_link_s_per_token(p.nodes, p.attention, pooled.link_gb_s, p.stages) * 1e3 + stage * staged
        rows.append([stage * gflop.get(name, 0.0) for name in own] + [stage * terms[t] for t in own_terms])
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
                   basis={**c.basis, "prefill_band": band_basis(len(errors), folds)}), own


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
        donor, donor_own = with_prefill(index, other, recipes, default_constants(other), borrow=False) \
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
