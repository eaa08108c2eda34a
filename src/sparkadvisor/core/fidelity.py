"""The speed model's report card: every measurement in the catalog against its prediction.

Each measurement is predicted at its own context, streams, engine and execution mode, with
constants calibrated on every other recipe of its hardware (leave-one-recipe-out), so no
figure ever predicts itself. The summary gives, per metric (and per engine), how many were
predicted, the median absolute % error, how many came within 20% and how many were off by
2x or more, and the share that fell inside the predicted range. A figure outside its range
is counted, not hidden.
"""

from __future__ import annotations

import statistics
from dataclasses import replace

from sparkadvisor.core.calibration import calibrate_all, on_slow_route, recipe_decode, recipe_prefill
from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Measurement, Recipe
from sparkadvisor.core.speed.constants import SpeedConstants

SPEED_METRICS = ("decode_tok_s", "aggregate_tok_s", "prefill_tok_s")
"""Metrics the speed model predicts; the others are listed as skipped with the reason."""


@record(kw_only=False)
class Check:
    """One measurement set against its leave-one-out prediction."""

    recipe: str
    build: str
    hardware: str
    engine: str
    mode: str
    """"graphs" or "eager": the run's own execution mode."""
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
    tables: str = ""
    """The per-token tables (PLE, Engram) whose unpublished bytes leave this row unknown, "" for none."""
    slow_route: str = ""
    """The caveat reporting this run's engine far slower than the build's reads, which leaves the model's figure a
    bound (`calibration.on_slow_route`), "" for none."""
    bound: float | None = None
    """On such a route, the model's figure: what the reads allow, a bound and not a prediction."""

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
    within_20: int = 0
    """How many predictions came within 20% of the measured figure."""
    off_2x: int = 0
    """How many predictions were off by a factor of 2 or more, either way."""
    engine: str = "all"
    """The engine these checks ran on ("all" for every engine)."""
    unknown_tables: int = 0
    """Of the skipped, how many read a per-token table (PLE, Engram) whose bytes are unpublished."""
    slow_routes: int = 0
    """Of the skipped, how many ran on a route a caveat reports far slower than the reads (bounds)."""

    @property
    def within_range_share(self) -> float | None:
        """Share of predicted measurements inside their range."""
        return self.within_range / self.count if self.count else None

    @property
    def within_20_share(self) -> float | None:
        """Share of predictions within 20% of the measurement."""
        return self.within_20 / self.count if self.count else None


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
    by_engine: tuple[Summary, ...] = ()
    """The same summaries for each engine's own measurements."""


def fidelity(index: CatalogIndex) -> Report:
    """Predict every measurement of every recipe, leaving that recipe out of the calibration."""
    checks = tuple(c for recipe in index.catalog.recipes for c in _recipe_checks(index, recipe))
    metrics = [m for m in SPEED_METRICS if any(c.metric == m for c in checks)]
    summaries = [summarize(checks, m) for m in metrics] + [summarize(checks, "all")]
    engines = list(dict.fromkeys(c.engine for c in checks if c.predicted is not None))
    by_engine = [summarize(checks, m, e) for e in engines for m in metrics
                 if any(c.engine == e and c.metric == m and c.predicted is not None for c in checks)]
    pairs = dict.fromkeys((r.hardware, r.engine) for r in index.catalog.recipes
                          if r.measurements and r.hardware in index.hardware)
    fitted = tuple(Fitted(h, e, index.speed_constants(index.hardware[h], e)) for h, e in pairs)
    return Report(checks, tuple(summaries), fitted, tuple(by_engine))


def summarize(checks: tuple[Check, ...], metric: str, engine: str = "all") -> Summary:
    """Statistics for `metric` ("all" for every speed metric), on `engine` ("all" for every engine)."""
    chosen = [c for c in checks if (c.metric == metric if metric != "all" else c.metric in SPEED_METRICS)
              and engine in ("all", c.engine)]
    predicted = [c for c in chosen if c.predicted is not None]
    errors = [abs(c.error_pct) for c in predicted if c.error_pct is not None]
    median = statistics.median(errors) if errors else None
    inside = sum(1 for c in predicted if c.inside)
    within = sum(1 for e in errors if e <= 20)
    ratios = [c.predicted / c.measured for c in predicted if c.predicted]
    off = sum(1 for r in ratios if r >= 2 or r <= 0.5)
    tables = sum(1 for c in chosen if c.predicted is None and c.tables)
    slow = sum(1 for c in chosen if c.predicted is None and c.slow_route)
    return Summary(metric, len(predicted), len(chosen) - len(predicted), median, inside, within, off, engine, tables,
                   slow)


def _recipe_checks(index: CatalogIndex, recipe: Recipe) -> list[Check]:
    if not recipe.measurements:
        return []
    hardware = index.hardware.get(recipe.hardware)
    if hardware is None:
        return [_check(recipe, m, skipped=f"unknown hardware {recipe.hardware!r}") for m in recipe.measurements]
    constants = calibrate_all(index, hardware, exclude=frozenset({recipe.id})).for_engine(recipe.engine)
    return [_predict(index, recipe, m, constants) for m in recipe.measurements]


