"""Hold a running service against the plan: which build it serves, where Claude Code points,
and sentences a person can act on when the measurements stray from the plan.

Pure: the probe (sources/probe.py) fetches, this module judges. Every expected figure comes
from a `Plan` made by `core.advisor.evaluate_build`; a first-token time at the measured
hit rate is the same plan evaluated with that hit rate as the workload's prefix reuse.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.metrics import MetricsWindow
from sparkadvisor.core.plan import Plan
from sparkadvisor.core.schema import Build
from sparkadvisor.core.units import fmt_seconds, fmt_tokens

Severity = Literal["ok", "info", "warning", "critical"]
SEVERITY_ORDER: dict[str, int] = {"ok": 0, "info": 1, "warning": 2, "critical": 3}

LOW_HIT_RATE_SHARE = 0.75
"""A measured hit rate below this share of the workload's prefix reuse is a finding."""
SLOW_DECODE_SHARE = 0.85
"""Measured decode below this share of the plan's speed is a warning, not just a comparison."""
LOW_ACCEPTANCE_SHARE = 0.75
"""Speculative acceptance below this share of the recipe's published rate is a finding."""

LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "[::1]"}
CLOUD_HOSTS = {"api.anthropic.com"}


@dataclass(frozen=True, slots=True)
class Finding:
    """One sentence about the service, with how much it matters."""

    severity: Severity
    text: str

    def as_dict(self) -> dict[str, str]:
        """JSON shape: {"severity": ..., "text": ...}."""
        return {"severity": self.severity, "text": self.text}


def worst(findings: Sequence[Finding]) -> Severity:
    """The most serious severity among `findings` ("ok" when there are none)."""
    return max((f.severity for f in findings), key=SEVERITY_ORDER.__getitem__, default="ok")


@dataclass(frozen=True, slots=True)
class ServedModel:
    """One entry of vLLM's /v1/models."""

    id: str
    """The served name (--served-model-name, or the model path)."""
    root: str | None
    """The model path or repo vLLM loaded."""
    max_model_len: int | None


@dataclass(frozen=True, slots=True)
class BuildMatch:
    """Which catalog build a served model is, and how that was decided."""

    build: Build | None
    how: str
    """A sentence: "vLLM loaded RedHatAI/..., the repo of build ..." or why nothing matched."""
    served: ServedModel | None = None
    """The served model that matched."""


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


def match_build(index: CatalogIndex, served: Sequence[ServedModel]) -> BuildMatch:
    """The build whose repo or id equals a served id or root; else the only build of a model
    whose name the served id spells; else None with the reason."""
    for model in served:
        for name in (model.id, model.root):
            if not name:
                continue
            for build in index.catalog.builds:
                if name.lower() == build.repo.lower() or name.rstrip("/").lower().endswith("/" + build.repo.lower()):
                    return BuildMatch(build, f"vLLM loaded {name}, the repo of build {build.id}", model)
                if _norm(name) == _norm(build.id):
                    return BuildMatch(build, f"the served name {name} is build {build.id}", model)
    return _match_by_name(index, served)


def _match_by_name(index: CatalogIndex, served: Sequence[ServedModel]) -> BuildMatch:
    names = [(n, m) for m in served for n in (m.id, m.root) if n]
    for name, model in names:
        tail = _norm(name.rstrip("/").rsplit("/", 1)[-1])
        builds = [b for b in index.catalog.builds
                  if tail in (_norm(b.repo.rsplit("/", 1)[-1]), _norm(b.model), _norm(index.models[b.model].name))]
        served_by_vllm = [b for b in builds if "vllm" in b.engines]
        if len(builds) > 1 and len(served_by_vllm) == 1:
            builds = served_by_vllm
        if len(builds) == 1:
            return BuildMatch(builds[0], f"the served name {name} matches only build {builds[0].id}", model)
        if builds:
            ids = ", ".join(b.id for b in builds)
            return BuildMatch(None, f"the served name {name} fits several builds ({ids}); pass --build ID")
    shown = ", ".join(dict.fromkeys(n for n, _ in names)) or "nothing"
    return BuildMatch(None, f"no catalog build matches what vLLM serves ({shown}); pass --build ID "
                            "to compare it with a plan")


# --- where Claude Code points -------------------------------------------------

Target = Literal["vllm", "gateway", "cloud", "other"]


def _endpoint(url: str) -> tuple[str, int | None]:
    try:
        parts = urlsplit(url if "://" in url else f"http://{url}")
    except ValueError:
        return url, None
    host = (parts.hostname or "").lower()
    host = "localhost" if host in LOCAL_HOSTS else host
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = None
    return host, port


