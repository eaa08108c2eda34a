"""The advisor's front door: every build on a cluster for a workload, ranked.

Views call `advise` (or `evaluate_build` for one build) and `candidate` for the stable
JSON shape scripts rely on; none of them computes a figure of its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sparkadvisor.core.bulk import collector_paused
from sparkadvisor.core.catalog import source_ids
from sparkadvisor.core.caveats import badge, by_severity
from sparkadvisor.core.index import BuildFacts, CatalogIndex
from sparkadvisor.core.memo import per_ranking
from sparkadvisor.core.plan import Cluster, Plan, evaluate
from sparkadvisor.core.ranking import Ranked, rank
from sparkadvisor.core.schema import Build, Caveat
from sparkadvisor.core.units import GiB
from sparkadvisor.core.workload import DEFAULT_SETTINGS, Settings, Workload

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sparkadvisor.core.explain import Step


def evaluate_build(index: CatalogIndex, build: Build, cluster: Cluster, workload: Workload,
                   settings: Settings = DEFAULT_SETTINGS) -> Plan:
    """The plan for one build."""
    return evaluate(index, build, cluster, workload, settings)


def advise(index: CatalogIndex, cluster: Cluster, workload: Workload, settings: Settings = DEFAULT_SETTINGS,
           builds: Iterable[Build] | None = None, min_capability: float | None = None) -> tuple[Ranked, ...]:
    """Every build (or `builds`) evaluated on `cluster` and ranked for `workload`; with
    `min_capability` (0-1), builds below it or of unknown capability are left out."""
    chosen = index.catalog.builds if builds is None else builds
    with collector_paused(), per_ranking():
        return rank((evaluate(index, b, cluster, workload, settings) for b in chosen), workload, min_capability)


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


LOADED_ONLY = ("decode_ceiling_tok_s", "decode_expected_tok_s", "decode_low_tok_s", "decode_high_tok_s",
               "decode_per_stream_tok_s", "prefill_tok_s", "ttft_s", "turn_s")
"""The figures a build has only once it loads: null where it does not fit or no engine serves it here,
kept under `if_it_fit`."""


def candidate(ranked: Ranked) -> dict[str, Any]:
    """One candidate in the stable JSON shape of `rank --json` (field names are an API)."""
    return if_it_fit(candidate_figures(ranked), ranked.plan.runs)


def if_it_fit(figures: dict[str, Any], fits: bool, loaded_only: tuple[str, ...] = LOADED_ONLY) -> dict[str, Any]:
    """`figures` as scripts read them: where the build does not fit, each of `loaded_only` is null and
    its value is under `if_it_fit` (null where it fits), as the text views show - and "If it did: ..."."""
    if fits:
        return figures | {"if_it_fit": None}
    hypothetical = {key: figures[key] for key in loaded_only}
    return figures | dict.fromkeys(loaded_only) | {"if_it_fit": hypothetical}


def candidate_figures(ranked: Ranked) -> dict[str, Any]:
    """The candidate's fields with every figure, also those a build that does not fit would have."""
    p = ranked.plan
    d = p.decode
    m = p.decode_measured
    usable = p.usable_context
    return {
        "build": p.build.id, "model": p.model.id, "repo": p.build.repo, "format": p.build.format,
        "rank": ranked.rank, "fits": p.fits, "fit_by_recipe": p.fit_by_recipe, "nodes_needed": p.nodes_needed,
        "tp": p.tp, "pp": p.pp, "recipe": p.recipe.id if p.recipe else None, "drafter_off": p.drafter_off,
        "weights_gib": _round(p.weights.total_bytes / GiB),
        "weights_gib_per_node": _round(p.weights_per_node / GiB),
        "short_gb": _round(p.short_bytes / 1e9),
        "kv_budget_gib_per_node": _round(p.budget.kv_bytes / GiB),
        "kv_bytes_per_token": _round(p.kv_bytes_per_token, 1), "kv_basis": p.kv_basis,
        "kv_pool_tokens": None if p.kv_pool_tokens is None else int(p.kv_pool_tokens),
        "kv_pool_measured_tokens": p.kv_pool_measured.value if p.kv_pool_measured else None,
        "sessions": p.sessions,
        "decode_ceiling_tok_s": _round(d.ceiling_tok_s if d else None, 1),
        "decode_expected_tok_s": _round(d.expected_tok_s if d else None, 1),
        "decode_low_tok_s": _round(d.low_tok_s if d and not d.bound else None, 1),
        "decode_high_tok_s": _round(d.high_tok_s if d and not d.bound else None, 1),
        "decode_expected_is_bound": bool(d and d.bound),
        "first_token_is_bound": p.first_token_bound, "turn_is_bound": p.turn_bound,
        "decode_measured_tok_s": m.value if m else None,
        "streams": p.speed.streams, "decode_per_stream_tok_s": _round(d.per_stream_tok_s if d else None, 1),
        "engine": p.constants.engine, "mode": "eager" if p.speed.eager else "graphs",
        "constants_basis": {"fixed_ms": p.constants.basis.get("fixed_ms", "assumed"),
                            "decode_measurements": p.constants.decode_measurements,
                            "prefill_measurements": p.constants.prefill_measurements},
        "efficiency": _round(p.efficiency, 3),
        "prefill_tok_s": _round(p.prefill_tok_s, 0), "prefill_basis": p.prefill_basis,
        "prefix_caching": p.prefix_caching, "uncached_tokens": p.uncached_tokens,
        "ttft_s": _round(p.ttft_s, 1), "turn_s": _round(p.turn_s, 1),
        "context_tokens": usable.tokens, "context_basis": usable.basis, "context_extended": usable.extended,
        "meets_targets": p.meets_targets, "target_misses": list(p.target_misses), "unknowns": list(p.unknowns),
        "targets": [{"key": t.key, "status": t.status, "text": t.text} for t in p.targets],
        "capability": _round(ranked.capability, 3), "capability_score": _score(ranked),
        "caveats": [caveat_dict(c) for c in by_severity(p.caveats)],
        "disqualified": p.disqualified_by is not None, "no_engine": p.no_engine,
        "decisive": ranked.decisive, "reason": ranked.reason,
    }


