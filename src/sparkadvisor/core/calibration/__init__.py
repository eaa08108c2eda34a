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
unpublished, and their time would pass for a rate. Models without layer facts do not either, nor
runs on an engine a caveat reports far slower than the build's reads (`on_slow_route`).
Ranges: the errors on recipes left out of the fit, in folds. `exclude` leaves recipes out, so
a measurement never predicts itself (leave-one-out).
"""

from __future__ import annotations

from dataclasses import field, replace

from sparkadvisor.core.calibration.decode import (
    constants_for,
    decode_bands,
    fit_decode,
    fittable,
    gemm_floor,
    recipe_decode,
    with_acceptance,
)
from sparkadvisor.core.calibration.evidence import BAND_QUANTILE, POOLED, band_from
from sparkadvisor.core.calibration.prefill import PrefillFit, recipe_prefill, with_prefill
from sparkadvisor.core.caveats import slow_route
from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Hardware, Recipe
from sparkadvisor.core.speed.constants import SpeedConstants, default_constants

__all__ = ["BAND_QUANTILE", "POOLED", "Calibration", "band_from", "calibrate", "calibrate_all", "constants_for",
           "on_slow_route", "recipe_decode", "recipe_prefill"]


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


def on_slow_route(index: CatalogIndex, recipe: Recipe) -> str:
    """The caveat (its cite) reporting the recipe's engine far slower than what its build reads and computes
    (`caveats.slow_route`), "" for none: such a run measures a defect, no rate the fit could carry."""
    facts = index.facts.get(recipe.build)
    return slow_route(index.caveats_of(facts, recipe), recipe.engine) if facts is not None else ""


def calibrate_all(index: CatalogIndex, hardware: Hardware, exclude: frozenset[str] = frozenset()) -> Calibration:
    """Constants for every engine measured on `hardware`, fitted to all its recipes but `exclude`."""
    recipes = [r for r in index.catalog.recipes if r.hardware == hardware.id and r.id not in exclude
               and r.build in index.builds and not on_slow_route(index, r)]
    base, prefill = with_prefill(index, hardware, recipes, with_acceptance(recipes, default_constants(hardware)))
    observations = [o for r in recipes for m in r.measurements if (o := fittable(index, r, m)) is not None]
    if not observations:
        return Calibration(hardware.id, {}, base, prefill)
    floor = gemm_floor([base, *(own.apply(base) for own in prefill.values())])
    fit = fit_decode(observations, hardware.memory_bandwidth_gb_s, base, floor)
    (decode, aggregate), notes = decode_bands(observations, hardware.memory_bandwidth_gb_s,
                                              next(iter(fit.values())).expert_spread, base, floor)
    engines = {e: replace(c, decode_band=decode.above, decode_band_below=decode.below,
                          aggregate_band=aggregate.above, aggregate_band_below=aggregate.below,
                          basis={**c.basis, **notes})
               for e, c in fit.items()}
    reference = engines.get(POOLED) or engines.get("vllm") or base
    return Calibration(hardware.id, {e: c for e, c in engines.items() if e != POOLED}, reference, prefill)
