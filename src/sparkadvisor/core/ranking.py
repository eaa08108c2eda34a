"""Rank plans for a workload, each place with the factor that decided it.

Order: builds that do not fit or that a caveat rules out go last, unranked. The others
fall in three groups: those known to meet every target of the workload (context window,
first token, turn, decode, room for a session), then those with a target nobody can
evaluate (unknown is not a pass), then those that miss a target. Within a group:
capability (a sourced score as a share of a frontier reference on the same table, in
5-point steps so near-equal models fall through; unknown capability last), then time per
turn. A fast small model cannot outrank a capable one only because it is fast.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from sparkadvisor.core.caveats import badge
from sparkadvisor.core.plan import Plan
from sparkadvisor.core.schema import Capability, Model
from sparkadvisor.core.units import fmt_seconds
from sparkadvisor.core.workload import Workload

CAPABILITY_STEP = 0.05
"""Capability is compared in steps of 5% of the frontier reference."""

Decisive = Literal["fit", "caveat", "context", "target", "unknown", "capability", "speed"]
"""What put a build in its place: does not fit, a caveat rules it out, its context window is
too short, it misses a latency or memory target, a target is unknown; or, among builds that
meet the targets, its capability, or (capability unknown) its time per turn."""


@dataclass(frozen=True, slots=True)
class Ranked:
    """A plan in its place."""

    plan: Plan
    rank: int | None
    """1-based; None when excluded."""
    reason: str
    """Why it sits here, the decisive factor first, in one sentence."""
    capability: float | None
    """Score / frontier reference score on the same benchmark, when sourced."""
    decisive: Decisive = "speed"
    """The factor that decided the place."""
    score: Capability | None = None
    """The sourced score `capability` comes from."""

    @property
    def excluded(self) -> bool:
        """Does not fit, or is disqualified for the workload."""
        return self.rank is None


def capability_for(model: Model, workload: Workload) -> Capability | None:
    """The score the ranking uses: the first the catalog lists for this workload."""
    return next((c for c in model.capability if workload.kind in c.workloads), None)


def capability_share(model: Model, workload: Workload) -> float | None:
    """The model's score as a share of the frontier reference on the same table, or None."""
    cap = capability_for(model, workload)
    return cap.score / cap.reference_score if cap else None


def exclusion_reason(plan: Plan) -> str | None:
    """Why a plan cannot be used for its workload, or None."""
    if not plan.fits:
        needed = plan.nodes_needed
        where = f"needs {needed} nodes" if needed else f"does not fit even on {plan.cluster.hardware.max_nodes} nodes"
        return f"does not fit on {plan.cluster.nodes} node{'s' if plan.cluster.nodes > 1 else ''}: {where}"
    caveat = plan.disqualified_by
    if caveat is not None:
        cite = f", {caveat.cite}" if caveat.cite else ""
        return f"ruled out for {plan.workload.kind} ({badge(caveat)}{cite}): {caveat.explanation}"
    return None


def rank(plans: Iterable[Plan], workload: Workload, min_capability: float | None = None) -> tuple[Ranked, ...]:
    """Plans in ranked order for `workload`; excluded plans last with rank None.

    With `min_capability` (a share of the frontier reference, 0-1) builds below it, or whose
    capability is unknown, are left out."""
    included, excluded = [], []
    for plan in plans:
        cap = capability_for(plan.model, workload)
        ratio = cap.score / cap.reference_score if cap else None
        if min_capability is not None and (ratio is None or ratio < min_capability - 1e-9):
            continue
        why = exclusion_reason(plan)
        if why is None:
            included.append((_sort_key(plan, ratio), plan, ratio, cap))
        else:
            excluded.append((plan.nodes_needed or math.inf, plan.build.id, plan, ratio, cap, why))
    included.sort(key=lambda item: item[0])
    excluded.sort(key=lambda item: item[:2])
    ranked = [Ranked(plan, place, _reason(plan, ratio, cap), ratio, _decisive(plan, ratio), cap)
              for place, (_, plan, ratio, cap) in enumerate(included, 1)]
    ranked += [Ranked(plan, None, why, ratio, "fit" if not plan.fits else "caveat", cap)
               for _, _, plan, ratio, cap, why in excluded]
    return tuple(ranked)


def with_min_capability(ranked: tuple[Ranked, ...], minimum: float | None) -> tuple[Ranked, ...]:
    """The ranking without builds below `minimum` capability (or of unknown capability),
    renumbered; None keeps everything. For views that filter an existing ranking."""
    if minimum is None:
        return ranked
    kept = [r for r in ranked if r.capability is not None and r.capability >= minimum - 1e-9]
    places = iter(range(1, len(kept) + 1))
    return tuple(r if r.excluded else replace(r, rank=next(places)) for r in kept)


def _group(plan: Plan) -> int:
    """0: every target met; 1: some target unknown, none missed; 2: a target missed."""
    statuses = {t.status for t in plan.targets}
    return 2 if "missed" in statuses else 1 if "unknown" in statuses else 0


def _sort_key(plan: Plan, ratio: float | None) -> tuple[float, ...]:
    tier = -math.floor(ratio / CAPABILITY_STEP + 1e-9) if ratio is not None else math.inf
    return (_group(plan), tier, plan.turn_s if plan.turn_s is not None else math.inf)


def _decisive(plan: Plan, ratio: float | None) -> Decisive:
    missed = [t for t in plan.targets if t.status == "missed"]
    if missed:
        return "context" if missed[0].key == "context" else "target"
    if plan.unknowns:
        return "unknown"
    return "capability" if ratio is not None else "speed"


def _reason(plan: Plan, ratio: float | None, cap: Capability | None) -> str:
    kind, misses, unknowns = plan.workload.kind, plan.target_misses, plan.unknowns
    if misses:
        head = f"misses the {kind} targets: {'; '.join(misses)}"
        if unknowns:
            head += f"; unknown: {'; '.join(unknowns)}"
    elif unknowns:
        head = f"{kind} targets unknown: {'; '.join(unknowns)}"
    else:
        head = f"meets the {kind} targets"
    return f"{head}; {capability_text(plan.model, ratio, cap)}; {fmt_seconds(plan.turn_s)} per turn"


def capability_text(model: Model, ratio: float | None, cap: Capability | None) -> str:
    """"capability 90% of Claude Sonnet 4.5 on SWE-bench Verified (developer, 2025-10-27)"."""
    if cap is not None and ratio is not None:
        return (f"capability {ratio:.0%} of {cap.reference_model} on {cap.benchmark} "
                f"({cap.reported_by}, {cap.date})")
    if model.capability_none_published:
        return "capability unknown (none published)"
    return "capability unknown (no sourced score)"
