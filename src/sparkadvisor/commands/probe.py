"""`sparkadvisor probe`: is the service on, where does Claude Code point, and how does the
running vLLM compare with the plan for the build it serves? Exit 1 when something the user
relies on is down or misconfigured (a critical finding)."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from sparkadvisor.commands.common import (
    UsageError,
    add_scenario_options,
    find_build_id,
    load,
    number_above_zero,
    path_option,
    print_json,
    scenario,
)
from sparkadvisor.urls import redact_urls, redacted, url_option

if TYPE_CHECKING:
    from sparkadvisor.core.checkup import BuildMatch, Finding
    from sparkadvisor.core.plan import Plan
    from sparkadvisor.sources.probe import ProbeReport


MARKS = {"ok": "ok  ", "info": "info", "warning": "WARN", "critical": "FAIL"}


seconds = number_above_zero(3600, "seconds")
"""An argparse type: a positive number of seconds, at most an hour."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vllm", metavar="URL", type=url_option,
                        help="vLLM (or llama-server) base URL (default: $SPARKADVISOR_VLLM_URL or "
                             "http://127.0.0.1:8000)")
    parser.add_argument("--gateway", metavar="URL", type=url_option, help="gateway base URL (default: Claude Code's "
                        "ANTHROPIC_BASE_URL when it is not vLLM)")
    parser.add_argument("--claude-settings", type=path_option, metavar="PATH",
                        help="Claude Code settings file (default: ~/.claude/settings.json)")
    parser.add_argument("--interval", type=seconds, default=5.0, metavar="SECONDS",
                        help="time between the two /metrics scrapes that rates are measured over (default: 5)")
    parser.add_argument("--timeout", type=seconds, default=5.0, metavar="SECONDS",
                        help="longest wait for any one HTTP answer (default: 5)")
    parser.add_argument("--token-env", metavar="NAME", help="environment variable holding vLLM's --api-key "
                        "(sent as a Bearer token, never printed)")
    parser.add_argument("--messages", action="store_true", help="also send a one-token /v1/messages request")
    parser.add_argument("--build", metavar="ID", help="compare with this build's plan instead of the one "
                        "matching what vLLM serves")
    add_scenario_options(parser)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from sparkadvisor.core.checkup import worst
    from sparkadvisor.sources import default_vllm_url
    from sparkadvisor.sources.probe import ProbeConfig, probe, scrub
    from sparkadvisor.urls import UrlError

    token = _token(args.token_env)
    index = load(args)
    cluster, workload, settings = scenario(args, index)
    build_id = find_build_id(index, args.build) if args.build else None
    try:
        vllm_url = args.vllm or default_vllm_url()
    except UrlError as error:
        raise UsageError(str(error)) from None
    config = ProbeConfig(vllm_url, args.gateway, args.claude_settings, args.interval,
                         args.timeout, token, args.messages)
    report = asyncio.run(probe(config))
    match, plan, plan_findings = _hold_against_plan(report, index, cluster, workload, settings, build_id)
    findings = [*report.findings, *(scrub(f, token) for f in plan_findings)]
    if args.json:
        print_json(redacted(_json(report, match, plan, findings)))
    else:
        _print(report, match, plan, findings)
    return 1 if worst(findings) == "critical" else 0


def _token(name: str | None) -> str | None:
    if name is None:
        return None
    if not name.strip():
        raise UsageError("--token-env needs the name of an environment variable that holds vLLM's --api-key "
                         "(got an empty name)")
    value = os.environ.get(name)
    if not value:
        raise UsageError(f"--token-env {name} names an environment variable that is not set or is empty")
    return value


