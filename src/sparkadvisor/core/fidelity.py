"""The speed model's report card: every measurement in the catalog against its prediction.

Each measurement is predicted with constants calibrated on every other recipe of its
hardware and engine (leave-one-recipe-out), so no figure ever predicts itself. The
summary gives, per metric, how many were predicted, the median absolute % error and the
share that fell inside the predicted range. A figure outside its range is counted, not
hidden.
"""

from __future__ import annotations

import statistics

from sparkadvisor.core.calibration import calibrate, recipe_decode, recipe_prefill
from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Measurement, Recipe
from sparkadvisor.core.speed import SpeedConstants

SPEED_METRICS = ("decode_tok_s", "aggregate_tok_s", "prefill_tok_s")
"""Metrics the speed model predicts; the others are listed as skipped with the reason."""


@record(kw_only=False)
class Check:
    """One measurement set against its leave-one-out prediction."""

    recipe: str
    build: str
    hardware: str
    engine: str
    metric: str
    streams: int
    context_tokens: int | None
    measured: float
    predicted: float | None
    """None when the model cannot predict it (see `skipped`)."""
    low: float | None
    high: float | None
    skipped: str = ""
    """Why there is no prediction, in a few words."""
    note: str = ""
    """What the prediction leaves out (per-token tables), in a few words."""

    @property
    def error_pct(self) -> float | None:
        """(predicted - measured) / measured, in percent."""
        return None if self.predicted is None else (self.predicted - self.measured) / self.measured * 100

    @property
    def inside(self) -> bool | None:
        """The measured figure lies within the predicted low-high range."""
        if self.low is None or self.high is None:
            return None
        return self.low <= self.measured <= self.high


@record(kw_only=False)
class Summary:
    """Statistics over the predicted checks of one metric (or all of them)."""

    metric: str
    count: int
    """Measurements predicted."""
    skipped: int
    """Measurements the model could not predict."""
    median_abs_error_pct: float | None
    within_range: int
    """How many measured figures fell inside their predicted range."""

    @property
    def within_range_share(self) -> float | None:
        """Share of predicted measurements inside their range."""
        return self.within_range / self.count if self.count else None


@record(kw_only=False)
class Fitted:
    """The constants fitted to the whole catalog for one hardware and engine."""

    hardware: str
    engine: str
    constants: SpeedConstants


@record(kw_only=False)
class Report:
    """Every check and the summaries, per metric and over all speed metrics."""

    checks: tuple[Check, ...]
    summaries: tuple[Summary, ...]
    fitted: tuple[Fitted, ...]


def fidelity(index: CatalogIndex) -> Report:
    """Predict every measurement of every recipe, leaving that recipe out of the calibration."""
    checks = tuple(c for recipe in index.catalog.recipes for c in _recipe_checks(index, recipe))
    metrics = [m for m in SPEED_METRICS if any(c.metric == m for c in checks)]
    summaries = [summarize(checks, m) for m in metrics] + [summarize(checks, "all")]
    pairs = dict.fromkeys((r.hardware, r.engine) for r in index.catalog.recipes
                          if r.measurements and r.hardware in index.hardware)
    fitted = tuple(Fitted(h, e, calibrate(index, index.hardware[h], e)) for h, e in pairs)
    return Report(checks, tuple(summaries), fitted)


def summarize(checks: tuple[Check, ...], metric: str) -> Summary:
    """Statistics for `metric` ("all" for every speed metric)."""
    chosen = [c for c in checks if (c.metric == metric if metric != "all" else c.metric in SPEED_METRICS)]
    predicted = [c for c in chosen if c.predicted is not None]
    errors = [abs(c.error_pct) for c in predicted if c.error_pct is not None]
    median = statistics.median(errors) if errors else None
    inside = sum(1 for c in predicted if c.inside)
    return Summary(metric, len(predicted), len(chosen) - len(predicted), median, inside)


def _recipe_checks(index: CatalogIndex, recipe: Recipe) -> list[Check]:
    if not recipe.measurements:
        return []
    hardware = index.hardware.get(recipe.hardware)
    if hardware is None:
        return [_check(recipe, m, skipped=f"unknown hardware {recipe.hardware!r}") for m in recipe.measurements]
    constants = calibrate(index, hardware, recipe.engine, exclude=frozenset({recipe.id}))
    return [_predict(index, recipe, m, constants) for m in recipe.measurements]


def _predict(index: CatalogIndex, recipe: Recipe, m: Measurement, constants: SpeedConstants) -> Check:
    if m.metric not in SPEED_METRICS:
        return _check(recipe, m, skipped="not a speed figure (the speed model does not predict it)")
    if m.metric == "prefill_tok_s":
        result = recipe_prefill(index, recipe, m, constants)
    else:
        result = recipe_decode(index, recipe, m, constants)
    if isinstance(result, str):
        return _check(recipe, m, skipped=result)
    expected, low, high = result
    return _check(recipe, m, expected, low, high, note=_note(index, recipe, m.metric))


def _note(index: CatalogIndex, recipe: Recipe, metric: str) -> str:
    model = index.models.get(index.builds[recipe.build].model)
    if model is None or not model.tables or metric == "prefill_tok_s":
        return ""
    kinds = "/".join(dict.fromkeys(t.kind.upper() if t.kind == "ple" else t.kind.title() for t in model.tables))
    if recipe.streams_tables:
        return f"{kinds} rows read from disk: unknown, not counted (and not used to fit)"
    return f"{kinds} bytes per token unknown, not counted"


def _check(recipe: Recipe, m: Measurement, predicted: float | None = None, low: float | None = None,
           high: float | None = None, skipped: str = "", note: str = "") -> Check:
    return Check(recipe.id, recipe.build, recipe.hardware, recipe.engine, m.metric, m.streams, m.context_tokens,
                 m.value, predicted, low, high, skipped, note)


def report_dict(report: Report) -> dict[str, object]:
    """`fidelity --json`: the summaries and every check (field names are an API)."""
    return {
        "method": "leave-one-recipe-out: each measurement is predicted with constants fitted to the other recipes",
        "summary": [{"metric": s.metric, "count": s.count, "skipped": s.skipped,
                     "median_abs_error_pct": _round(s.median_abs_error_pct, 1),
                     "within_range": s.within_range, "within_range_share": _round(s.within_range_share, 3)}
                    for s in report.summaries],
        "checks": [{"recipe": c.recipe, "build": c.build, "hardware": c.hardware, "engine": c.engine,
                    "metric": c.metric, "streams": c.streams, "context_tokens": c.context_tokens,
                    "measured": c.measured, "predicted": _round(c.predicted, 1), "low": _round(c.low, 1),
                    "high": _round(c.high, 1), "error_pct": _round(c.error_pct, 1), "inside": c.inside,
                    "skipped": c.skipped or None, "note": c.note or None}
                   for c in report.checks],
        "constants": [{"hardware": f.hardware, "engine": f.engine, **constants_dict(f.constants)}
                      for f in report.fitted],
    }


def constants_dict(c: SpeedConstants) -> dict[str, object]:
    """Each fitted constant with its value and where it comes from."""
    names = ("bandwidth_fraction", "fixed_ms_graphs", "fixed_ms_eager", "spec_ms", "batch_ms_per_token",
             "allreduce_us", "acceptance", "prefill_flops_per_node", "decode_band", "prefill_band")
    return {name: {"value": _round(getattr(c, name), 4 if name != "prefill_flops_per_node" else -9),
                   "basis": c.basis.get(name, "assumed")} for name in names}


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
