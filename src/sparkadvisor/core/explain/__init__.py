"""The arithmetic of a plan, step by step, in sentences generated from its numbers.

Each step says whether its figure is stated by a source, derived from stated figures,
measured by someone, estimated by the speed model, assumed, or unknown. The TUI's
detail pane, `sparkadvisor show` and the Markdown report all print these steps.
"""

from __future__ import annotations

from sparkadvisor.core.caveats import badge, by_severity
from sparkadvisor.core.explain.memory import (
    budget_step,
    cluster_step,
    kv_step,
    parallelism_step,
    weights_step,
)
from sparkadvisor.core.explain.pool import pool_step
from sparkadvisor.core.explain.speed import decode_steps, first_token_steps, turn_step
from sparkadvisor.core.explain.step import Basis, Step
from sparkadvisor.core.index import engine_label
from sparkadvisor.core.plan import Plan, runs_on
from sparkadvisor.core.targets import context_needed
from sparkadvisor.core.units import plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sparkadvisor.core.index import BuildFacts
    from sparkadvisor.core.schema import Recipe


__all__ = ["Basis", "Step", "explain", "recipe_step"]


def explain(plan: Plan) -> tuple[Step, ...]:
    """Every step of the plan's arithmetic, in reading order."""
    steps = [cluster_step(plan), weights_step(plan), parallelism_step(plan), budget_step(plan), kv_step(plan),
             pool_step(plan), _context(plan)]
    steps += decode_steps(plan) + first_token_steps(plan)
    steps += [turn_step(plan), _targets(plan), _capability(plan)]
    steps += [Step("caveat", f"caveat: {badge(c)}", f"{c.explanation} ({c.severity})", "stated", c.severity)
              for c in by_severity(plan.caveats)]
    if plan.no_engine is not None:
        steps.insert(1, _no_engine(plan))
    if not plan.runs:
        steps = [_as_if_it_fit(s, plan) if s.key in _SPEED_STEPS else s for s in steps]
    return tuple(s for s in steps if s is not None)


def recipe_step(plan: Plan, facts: BuildFacts, named: str | None = None) -> Step | None:
    """Which of the build's recipes the plan follows and why (`named`: the one --recipe names), with the
    others on this cluster and on other node counts of its hardware; None when the build has no recipe there."""
    hardware, nodes, followed = plan.cluster.hardware, plan.cluster.nodes, plan.recipe
    on_hardware = facts.recipes_on(hardware)
    if not on_hardware:
        return None
    # The plan may follow a copy without its drafter (`plan.drafter_off`): the catalog's recipe by its id.
    followed = next((r for r in on_hardware if followed is not None and r.id == followed.id), followed)
    here = [r for r in on_hardware if r.nodes == nodes and r is not followed and not r.benchmark]
    tests = [r for r in on_hardware if r.nodes == nodes and r is not followed and r.benchmark]
    elsewhere = [r for r in on_hardware if r.nodes != nodes]
    if followed is None:
        text = (f"No recipe for this build on {plan.cluster.label}: {engine_label(plan.constants.engine)}'s "
                "defaults size the plan.")
    else:
        if followed.id == named:
            why = "as --recipe names it"
        elif followed.id in facts.own_recipes:
            why = "the newest your own `sparkadvisor bench --record` wrote"
        elif here:
            count = len(followed.measurements)
            tied = any(len(r.measurements) == count for r in here)
            why = (f"{'the first listed of those' if tied else 'the one'} with the most measurements ({count}) of "
                   f"the {len(here) + 1} recipes for this build on {plan.cluster.label}")
        else:
            why = f"the only recipe for this build on {plan.cluster.label}"
        text = f"Follows {followed.id} ({followed.title}), {why}."
        if plan.drafter_off and followed.speculative is not None:
            spec = followed.speculative
            drafter = f"{spec.method}{f', {spec.draft_repo}' if spec.draft_repo else ''}"
            text += (f" Its drafter ({drafter}) is left off (--no-speculation): the plan decodes one token a "
                     "pass, and the recipe's speeds and pool, measured with the drafter, are not held against it.")
        elif plan.served_draft_tokens is not None and followed.speculative is not None:
            own = followed.speculative.tokens_per_pass
            text += (f" Its drafter proposes {plan.served_draft_tokens} tokens a pass, as the served vLLM's counters "
                     f"show, not the recipe's {own}: the recipe's speeds and pool, measured at {own}, are not held "
                     f"against the plan, which takes the acceptance known at {own} tokens for it.")
    if here:
        text += f" Also here: {_recipe_list(here)}; --recipe ID follows one instead."
    if tests:
        text += (f" Benchmark runs here (their test settings, such as prefix caching off, are not a recipe to serve "
                 f"with; their measurements feed the speed model, and --recipe ID follows one): {_recipe_list(tests)}.")
    if elsewhere:
        text += f" On other node counts: {_recipe_list(elsewhere, with_nodes=True)}."
    return Step("recipe", "recipe", text, "stated")