def _hold_against_plan(report: ProbeReport, index: Any, cluster: Any, workload: Any, settings: Any,
                       build_id: str | None) -> tuple[BuildMatch | None, list[Plan], list[Finding]]:
    """The plans for the builds vLLM may be serving, and where the service strays from them: findings
    that need only the workload always, those that need the build against each matching plan."""
    from sparkadvisor.core.advisor import evaluate_build
    from sparkadvisor.core.checkup import (
        BuildMatch,
        Finding,
        match_build,
        narrow_match,
        replanner,
        reutilizer,
        served_settings,
        service_findings,
    )

    models, metrics = report.vllm.models, report.vllm.metrics
    if build_id is not None:
        match = BuildMatch((index.builds[build_id],), f"--build {build_id}", models[0] if models else None)
    elif models:
        match = match_build(index, models)
    else:
        return None, [], []

    settings = served_settings(settings, metrics.config if metrics is not None else None)
    plans = [evaluate_build(index, build, cluster, workload, settings) for build in match.builds]
    if metrics is not None:
        match, plans = narrow_match(match, plans, metrics.config)
    replan = replanner(index, cluster, workload, settings)
    reutilize = reutilizer(index, cluster, workload, settings)
    findings = service_findings(workload, match.served, metrics, plans, replan, reutilize)
    if len(plans) != 1:
        more = ("; findings that need the build are given against each one's plan; pass --build ID to compare "
                "with one") if plans else ""
        findings.append(Finding("info", match.how + more))
    return match, plans, findings