def caveat_dict(caveat: Caveat) -> dict[str, Any]:
    """A caveat as scripts read it: what it is, how serious, what to do, who says so."""
    return {"id": caveat.id, "kind": caveat.kind, "badge": badge(caveat), "severity": caveat.severity,
            "text": caveat.explanation, "source": source_ids(caveat.source)}


def _score(ranked: Ranked) -> dict[str, Any] | None:
    cap = ranked.score
    if cap is None:
        return None
    return {"benchmark": cap.benchmark, "score": cap.score, "reference_model": cap.reference_model,
            "reference_score": cap.reference_score, "reported_by": cap.reported_by, "date": cap.date,
            "source": source_ids(cap.source)}


def workload_dict(workload: Workload) -> dict[str, Any]:
    """The workload's assumptions and targets as JSON."""
    return {
        "kind": workload.kind, "context_tokens": workload.context_tokens, "prefix_reuse": workload.prefix_reuse,
        "output_tokens": workload.output_tokens, "tool_calls_required": workload.tool_calls_required,
        "first_token_target_s": workload.first_token_target_s, "turn_target_s": workload.turn_target_s,
        "decode_target_tok_s": workload.decode_target_tok_s,
    }


def settings_dict(settings: Settings) -> dict[str, Any]:
    """The settings that override each recipe's as JSON (null: the recipe's own, else the default)."""
    return {"gpu_memory_utilization": settings.gpu_memory_utilization, "max_model_len": settings.max_model_len,
            "max_num_batched_tokens": settings.batched_tokens, "kv_cache_dtype": settings.kv_cache_dtype,
            "engine": settings.engine, "enforce_eager": settings.enforce_eager, "speculation": settings.speculation}


def show_dict(ranked: Ranked, facts: BuildFacts | None = None, named: str | None = None) -> dict[str, Any]:
    """`show --json`: the candidate plus the explanation steps (with `facts`, first which of the build's
    recipes the plan follows: `explain.recipe_step`, `named` the one --recipe names)."""
    steps = [{"key": s.key, "title": s.title, "text": s.text, "basis": s.basis}
             for s in show_steps(ranked, facts, named)]
    return {**candidate(ranked), "steps": steps}


def show_steps(ranked: Ranked, facts: BuildFacts | None = None, named: str | None = None) -> list[Step]:
    """The steps `show` prints: which recipe the plan follows (with `facts`), then the arithmetic."""
    from sparkadvisor.core.explain import explain, recipe_step

    first = recipe_step(ranked.plan, facts, named) if facts is not None else None
    return ([first] if first is not None else []) + list(explain(ranked.plan))
