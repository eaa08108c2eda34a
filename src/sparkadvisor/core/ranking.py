"""Rank plans for a workload, each place with the factor that decided it.

Order: builds that do not fit or that a caveat rules out go last, unranked. The others
fall in three groups: those known to meet every target of the workload (context window,
first token, turn, decode, room for a session), then those with a target nobody can
evaluate (unknown is not a pass), then those that miss a target. Within a group:
capability (a sourced score as a share of a frontier reference on the same table, or, where
the model's table has none, on the benchmark's leaderboard or the frontier vendor's own
announcement, in 5-point steps so near-equal models fall through; unknown capability last);
within a step, fewer warnings that hurt the workload first, then (agentic) a score measured
inside Claude Code, the article's reason to trust GLM-5.3-Flash's number, then a reference
from the model's own table before one from another table; then time per turn. A fast small
model cannot outrank a capable one only because it is fast.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace
from typing import Literal

from sparkadvisor.core.caveats import badge, by_severity
from sparkadvisor.core.plan import Plan
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Capability, Caveat, Model
from sparkadvisor.core.targets import TARGET_KEYS, Status
from sparkadvisor.core.units import fmt_seconds, plural
from sparkadvisor.core.workload import Workload

CAPABILITY_STEP = 0.05
"""Capability is compared in steps of 5% of the frontier reference."""

Decisive = Literal["engine", "fit", "caveat", "context", "target", "unknown", "capability", "speed"]
"""What put a build in its place: no engine serves it on the hardware, it does not fit, a caveat rules
it out, its context window is too short, it misses a latency or memory target, a target is unknown;
or, among builds that meet the targets, its capability, or (capability unknown) its time per turn."""


@record(kw_only=False)
class Ranked:
    """A plan in its place."""

    plan: Plan
    rank: int | None
    """1-based; None when excluded."""
    given_reason: str | None
    """A reason written by whoever placed the plan, or None: `reason` writes it from the plan when a
    view shows it (a ranking judges thousands of plans, a view shows a few)."""
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

    @property
    def reason(self) -> str:
        """Why it sits here, the decisive factor first, in one sentence."""
        if self.given_reason is not None:
            return self.given_reason
        if self.rank is None:
            return exclusion_reason(self.plan) or ""
        return _reason(self.plan, self.capability, self.score)


def capability_for(model: Model, workload: Workload) -> Capability | None:
    """The score the ranking uses: the first the catalog lists for this workload."""
    for capability in model.capability:
        if workload.kind in capability.workloads:
            return capability
    return None


def capability_share(model: Model, workload: Workload) -> float | None:
    """The model's score as a share of the frontier reference on the same table, or None."""
    cap = capability_for(model, workload)
    return cap.score / cap.reference_score if cap else None


def where_it_fits(plan: Plan) -> str:
    """For a plan that does not fit: "needs 3 nodes", "does not fit even on 4 nodes", or that one node is all."""
    needed, most = plan.nodes_needed, plan.cluster.hardware.max_nodes
    if needed:
        return f"needs {plural(needed, 'node')}"
    return f"does not fit even on {plural(most, 'node')}" if most > 1 else "one node is all this hardware takes"


def exclusion_reason(plan: Plan) -> str | None:
    """Why a plan cannot be used for its workload, or None."""
    if plan.no_engine is not None:
        return f"no engine here: {plan.no_engine}"
    if not plan.fits:
        return f"does not fit on {plural(plan.cluster.nodes, 'node')}: {where_it_fits(plan)}"
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
        if plan.runs and plan.disqualified_by is None:  # what `exclusion_reason` says in words
            statuses = plan.statuses
            included.append((_sort_key(plan, statuses, ratio, cap), plan, statuses, ratio, cap))
        else:  # builds no engine serves here last
            excluded.append((plan.no_engine is not None, plan.nodes_needed or math.inf, plan.build.id, plan, ratio,
                             cap))
    included.sort(key=lambda item: item[0])
    excluded.sort(key=lambda item: item[:3])
    ranked = [Ranked(plan, place, None, ratio, _decisive(statuses, ratio), cap)
              for place, (_, plan, statuses, ratio, cap) in enumerate(included, 1)]
    ranked += [Ranked(plan, None, None, ratio, _excluded_by(plan), cap) for *_, plan, ratio, cap in excluded]
    return tuple(ranked)