def _rounded(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _json(report: ProbeReport, match: BuildMatch | None, plans: list[Plan], findings: list[Finding]) -> dict[str, Any]:
    from sparkadvisor.core.checkup import most_severe_first, worst

    vllm, metrics = report.vllm, report.vllm.metrics
    served = (match.served if match and match.served else None) or (vllm.models[0] if vllm.models else None)
    data: dict[str, Any] = {
        "status": worst(findings),
        "vllm_url": vllm.url, "vllm_up": vllm.up, "vllm_version": vllm.version,
        "served_model": served.id if served else None,
        "served_engine": served.engine if served else None,
        "served_models": [m.id for m in vllm.models],
        "max_model_len": served.max_model_len if served else None,
        "messages_ok": vllm.messages_ok,
        "vllm_answered_by": vllm.other,
        "gateway_url": report.gateway.url, "gateway_up": report.gateway.up, "gateway_answered_by": report.gateway.other,
        "claude_code_target": report.claude_target, "claude_code_base_url": report.claude.base_url,
        "claude_code_settings_source": report.claude.source,
        **_metrics_json(metrics),
        "build": match.build.id if match and match.build else None,
        "builds": [p.build.id for p in plans],
        "build_match": match.how if match else None,
        "plan": _plan_json(plans[0]) if len(plans) == 1 else None,
        "plans": [_plan_json(p) for p in plans],
        "findings": [f.as_dict() for f in most_severe_first(findings)],  # as the text lists them
    }
    return data


def _metrics_json(metrics: Any) -> dict[str, Any]:
    keys = ("interval_s", "prefix_cache_hit_rate", "prefix_cache_hit_rate_lifetime", "kv_cache_usage",
            "requests_running", "requests_waiting", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "itl_p50_s",
            "itl_p90_s", "latency_basis", "spec_decode_acceptance", "generation_tok_s", "num_gpu_blocks")
    if metrics is None:
        return dict.fromkeys(keys)
    m = metrics
    values = (m.interval_s, m.prefix_cache_hit_rate, m.prefix_cache_hit_rate_lifetime, m.kv_cache_usage,
              m.requests_running, m.requests_waiting, m.ttft.p50_s, m.ttft.p90_s, m.ttft.p99_s,
              m.inter_token.p50_s, m.inter_token.p90_s, m.ttft.basis, m.spec_acceptance, m.generation_tok_s,
              m.config.num_gpu_blocks)
    return {k: (_rounded(v, 4) if isinstance(v, float) else v) for k, v in zip(keys, values, strict=True)}


def _plan_json(plan: Plan | None) -> dict[str, Any] | None:
    if plan is None:
        return None
    loaded = plan.runs  # a build that does not fit, or that no engine serves here, has no speed, as in `rank --json`
    return {"build": plan.build.id, "nodes": plan.cluster.nodes, "workload": plan.workload.kind,
            "recipe": plan.recipe.id if plan.recipe else None, "fits": plan.fits,
            "drafter_off": plan.drafter_off, "draft_tokens": plan.recipe.speculative.tokens_per_pass
            if plan.recipe and plan.recipe.speculative else None,
            "ttft_s": _rounded(plan.ttft_s, 1) if loaded else None,
            "prefill_tok_s": _rounded(plan.prefill_tok_s, 0) if loaded else None,
            "decode_tok_s": _rounded(plan.decode_tok_s, 1) if loaded else None,
            "prefix_caching": plan.prefix_caching, "context_tokens": plan.workload.context_tokens}


def _print(report: ProbeReport, match: BuildMatch | None, plans: list[Plan], findings: list[Finding]) -> None:
    from sparkadvisor.core.checkup import most_severe_first
    from sparkadvisor.core.safetext import safe_text

    for line in _summary(report, match, plans):
        print(safe_text(redact_urls(line)))
    print("findings:")
    for finding in most_severe_first(findings):
        print(f"  {MARKS[finding.severity]} {safe_text(redact_urls(finding.text))}")


def _summary(report: ProbeReport, match: BuildMatch | None, plans: list[Plan]) -> list[str]:
    from sparkadvisor.core.checkup import drafter_note

    vllm, gateway = report.vllm, report.gateway
    # Up without a model list: /v1/models asked for the API key (the findings say so), so what it serves is unknown.
    served = ", ".join(m.id for m in vllm.models) or "models unknown"
    engine = "llama.cpp" if vllm.models and vllm.models[0].engine == "llama.cpp" else "vLLM"
    shown = engine if vllm.up or vllm.other else "server"  # nothing answered to say which engine belongs there
    lines = [f"{shown:<12}{_state(vllm.up, vllm.other)} at {vllm.url}"
             + (f" · {vllm.version}" if vllm.version else "")
             + ((f" · serves {served}" if vllm.models else f" · {served}") if vllm.up else "")
             + (f": {vllm.other} answers there" if vllm.other else "")]
    if gateway.url:
        lines.append(f"gateway     {_state(gateway.up, gateway.other)} at {gateway.url}"
                     + (f": {gateway.other} answers there" if gateway.other else ""))
    claude = report.claude
    where = f"{claude.base_url}, from {claude.source}" if claude.base_url else f"no ANTHROPIC_BASE_URL in {claude.path}"
    target = "llama.cpp" if report.claude_target == "vllm" and engine == "llama.cpp" else report.claude_target
    lines.append(f"Claude Code -> {target} ({where})")
    if vllm.metrics is not None:
        lines.append("metrics     " + _metrics_line(vllm.metrics))
    if len(plans) == 1 and match is not None:
        plan = plans[0]
        lines.append(f"plan        {plan.build.id} on {plan.cluster.label}, {plan.workload.label} ({match.how}"
                     f"{drafter_note(plan)})")
    elif plans:
        server = vllm.models[0].server if vllm.models else "vLLM"
        lines.append(f"plans       {', '.join(p.build.id for p in plans)} on {plans[0].cluster.label}, "
                     f"{plans[0].workload.label}: {server}'s answers fit each of them")
    return lines


def _state(up: bool | None, other: str | None) -> str:
    """up, DOWN (nothing answers, or it fails), or NOT FOUND (something else answers there)."""
    return "up" if up else "NOT FOUND" if other else "DOWN"


def _metrics_line(m: Any) -> str:
    def pct(value: float | None) -> str:
        return "unknown" if value is None else f"{value:.0%}"

    def sec(value: float | None) -> str:
        return "unknown" if value is None else f"{value:.2f} s"

    def ms(value: float | None) -> str:
        return "unknown" if value is None else f"{value * 1000:.0f} ms"

    parts = [f"over {m.interval_s:g} s: prefix-cache hits {pct(m.prefix_cache_hit_rate)}",
             f"KV cache {pct(m.kv_cache_usage)}",
             f"{m.requests_running or 0:.0f} running, {m.requests_waiting or 0:.0f} waiting",
             f"TTFT p50 {sec(m.ttft.p50_s)} ({m.ttft.basis})", f"ITL p50 {ms(m.inter_token.p50_s)}"]
    if m.spec_acceptance is not None:
        parts.append(f"spec-decode acceptance {pct(m.spec_acceptance)}")
    if m.generation_tok_s is not None:
        parts.append(f"{m.generation_tok_s:.0f} tok/s per request")
    return " · ".join(parts)
