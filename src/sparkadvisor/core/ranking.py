"""Rank plans for a workload, each place with its reason.

Order: builds that do not fit or that a caveat rules out go last, unranked. Then builds
that meet the workload's latency targets before those that miss them; then capability
(a sourced score as a share of a frontier reference on the same table, in 5-point steps
so that near-equal models fall through); then time per turn. A fast small model cannot
outrank a capable one only because it is fast.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from sparkadvisor.core.plan import Plan
from sparkadvisor.core.schema import Capability, Model
from sparkadvisor.core.units import fmt_seconds
from sparkadvisor.core.workload import Workload

CAPABILITY_STEP = 0.05
"""Capability is compared in steps of 5% of the frontier reference."""


@dataclass(frozen=True, slots=True)
class Ranked:
    """A plan in its place."""

    plan: Plan
    rank: int | None
    """1-based; None when excluded."""
    reason: str
    """Why it sits here, in words."""
    capability: float | None
    """Score / frontier reference score on the same benchmark, when sourced."""

    @property
    def excluded(self) -> bool:
        """Does not fit, or is disqualified for the workload."""
        return self.rank is None


def capability_for(model: Model, workload: Workload) -> Capability | None:
    """The first sourced score the catalog lists for this workload."""
    return next((c for c in model.capability if workload.kind in c.workloads), None)


def exclusion_reason(plan: Plan) -> str | None:
    """Why a plan cannot be used for its workload, or None."""
    if not plan.fits:
        needed = plan.nodes_needed
        where = f"needs {needed} nodes" if needed else f"does not fit even on {plan.cluster.hardware.max_nodes} nodes"
        return f"does not fit on {plan.cluster.nodes} node{'s' if plan.cluster.nodes > 1 else ''}: {where}"
    if plan.disqualified_by is not None:
        return f"disqualified for {plan.workload.kind}: {plan.disqualified_by.explanation}"
    return None


def rank(plans: Iterable[Plan], workload: Workload) -> tuple[Ranked, ...]:
    """Plans in ranked order for `workload`; excluded plans last with rank None."""
    included, excluded = [], []
    for plan in plans:
        cap = capability_for(plan.model, workload)
        ratio = cap.score / cap.reference_score if cap else None
        why = exclusion_reason(plan)
        if why is None:
            included.append((_sort_key(plan, ratio, misses := plan.target_misses), plan, ratio, cap, misses))
        else:
            excluded.append((plan.nodes_needed or math.inf, plan.build.id, plan, ratio, why))
    included.sort(key=lambda item: item[0])
    excluded.sort(key=lambda item: item[:2])
    ranked = [Ranked(plan, place, _reason(plan, ratio, cap, misses), ratio)
              for place, (_, plan, ratio, cap, misses) in enumerate(included, 1)]
    ranked += [Ranked(plan, None, why, ratio) for _, _, plan, ratio, why in excluded]
    return tuple(ranked)


def _sort_key(plan: Plan, ratio: float | None, misses: tuple[str, ...]) -> tuple[float, ...]:
    tier = -math.floor(ratio / CAPABILITY_STEP + 1e-9) if ratio is not None else math.inf
    meets = plan.fits and not misses
    return (0 if meets else 1, tier, plan.turn_s if plan.turn_s is not None else math.inf)


def _reason(plan: Plan, ratio: float | None, cap: Capability | None, misses: tuple[str, ...]) -> str:
    parts = [f"misses the {plan.workload.kind} targets ({'; '.join(misses)})" if misses
             else f"meets the {plan.workload.kind} targets"]
    if cap is not None and ratio is not None:
        parts.append(f"capability {ratio:.0%} of {cap.reference_model} on {cap.benchmark}")
    else:
        parts.append("capability unknown (no sourced score)")
    parts.append(f"{fmt_seconds(plan.turn_s)} per turn")
    return "; ".join(parts)
