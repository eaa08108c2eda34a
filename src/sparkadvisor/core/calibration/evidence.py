"""How much evidence a fit needs, and how its ranges are drawn from the errors it makes on
measurements left out of it (shared by the decode and the prefill fits)."""

from __future__ import annotations

import math

from sparkadvisor.core.records import record
from sparkadvisor.core.speed.constants import MIN_BAND

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

POOLED = "*"
"""The group of engines with too few measured recipes for constants of their own."""


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


def band_basis(count: int, folds: int) -> str:
    """What a range drawn by `band_from` rests on, as `show` prints it."""
    return (f"an {BAND_QUANTILE:.0%} range: split-conformal from the errors on {count} "
            f"measurement{'s' if count != 1 else ''} left out of the fit in {folds} folds, at most "
            f"{(1 - BAND_QUANTILE) / 2:.0%} of them below it and {(1 - BAND_QUANTILE) / 2:.0%} above")


def groups_by(pairs: list[tuple[str, str]], minimum: int) -> set[str]:
    """The keys of (key, recipe id) pairs that at least `minimum` distinct recipes share."""
    ids: dict[str, set[str]] = {}
    for key, rid in pairs:
        ids.setdefault(key, set()).add(rid)
    return {k for k, v in ids.items() if len(v) >= minimum}
