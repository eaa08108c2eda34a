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
    scored = []
    for plan in plans:
        cap = capability_for(plan.model, workload)
        ratio = cap.score / cap.reference_score if cap else None
        scored.append((plan, ratio, cap, exclusion_reason(plan)))
    included = sorted((s for s in scored if s[3] is None), key=_sort_key)
    excluded = sorted((s for s in scored if s[3] is not None),
                      key=lambda s: (s[0].nodes_needed or math.inf, s[0].build.id))
    ranked = [Ranked(p, i, _reason(p, ratio, cap), ratio) for i, (p, ratio, cap, _) in enumerate(included, 1)]
    ranked += [Ranked(p, None, why or "", ratio) for p, ratio, _, why in excluded]
    return tuple(ranked)


def _sort_key(item: tuple[Plan, float | None, Capability | None, str | None]) -> tuple[float, ...]:
    plan, ratio, _, _ = item
    tier = -math.floor(ratio / CAPABILITY_STEP + 1e-9) if ratio is not None else math.inf
    return (0 if plan.meets_targets else 1, tier, plan.turn_s if plan.turn_s is not None else math.inf)


def _reason(plan: Plan, ratio: float | None, cap: Capability | None) -> str:
    misses = plan.target_misses
    parts = [f"misses the {plan.workload.kind} targets ({'; '.join(misses)})" if misses
             else f"meets the {plan.workload.kind} targets"]
    if cap is not None and ratio is not None:
        parts.append(f"capability {ratio:.0%} of {cap.reference_model} on {cap.benchmark}")
    else:
        parts.append("capability unknown (no sourced score)")
    parts.append(f"{fmt_seconds(plan.turn_s)} per turn")
    return "; ".join(parts)