def _recipe_list(recipes: list[Recipe], with_nodes: bool = False) -> str:
    """Recipe ids with their measurement counts (and node counts)."""
    def one(r: Recipe) -> str:
        where = f"{plural(r.nodes, 'node')}, " if with_nodes else ""
        return f"{r.id} ({where}{plural(len(r.measurements), 'measurement')})"
    return ", ".join(one(r) for r in recipes)


_SPEED_STEPS = frozenset({"ceiling", "expected", "ttft", "turn"})
"""The figures a build has only once it loads: the table shows - for them where it does not fit."""


def _no_engine(plan: Plan) -> Step:
    serving = plan.cluster.hardware.serving
    note = f" {serving.note}" if serving is not None and serving.note else ""
    return Step("engine", "engine", f"No engine is known to serve it here: {plan.no_engine}.{note}", "stated")


def _as_if_it_fit(step: Step, plan: Plan) -> Step:
    if plan.no_engine is not None:
        # The engine runs on this hardware but not across these nodes (Ollama), or no engine runs here at all.
        where = plan.cluster.label if runs_on(plan.cluster.hardware, plan.constants.engine) else \
            plan.cluster.hardware.name
        return Step(step.key, step.title, f"Not here: no engine serves it on {where}. If one did: {step.text}",
                    step.basis, step.severity)
    nodes = plural(plan.cluster.nodes, "node")
    return Step(step.key, step.title, f"Not here: it does not fit on {nodes}. If it did: {step.text}", step.basis,
                step.severity)


def _context(plan: Plan) -> Step:
    usable, needed, w = plan.usable_context, context_needed(plan.workload), plan.workload
    check = next(t for t in plan.targets if t.key == "context")
    verdict = {"met": "enough", "missed": "too short: the workload's prompts would be refused",
               "unknown": "unknown, so the context target is not met"}[check.status]
    if not usable.starts:
        verdict = (f"not served at all: --max-model-len {usable.pool_cap:,} or less, or more memory for the KV "
                   "cache, lets vLLM start")
    text = (f"Usable context {usable.describe(plan.model)} against {needed:,} tokens needed "
            f"({w.context_tokens:,} prompt + {w.output_tokens:,} answer): {verdict}.")
    return Step("context", "context window", text, "unknown" if usable.tokens is None else "stated")


def _targets(plan: Plan) -> Step:
    w = plan.workload
    marks = {"met": "met", "missed": "MISSED", "unknown": "unknown"}
    parts = "; ".join(f"{t.text} ({marks[t.status]})" for t in plan.targets)
    if plan.meets_targets:
        head = f"Meets the {w.kind} targets"
    elif plan.target_misses:
        head = f"Misses the {w.kind} targets"
    elif plan.disqualified_by is not None and not plan.unknowns:
        head = f"Its figures meet the {w.kind} targets, but {badge(plan.disqualified_by)} rules it out for {w.kind}"
    else:
        head = f"The {w.kind} targets are unknown (an unknown is not a pass)"
    return Step("targets", "targets", f"{head}: {parts}.", "unknown" if plan.unknowns else "derived")


def _capability(plan: Plan) -> Step:
    from sparkadvisor.core.ranking import CAPABILITY_STEP, capability_for

    cap, kind = capability_for(plan.model, plan.workload), plan.workload.kind
    if cap is None:
        note = plan.model.capability_none_published
        text = (f"Unknown: no score beside a frontier reference ({note})" if note
                else "Unknown: no sourced score in the catalog")
        return Step("capability", "capability", text + f"; it ranks after the {kind} builds with a score.",
                    "unknown")
    harness = f" in {cap.harness}" if cap.harness else ""
    if cap.reference_source is None:
        against = f"{cap.reference_model}'s {cap.reference_score:g} on the same table ({cap.reported_by}, {cap.date})"
    else:
        ref = cap.reference_source
        refs = ref if isinstance(ref, str) else ", ".join(ref)
        against = (f"{cap.reference_model}'s {cap.reference_score:g} from ANOTHER table ({refs}), as the model's "
                   f"own table ({cap.reported_by}, {cap.date}) has no frontier column; settings may differ")
    return Step("capability", "capability", f"{cap.score:g} on {cap.benchmark}{harness} against {against}: "
                f"{cap.score / cap.reference_score:.0%}, compared in {CAPABILITY_STEP:.0%} steps.", "stated")