def same_service(a: str | None, b: str | None) -> bool:
    """Two base URLs reach the same server (localhost, 127.0.0.1 and ::1 are one host)."""
    return bool(a and b) and _endpoint(a) == _endpoint(b)  # type: ignore[arg-type]


def claude_target(base_url: str | None, vllm_url: str, gateway_url: str | None) -> Target:
    """Where Claude Code's ANTHROPIC_BASE_URL sends it: vLLM, the gateway, the cloud, or elsewhere."""
    if not base_url or _endpoint(base_url)[0] in CLOUD_HOSTS:
        return "cloud"
    if same_service(base_url, vllm_url):
        return "vllm"
    if same_service(base_url, gateway_url):
        return "gateway"
    return "other"


def is_local(url: str) -> bool:
    """The URL's host is this machine."""
    return _endpoint(url)[0] == "localhost"


# --- the plan against the measurements --------------------------------------------


def plan_findings(plan: Plan, served: ServedModel | None, metrics: MetricsWindow | None,
                  replan: Callable[[float], Plan]) -> list[Finding]:
    """Sentences where the service strays from `plan`; `replan(hit_rate)` is the same plan
    evaluated with the measured hit rate as the workload's prefix reuse."""
    findings = _context_findings(plan, served)
    if metrics is not None:
        findings += _cache_findings(plan, metrics, replan)
        findings += _decode_findings(plan, metrics)
        findings += _acceptance_findings(plan, metrics)
    return findings


def _context_findings(plan: Plan, served: ServedModel | None) -> list[Finding]:
    needed = plan.workload.context_tokens
    if served is None or served.max_model_len is None:
        return []
    if served.max_model_len < needed:
        return [Finding("critical", f"max_model_len {served.max_model_len:,} but the "
                        f"{plan.workload.kind} workload needs {needed:,}: longer prompts are refused; "
                        f"restart vLLM with --max-model-len {needed} or more")]
    return [Finding("ok", f"max_model_len {fmt_tokens(served.max_model_len)} covers the "
                    f"{fmt_tokens(needed)} the {plan.workload.kind} workload needs")]


def _cache_findings(plan: Plan, metrics: MetricsWindow, replan: Callable[[float], Plan]) -> list[Finding]:
    rate, workload = metrics.prefix_cache_hit_rate, plan.workload
    if rate is None:
        return [Finding("info", note) for note in metrics.notes]
    measured = replan(rate)
    at = f"at {fmt_tokens(workload.context_tokens)} context"
    ttft = (f"first tokens will take ~{fmt_seconds(measured.ttft_s)} {at}" if measured.ttft_s is not None
            else "the first-token time is unknown (the plan has no prefill rate for this build)")
    if rate < workload.prefix_reuse * LOW_HIT_RATE_SHARE and workload.kind == "agentic":
        planned = f" (the plan's {fmt_seconds(plan.ttft_s)})" if plan.ttft_s else ""
        return [Finding("warning", f"prefix-cache hit rate {rate:.0%} where an agent should see "
                        f"~{workload.prefix_reuse:.0%}: {ttft}{planned}; check that Claude Code sets "
                        "CLAUDE_CODE_ATTRIBUTION_HEADER=0 and that prefix caching is on")]
    return [Finding("ok", f"prefix-cache hit rate {rate:.0%} over the last {metrics.interval_s:g} s "
                    f"(plan assumes ~{workload.prefix_reuse:.0%}); " + ttft.replace("will take", "take"))]


def _decode_findings(plan: Plan, metrics: MetricsWindow) -> list[Finding]:
    expected, measured = plan.decode_tok_s, metrics.generation_tok_s
    if expected is None or measured is None:
        return []
    if not metrics.single_stream:
        return [Finding("info", f"{measured:.0f} tok/s per request with ~{metrics.requests_running:.0f} running; "
                        f"the plan's {expected:.0f} tok/s is for one stream, so they are not compared")]
    severity: Severity = "warning" if measured < expected * SLOW_DECODE_SHARE else "ok"
    return [Finding(severity, f"{measured:.0f} tok/s measured against {expected:.0f} expected "
                    f"({measured / expected:.0%}) for one stream")]


def _acceptance_findings(plan: Plan, metrics: MetricsWindow) -> list[Finding]:
    spec = plan.recipe.speculative if plan.recipe else None
    rate = metrics.spec_acceptance
    if spec is None or spec.acceptance is None or rate is None:
        return []
    if rate < spec.acceptance * LOW_ACCEPTANCE_SHARE:
        return [Finding("warning", f"speculative decoding accepts {rate:.0%} of drafted tokens against the "
                        f"recipe's {spec.acceptance:.0%}: decode will fall short of the plan")]
    return [Finding("ok", f"speculative decoding accepts {rate:.0%} of drafted tokens "
                    f"(recipe: {spec.acceptance:.0%})")]