def with_min_capability(ranked: tuple[Ranked, ...], minimum: float | None) -> tuple[Ranked, ...]:
    """The ranking without builds below `minimum` capability (or of unknown capability),
    renumbered; None keeps everything. For views that filter an existing ranking."""
    if minimum is None:
        return ranked
    kept = [r for r in ranked if r.capability is not None and r.capability >= minimum - 1e-9]
    places = iter(range(1, len(kept) + 1))
    return tuple(r if r.excluded else replace(r, rank=next(places)) for r in kept)


def _excluded_by(plan: Plan) -> Decisive:
    """What keeps an excluded plan out, in `exclusion_reason`'s order."""
    if plan.no_engine is not None:
        return "engine"
    return "fit" if not plan.fit.fits else "caveat"


def _group(statuses: tuple[Status, ...]) -> int:
    """0: every target met; 1: some target unknown, none missed; 2: a target missed."""
    return 2 if "missed" in statuses else 1 if "unknown" in statuses else 0


def _sort_key(plan: Plan, statuses: tuple[Status, ...], ratio: float | None,
              cap: Capability | None) -> tuple[float, ...]:
    tier = -math.floor(ratio / CAPABILITY_STEP + 1e-9) if ratio is not None else math.inf
    # For Claude Code, a score measured inside Claude Code speaks for the workload itself.
    harness = 0 if plan.workload.kind == "agentic" and cap is not None and cap.in_claude_code else 1
    # A reference read off the model's own table outweighs one borrowed from another table.
    borrowed = 1 if cap is not None and cap.reference_elsewhere else 0
    turn = plan.turn_s
    return (_group(statuses), tier, len(hurting_caveats(plan)), harness, borrowed,
            turn if turn is not None else math.inf)


def hurting_caveats(plan: Plan) -> tuple[Caveat, ...]:
    """Warnings and critical caveats that make this workload worse (without ruling the build out)."""
    if not plan.caveats:
        return ()
    return tuple(c for c in by_severity(plan.caveats)
                 if plan.workload.kind in c.hurts and c.severity != "info" and c is not plan.disqualified_by)


def _decisive(statuses: tuple[Status, ...], ratio: float | None) -> Decisive:
    if "missed" in statuses:
        return "context" if TARGET_KEYS[statuses.index("missed")] == "context" else "target"
    if "unknown" in statuses:
        return "unknown"
    return "capability" if ratio is not None else "speed"


def _reason(plan: Plan, ratio: float | None, cap: Capability | None) -> str:
    kind = plan.workload.kind
    checks = plan.targets
    misses = [t.text for t in checks if t.status == "missed"]
    unknowns = [t.text for t in checks if t.status == "unknown"]
    if misses:
        head = f"misses the {kind} targets: {'; '.join(misses)}"
        if unknowns:
            head += f"; unknown: {'; '.join(unknowns)}"
    elif unknowns:
        head = f"{kind} targets unknown: {'; '.join(unknowns)}"
    else:
        head = f"meets the {kind} targets"
    tail = "".join(f"; {c.severity}: {badge(c)}" for c in hurting_caveats(plan)
                   if not (c.kind == "prefix-caching-disabled" and misses))
    at_least = "at least " if plan.turn_bound else ""
    return f"{head}; {capability_text(plan.model, ratio, cap)}; {at_least}{fmt_seconds(plan.turn_s)} per turn{tail}"


def capability_text(model: Model, ratio: float | None, cap: Capability | None) -> str:
    """"capability 90% of Claude Sonnet 4.5 on SWE-bench Verified (developer, 2025-10-27)"; a reference
    taken from another table says so: "... (developer, 2026-02-03; reference from another table)"."""
    if cap is not None and ratio is not None:
        where = f" inside {cap.harness}" if cap.in_claude_code else ""
        elsewhere = "; reference from another table" if cap.reference_elsewhere else ""
        return (f"capability {ratio:.0%} of {cap.reference_model} on {cap.benchmark}{where} "
                f"({cap.reported_by}, {cap.date}{elsewhere})")
    if model.capability_none_published:
        return "capability unknown (no score beside a frontier reference)"
    return "capability unknown (no sourced score in the catalog)"