def _predict(index: CatalogIndex, recipe: Recipe, m: Measurement, constants: SpeedConstants) -> Check:
    if m.metric not in SPEED_METRICS:
        return _check(recipe, m, skipped="not a speed figure (the speed model does not predict it)")
    tables = _tables(index, recipe)
    if tables:
        streamed = " (rows streamed from disk)" if recipe.streams_tables else ""
        return _check(recipe, m, skipped=f"unknown: every token reads the {tables} table, whose bytes per token are "
                                          f"unpublished{streamed}",
                      tables=tables)
    if m.metric == "prefill_tok_s":
        result = recipe_prefill(index, recipe, m, constants)
    else:
        result = recipe_decode(index, recipe, m, constants)
    if isinstance(result, str):
        return _check(recipe, m, skipped=result)
    slow = on_slow_route(index, recipe)
    if slow:
        check = _check(recipe, m, skipped=f"a bound, not a prediction: {slow} reports {recipe.engine} far slower here "
                                          f"than what the build reads and computes (not fitted either)", slow=slow)
        return replace(check, bound=result[0])
    expected, low, high = result
    return _check(recipe, m, expected, low, high)


def _tables(index: CatalogIndex, recipe: Recipe) -> str:
    """The per-token tables (PLE, Engram) a recipe's model reads, "" for none."""
    model = index.models.get(index.builds[recipe.build].model)
    if model is None:
        return ""
    return "/".join(dict.fromkeys(t.kind.upper() if t.kind == "ple" else t.kind.title() for t in model.tables))


def _check(recipe: Recipe, m: Measurement, predicted: float | None = None, low: float | None = None,
           high: float | None = None, skipped: str = "", note: str = "", tables: str = "", slow: str = "") -> Check:
    eager = m.enforce_eager if m.enforce_eager is not None else recipe.enforce_eager
    return Check(recipe.id, recipe.build, recipe.hardware, recipe.engine, "eager" if eager else "graphs", m.metric,
                 m.streams, m.context_tokens, m.value, predicted, low, high, skipped, note, tables, slow)


def report_dict(report: Report) -> dict[str, object]:
    """`fidelity --json`: the summaries and every check (field names are an API)."""
    return {
        "method": "leave-one-recipe-out: each measurement is predicted with constants fitted to the other recipes",
        "summary": [_summary_dict(s) for s in report.summaries],
        "by_engine": [_summary_dict(s) for s in report.by_engine],
        "checks": [{"recipe": c.recipe, "build": c.build, "hardware": c.hardware, "engine": c.engine, "mode": c.mode,
                    "metric": c.metric, "streams": c.streams, "context_tokens": c.context_tokens,
                    "measured": c.measured, "predicted": _round(c.predicted, 1), "low": _round(c.low, 1),
                    "high": _round(c.high, 1), "error_pct": _round(c.error_pct, 1), "inside": c.inside,
                    "skipped": c.skipped or None, "note": c.note or None, "unknown_tables": c.tables or None,
                    "slow_route": c.slow_route or None, "bound": _round(c.bound, 1)}
                   for c in report.checks],
        "constants": [{"hardware": f.hardware, "engine": f.engine, **constants_dict(f.constants)}
                      for f in report.fitted],
    }


def _summary_dict(s: Summary) -> dict[str, object]:
    return {"metric": s.metric, "engine": s.engine, "count": s.count, "skipped": s.skipped,
            "median_abs_error_pct": _round(s.median_abs_error_pct, 1), "unknown_tables": s.unknown_tables,
            "slow_routes": s.slow_routes,
            "within_20": s.within_20,
            "within_20_share": _round(s.within_20_share, 3), "off_2x": s.off_2x,
            "within_range": s.within_range, "within_range_share": _round(s.within_range_share, 3)}


CONSTANT_NAMES = ("bandwidth_fraction", "kv_ms_per_gb", "compute_ms_per_gflop", "fixed_ms", "layer_ms",
                  "eager_ms_per_layer", "spec_ms_per_step", "allreduce_us", "acceptance", "expert_spread",
                  "expert_prefill_factor", "decode_band", "decode_band_below", "aggregate_band",
                  "aggregate_band_below", "prefill_band", "prefill_band_below")
"""The scalar constants the report lists, in this order (then the per-format and per-precision ones)."""


def constants_dict(c: SpeedConstants) -> dict[str, object]:
    """Each fitted constant with its value and where it comes from."""
    out: dict[str, object] = {name: {"value": _round(getattr(c, name), 4),
                                     "basis": c.basis.get(name.removesuffix("_below"), "assumed")}
                              for name in CONSTANT_NAMES}
    for fmt, value in sorted(c.weight_penalty.items()):
        out[f"weight_penalty.{fmt}"] = {"value": _round(value, 4), "basis": c.basis.get("weight_penalty", "")}
    for precision, rate in c.prefill_ms_per_gflop.items():
        out[f"prefill_tflops.{precision}"] = {"value": _round(1 / rate if rate else None, 1),
                                              "basis": c.basis.get(f"prefill:{precision}") or
                                              c.basis.get("prefill_ms_per_gflop", "")}
    rate = c.prefill_attention_ms_per_gflop
    out["prefill_tflops.attention"] = {"value": _round(1 / rate if rate else None, 1),
                                       "basis": c.basis.get("prefill_attention", "assumed")}
    out["prefill_kv_ms_per_gb"] = {"value": _round(c.prefill_kv_ms_per_gb, 4),
                                   "basis": c.basis.get("prefill_kv", "assumed")}
    out["prefill_weight_ms_per_gb"] = {"value": _round(c.prefill_weight_ms_per_gb, 3),
                                       "basis": c.basis.get("prefill_weight", "assumed")}
    return out


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
