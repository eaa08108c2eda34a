"""A step of the arithmetic, and how a measurement reads inside one."""

from __future__ import annotations

from typing import Literal

from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Measurement, Severity

Basis = Literal["stated", "derived", "measured", "estimated", "assumed", "unknown"]


@record(kw_only=False)
class Step:
    """One line of the arithmetic."""

    key: str
    """Stable id: cluster, weights, parallelism, budget, kv, pool, ceiling, expected, ..."""
    title: str
    """A few words."""
    text: str
    """The sentence, with the numbers and their units."""
    basis: Basis
    """How the figure is known."""
    severity: Severity | None = None
    """For caveat steps: critical, warning or info (views colour it)."""



def measurement_text(m: Measurement, fmt: object) -> str:
    render = fmt if callable(fmt) else str
    if m.low is not None and m.high is not None and render(m.low) != render(m.high):
        return f"{render(m.low)}-{render(m.high)}"
    text = render(m.value)
    return f"{text} ± {render(m.spread)}" if m.spread else str(text)


def source_text(m: Measurement) -> str:
    return m.note or "recipe measurement"
