"""Hold a running service against the plan: which build it serves, where Claude Code points,
and sentences a person can act on when the measurements stray from the plan.

Pure: the probe (sources/probe.py) fetches, this module judges. Every expected figure comes
from a `Plan` made by `core.advisor.evaluate_build`; a first-token time at the measured
hit rate is the same plan evaluated with that hit rate as the workload's prefix reuse.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Literal
from urllib.parse import urlsplit

from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.metrics import MetricsWindow, ServedConfig
from sparkadvisor.core.plan import Cluster, Plan
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Build
from sparkadvisor.core.stages.kv_pool import pool_tokens
from sparkadvisor.core.units import fmt_seconds, fmt_size, fmt_tokens
from sparkadvisor.core.workload import Settings, Workload

Severity = Literal["ok", "info", "warning", "critical"]
SEVERITY_ORDER: dict[str, int] = {"ok": 0, "info": 1, "warning": 2, "critical": 3}

LOW_HIT_RATE_SHARE = 0.75
"""A measured hit rate below this share of the workload's prefix reuse is a finding."""
SLOW_DECODE_SHARE = 0.85
"""Measured decode below this share of the plan's speed is a warning, not just a comparison."""
LOW_ACCEPTANCE_SHARE = 0.75
"""Speculative acceptance below this share of the recipe's published rate is a finding."""
POOL_AGREES = 0.10
"""A served KV cache within this share of the plan's agrees with it (the fidelity target for logged pools)."""
SMALL_POOL_SHARE = 0.80
"""A served KV cache below this share of the plan's is a warning: memory the plan counts on is held elsewhere."""

LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "[::1]"}
CLOUD_HOSTS = {"api.anthropic.com"}


@record(kw_only=False)
class Finding:
    """One sentence about the service, with how much it matters."""

    severity: Severity
    text: str
    brief: str = ""
    """A few words for the TUI's status line; empty when the finding does not belong there."""

    def as_dict(self) -> dict[str, str]:
        """JSON shape: {"severity": ..., "text": ...}."""
        return {"severity": self.severity, "text": self.text}


def worst(findings: Sequence[Finding]) -> Severity:
    """The most serious severity among `findings` ("ok" when there are none)."""
    return max((f.severity for f in findings), key=SEVERITY_ORDER.__getitem__, default="ok")


def most_severe_first(findings: Sequence[Finding]) -> list[Finding]:
    """`findings` ordered critical, warning, info, ok (stable within a severity)."""
    return sorted(findings, key=lambda f: -SEVERITY_ORDER[f.severity])


@record(kw_only=False)
class ServedModel:
    """One entry of the server's /v1/models (vLLM's, or llama-server's)."""

    id: str
    """The served name (--served-model-name, or the model path; llama-server's --alias)."""
    root: str | None
    """The model path or repo vLLM loaded."""
    max_model_len: int | None
    """The longest request it serves: vLLM's max_model_len, llama-server's context a slot (meta.n_ctx)."""
    engine: str = "vllm"
    """"vllm", or "llama.cpp" for an entry llama-server lists (owned_by "llamacpp")."""

    @property
    def server(self) -> str:
        """The server's name in a sentence: "vLLM" or "llama-server"."""
        return "llama-server" if self.engine == "llama.cpp" else "vLLM"

    @property
    def length_text(self) -> str:
        """"max_model_len 262,144", or llama-server's "context 4,096 a slot"; empty when unknown."""
        if self.max_model_len is None:
            return ""
        if self.engine == "llama.cpp":
            return f"context {self.max_model_len:,} a slot"
        return f"max_model_len {self.max_model_len:,}"


@record(kw_only=False)
class BuildMatch:
    """Which catalog builds a served model may be, and how that was decided."""

    builds: tuple[Build, ...]
    """One build when it is known; several when the name fits more; none when nothing fits."""
    how: str
    """A sentence: "vLLM loaded RedHatAI/..., the repo of build ..." or why nothing matched."""
    served: ServedModel | None = None
    """The served model that matched."""

    @property
    def build(self) -> Build | None:
        """The build, when exactly one matches."""
        return self.builds[0] if len(self.builds) == 1 else None


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


def _tail(name: str) -> str:
    return name.rstrip("/").rsplit("/", 1)[-1]


def match_build(index: CatalogIndex, served: Sequence[ServedModel]) -> BuildMatch:
    """The build whose repo or id equals a served id or root; else the builds the root path's last
    component names (a local copy of a repo); else those whose model the served name spells."""
    for model in served:
        for name in (model.id, model.root):
            if not name:
                continue
            same = next((b for b in index.catalog.builds if _norm(name) == _norm(b.id)), None)
            if same is not None:
                return BuildMatch((same,), f"the served name {name} is build {same.id}", model)
            # Every build of the repo: a GGUF repo holds several quantizations, which narrow_match may tell apart.
            of_repo = tuple(b for b in index.catalog.builds if name.lower() == b.repo.lower()
                            or name.rstrip("/").lower().endswith("/" + b.repo.lower()))
            if len(of_repo) == 1:
                return BuildMatch(of_repo, f"{model.server} loaded {name}, the repo of build {of_repo[0].id}", model)
            if of_repo:
                return BuildMatch(of_repo, f"{model.server} loaded {name}, the repo of {len(of_repo)} builds "
                                           f"({', '.join(b.id for b in of_repo)})", model)
    return _match_by_root(index, served) or _match_by_name(index, served)


def _match_by_root(index: CatalogIndex, served: Sequence[ServedModel]) -> BuildMatch | None:
    """A local path such as /models/GLM-5.3-Flash-NVFP4-redhat: repo names it starts with, narrowed by
    an organisation the rest of it spells (redhat for RedHatAI)."""
    for model in served:
        if not model.root or not model.root.startswith(("/", ".", "~")):
            continue
        tail = _norm(_tail(model.root))
        builds = [b for b in index.catalog.builds if tail.startswith(_norm(_tail(b.repo)))]
        if not builds:
            continue
        words = {w for w in tail.split("-") if len(w) >= 3}
        by_org = [b for b in builds if any(_norm(b.repo.split("/", 1)[0]).startswith(w) for w in words)]
        chosen = by_org or builds
        names = ", ".join(b.id for b in chosen)
        how = (f"vLLM loaded {model.root}, a local copy of {chosen[0].repo} (build {chosen[0].id})" if len(chosen) == 1
               else f"vLLM loaded {model.root}, whose name fits {len(chosen)} builds ({names})")
        return BuildMatch(tuple(chosen), how, model)
    return None


def _match_by_name(index: CatalogIndex, served: Sequence[ServedModel]) -> BuildMatch:
    names = [(n, m) for m in served for n in (m.id, m.root) if n]
    for name, model in names:
        tail = _norm(_tail(name))
        builds = [b for b in index.catalog.builds
                  if tail in (_norm(_tail(b.repo)), _norm(b.model), _norm(index.models[b.model].name))]
        on_this_engine = [b for b in builds if model.engine in b.engines]
        builds = on_this_engine or builds
        if len(builds) == 1:
            return BuildMatch((builds[0],), f"the served name {name} matches only build {builds[0].id}", model)
        if builds:
            ids = ", ".join(b.id for b in builds)
            return BuildMatch(tuple(builds), f"the served name {name} fits {len(builds)} builds ({ids})", model)
    shown = ", ".join(dict.fromkeys(n for n, _ in names)) or "nothing"
    server = served[0].server if served else "vLLM"
    return BuildMatch((), f"no catalog build matches what {server} serves ({shown}); pass --build ID "
                          "to compare it with a plan", served[0] if served else None)


def narrow_match(match: BuildMatch, plans: Sequence[Plan], config: ServedConfig) -> tuple[BuildMatch, list[Plan]]:
    """`narrow` for several matching plans, with the match saying what narrowed it (vLLM's metrics)."""
    if len(plans) < 2:
        return match, list(plans)
    kept, said = narrow(plans, config)
    if not said:
        return match, kept
    how = f"{match.how}; {'; '.join(said)} (vLLM's metrics)"
    return BuildMatch(tuple(p.build for p in kept), how, match.served), kept


def drafter_note(plan: Plan) -> str:
    """"; its recipe without the drafter, as vLLM runs none" when the plan leaves the recipe's drafter off,
    or the tokens it drafts a pass when the plan follows the server's instead of the recipe's."""
    if plan.drafter_off:
        return "; its recipe without the drafter, as vLLM runs none"
    if plan.served_draft_tokens is not None:
        return f"; its recipe's drafter at {plan.served_draft_tokens} tokens a pass, as vLLM runs it"
    return ""


def served_settings(settings: Settings, config: ServedConfig | None) -> Settings:
    """The settings to plan a served build with: each recipe without its drafter when vLLM reports no
    speculative decoding (its speed and pool are then a server's without one), unless the user chose;
    drafting as many tokens a pass as vLLM's counters show, where they show it."""
    if config is None or settings.speculation is not None:
        return settings
    if config.speculating is False:
        return replace(settings, speculation=False)
    if config.speculating and config.speculative_tokens and settings.speculative_tokens is None:
        return replace(settings, speculative_tokens=config.speculative_tokens)
    return settings


def replanner(index: CatalogIndex, cluster: Cluster, workload: Workload, settings: Settings) -> Replan:
    """How to evaluate a plan at another prefix reuse (the measured hit rate) on this cluster and workload."""
    from sparkadvisor.core.advisor import evaluate_build

    def replan(plan: Plan, hit_rate: float) -> Plan:
        return evaluate_build(index, plan.build, cluster, workload.changed(prefix_reuse=hit_rate), settings)

    return replan


def narrow(plans: Sequence[Plan], config: ServedConfig) -> tuple[list[Plan], list[str]]:
    """The plans whose settings agree with how the engine was started (KV dtype, block size, prefix
    caching, speculation, memory share); a test no plan passes is skipped, not applied."""
    kept, said = list(plans), []
    for what, agrees in _config_tests(config):
        if len(kept) < 2:
            break
        passing = [p for p in kept if agrees(p)]
        if passing and len(passing) < len(kept):
            said.append(f"{what} leaves {', '.join(p.build.id for p in passing)}")
            kept = passing
    return kept, said


def _config_tests(config: ServedConfig) -> list[tuple[str, Callable[[Plan], bool]]]:
    tests: list[tuple[str, Callable[[Plan], bool]]] = []
    if config.kv_cache_dtype:
        served = _dtype(config.kv_cache_dtype)
        tests.append((f"KV dtype {config.kv_cache_dtype}", lambda p: _dtype(p.kv_cache_dtype) == served))
    if config.block_size and config.block_size_chosen is not False:
        tests.append((f"block size {config.block_size}",
                      lambda p: bool(p.recipe and p.recipe.block_size == config.block_size)))
    if config.block_size_chosen is False:
        tests.append(("vLLM's own block size", lambda p: not (p.recipe and p.recipe.block_size)))
    if config.prefix_caching is not None:
        tests.append((f"prefix caching {'on' if config.prefix_caching else 'off'}",
                      lambda p: p.prefix_caching == config.prefix_caching))
    if config.speculating is not None:
        tests.append(("speculative decoding " + ("on" if config.speculating else "off"),
                      lambda p: bool(p.recipe and p.recipe.speculative) == config.speculating))
    if config.speculative_tokens:
        tests.append((f"{config.speculative_tokens} speculative tokens per pass",
                      lambda p: bool(p.recipe and p.recipe.speculative
                                     and p.recipe.speculative.tokens_per_pass == config.speculative_tokens)))
    if config.gpu_memory_utilization:
        tests.append((f"gpu-memory-utilization {config.gpu_memory_utilization:g}",
                      lambda p: abs(p.budget.utilization - config.gpu_memory_utilization) < 0.005))
    return tests


def _dtype(name: str) -> str:
    """KV dtypes that are one thing: vLLM's fp8 is fp8_e4m3 on CUDA."""
    return {"fp8": "fp8_e4m3"}.get(name, name)


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


Replan = Callable[[Plan, float], Plan]
"""The same plan evaluated with another prefix reuse (the measured hit rate)."""
Reutilize = Callable[[Plan, float], Plan]
"""The same plan evaluated at another gpu-memory-utilization (the one vLLM reports)."""


def service_findings(workload: Workload, served: ServedModel | None, metrics: MetricsWindow | None,
                     plans: Sequence[Plan], replan: Replan | None = None,
                     reutilize: Reutilize | None = None) -> list[Finding]:
    """Everything the probe holds against the plans, `sparkadvisor probe` and the TUI's status line alike:
    the workload, the build's speed and acceptance, the KV cache vLLM sized (against the plans at the
    utilization vLLM reports, when `reutilize` is given), and a served build that does not fit."""
    findings = workload_findings(workload, served, metrics, plans, replan) + build_findings(plans, metrics)
    if metrics is not None:
        findings += pool_findings(at_utilization(plans, metrics.config, reutilize), metrics.config, served)
    return findings + unfit_findings(plans)


def at_utilization(plans: Sequence[Plan], config: ServedConfig, reutilize: Reutilize | None) -> list[Plan]:
    """The plans at the gpu-memory-utilization vLLM reports, where theirs differs or they pin a KV cache
    size vLLM was not started with: the KV cache it sized is held against the budget it was sized from.
    None for `reutilize` keeps them (the user chose one)."""
    served = config.gpu_memory_utilization
    if served is None or not 0 < served <= 1 or reutilize is None:
        return list(plans)

    def sized_otherwise(plan: Plan) -> bool:
        unpinned = plan.budget.kv_pinned_bytes is not None and not config.kv_cache_memory_bytes
        return unpinned or abs(plan.budget.utilization - served) >= 0.005

    return [reutilize(p, served) if sized_otherwise(p) else p for p in plans]


def reutilizer(index: CatalogIndex, cluster: Cluster, workload: Workload, settings: Settings) -> Reutilize | None:
    """How to evaluate a plan at vLLM's gpu-memory-utilization on this cluster and workload; None when
    `settings` sets one (the user's choice is the plan's, whatever the server runs)."""
    from sparkadvisor.core.advisor import evaluate_build

    if settings.gpu_memory_utilization is not None:
        return None

    def reutilize(plan: Plan, utilization: float) -> Plan:
        at = replace(settings, gpu_memory_utilization=utilization)
        return evaluate_build(index, plan.build, cluster, workload, at)

    return reutilize


def workload_findings(workload: Workload, served: ServedModel | None, metrics: MetricsWindow | None,
                      plans: Sequence[Plan] = (), replan: Replan | None = None) -> list[Finding]:
    """What holds whatever the build: the context vLLM accepts and its prefix cache against the workload.
    `plans` (the matching builds' plans) only add first-token times to the sentences, those that fit."""
    plans = [p for p in plans if p.fits]
    findings = _context_findings(workload, served)
    if metrics is not None:
        findings += _caching_off_findings(workload, metrics)
        findings += _cache_findings(workload, metrics, plans, replan)
    return findings


def build_findings(plans: Sequence[Plan], metrics: MetricsWindow | None) -> list[Finding]:
    """What needs the build: decode speed against the plan and speculative acceptance against the recipe,
    against each matching build's plan as a spread when several match (a plan that does not fit has no
    speed to hold it against: `unfit_findings`)."""
    plans = [p for p in plans if p.fits]
    if metrics is None or not plans:
        return []
    return _decode_findings(plans, metrics) + _acceptance_findings(plans, metrics)


def unfit_findings(plans: Sequence[Plan]) -> list[Finding]:
    """A served build whose plan on this cluster does not fit: the cluster options are likely wrong, and that
    plan's speed figures (those of a build that cannot load) are no yardstick."""
    return [Finding("warning", f"vLLM serves {p.build.id}, {does_not_fit(p)}: check --nodes and --hardware; its "
                    "speed is not held against that plan", f"does not fit {p.cluster.label}?")
            for p in plans if not p.fits]


def does_not_fit(plan: Plan) -> str:
    """"which by the plan does not fit on 1 x DGX Spark (it needs 2 nodes)", in the ranking's words."""
    from sparkadvisor.core.ranking import where_it_fits

    where = where_it_fits(plan)
    return f"which by the plan does not fit on {plan.cluster.label} ({'it ' * where.startswith('needs')}{where})"


def _spread(values: Sequence[float], fmt: str) -> str:
    low, high = min(values), max(values)
    return format(low, fmt) if format(low, fmt) == format(high, fmt) else f"{low:{fmt}}-{high:{fmt}}"


def _seconds_spread(values: Sequence[float]) -> str:
    low, high = fmt_seconds(min(values)), fmt_seconds(max(values))
    return low if low == high else f"{low}-{high}"


def _matching(plans: Sequence[Plan]) -> str:
    return "the plan" if len(plans) == 1 else f"the plans for the {len(plans)} matching builds"


def _expect(plans: Sequence[Plan]) -> str:
    return f"{_matching(plans)} {'expects' if len(plans) == 1 else 'expect'}"


def _context_findings(workload: Workload, served: ServedModel | None) -> list[Finding]:
    needed = workload.context_tokens
    if served is None or served.max_model_len is None:
        return []
    if served.max_model_len < needed:
        fix = (f"restart llama-server with --ctx-size {needed} or more (with --kv-unified; without it, that much for "
               "each of its --parallel slots, among which it divides --ctx-size)" if served.engine == "llama.cpp" else
               f"restart vLLM with --max-model-len {needed} or more")
        return [Finding("critical", f"{served.length_text} but the {workload.kind} workload "
                        f"needs {needed:,}: longer prompts are refused; {fix}",
                        f"{_length_brief(served)} < {fmt_tokens(needed)}!")]
    return [Finding("ok", f"{_length_brief(served)} covers the {fmt_tokens(needed)} the {workload.kind} workload "
                    "needs")]


def _length_brief(served: ServedModel) -> str:
    """"max_model_len 262k", or llama-server's "context 4,096 a slot"."""
    assert served.max_model_len is not None
    if served.engine == "llama.cpp":
        return f"context {fmt_tokens(served.max_model_len)} a slot"
    return f"max_model_len {fmt_tokens(served.max_model_len)}"


def _caching_off_findings(workload: Workload, metrics: MetricsWindow) -> list[Finding]:
    if metrics.config.prefix_caching is not False or workload.kind != "agentic":
        return []
    return [Finding("critical", f"vLLM runs with prefix caching off (vllm:cache_config_info): every agent turn "
                    f"recomputes its whole {workload.context_tokens:,}-token prompt; fine for chat, unfit for an "
                    "agent", "prefix caching OFF!")]


def _cache_findings(workload: Workload, metrics: MetricsWindow, plans: Sequence[Plan],
                    replan: Replan | None) -> list[Finding]:
    rate = metrics.prefix_cache_hit_rate
    if rate is None:
        return [Finding("info", note) for note in metrics.notes]
    ttft, took = _ttft_at(workload, rate, plans, replan)
    if rate < workload.prefix_reuse * LOW_HIT_RATE_SHARE and workload.kind == "agentic":
        cost = f" -> 1st token ~{took}" if took else ""
        return [Finding("warning", f"prefix-cache hit rate {rate:.0%} where an agent should see "
                        f"~{workload.prefix_reuse:.0%}{ttft}; check that Claude Code sets "
                        "CLAUDE_CODE_ATTRIBUTION_HEADER=0 and that prefix caching is on",
                        f"prefix hits {rate:.0%} (agent: ~{workload.prefix_reuse:.0%}){cost}")]
    return [Finding("ok", f"prefix-cache hit rate {rate:.0%} over the last {metrics.interval_s:g} s "
                    f"(the workload assumes ~{workload.prefix_reuse:.0%}){ttft}")]


def _ttft_at(workload: Workload, rate: float, plans: Sequence[Plan], replan: Replan | None) -> tuple[str, str]:
    """(", first tokens take ~X at 100k context (...)", "X") from each plan at the measured rate, or ("", "")."""
    if not plans or replan is None:
        return "", ""
    at = f"at {fmt_tokens(workload.context_tokens)} context"
    measured = [t for t in (replan(p, rate).ttft_s for p in plans) if t is not None]
    if not measured:
        return (f"; the first-token time is unknown ({_matching(plans)} {'has' if len(plans) == 1 else 'have'} "
                "no prefill rate)", "")
    planned = [p.ttft_s for p in plans if p.ttft_s is not None]
    took = _seconds_spread(measured)
    expected = f"; {_expect(plans)} {_seconds_spread(planned)}" if planned else ""
    return f": first tokens take ~{took} {at}{expected}", took


def _decode_findings(plans: Sequence[Plan], metrics: MetricsWindow) -> list[Finding]:
    measured = metrics.generation_tok_s
    if measured is None or not [p for p in plans if p.decode_tok_s is not None]:
        return []
    if not metrics.single_stream:
        planned = [p.decode_tok_s for p in plans if p.decode_tok_s is not None]
        return [Finding("info", f"{measured:.0f} tok/s per request with ~{metrics.requests_running:.0f} running; "
                        f"{_expect(plans)} {_spread(planned, '.0f')} tok/s for one stream, so they are "
                        "not compared")]
    # Like for like: acceptance follows the text being written, so the plan is held at the share vLLM counts.
    pairs = [(p.decode_tok_s, at_acceptance(p, metrics.spec_acceptance)) for p in plans]
    planned = [own for own, at in pairs if own is not None and at is not None]
    expected = [at for own, at in pairs if own is not None and at is not None]
    moved = _spread(expected, ".0f") != _spread(planned, ".0f")
    at = f" at the {metrics.spec_acceptance:.0%} acceptance vLLM counts" if moved else ""
    own = f"; at the recipe's acceptance, {_spread(planned, '.0f')}" if moved else ""
    severity: Severity = "warning" if measured < min(expected) * SLOW_DECODE_SHARE else "ok"
    brief = f"decode {measured:.0f} tok/s (plan {_spread(expected, '.0f')})" if severity != "ok" else ""
    if len(expected) == 1:
        return [Finding(severity, f"{measured:.0f} tok/s measured against {expected[0]:.0f} expected{at} "
                        f"({measured / expected[0]:.0%}) for one stream{own}", brief)]
    return [Finding(severity, f"decode {measured:.0f} tok/s: {_expect(plans)} {_spread(expected, '.0f')}{at}{own}",
                    brief)]


def at_acceptance(plan: Plan, rate: float | None) -> float | None:
    """The plan's speed per stream with its drafter accepting `rate` of the drafted tokens: its figure (the
    recipe's measurement or the model's estimate) times what the step model gives at `rate` over what it
    gives at the figure's own acceptance (the measurement's where it states one, else the plan's). The figure
    itself when the plan drafts nothing or `rate` is None."""
    from sparkadvisor.core.benchplan import decode_prediction

    figure = plan.decode_tok_s
    if figure is None or rate is None:
        return figure
    context, streams = plan.workload.context_tokens, plan.workload.streams
    measured = plan.speed.measured
    at = decode_prediction(plan, context, streams, rate)
    own = decode_prediction(plan, context, streams, measured.acceptance if measured is not None else None)
    if at is None or own is None or at.acceptance is None:
        return figure
    return figure * at.expected / own.expected


def _acceptance_findings(plans: Sequence[Plan], metrics: MetricsWindow) -> list[Finding]:
    published = [p.recipe.speculative.acceptance for p in plans
                 if p.recipe and p.recipe.speculative and p.recipe.speculative.acceptance is not None]
    rate = metrics.spec_acceptance
    if not published or rate is None:
        return []
    recipes = "the recipe's" if len(published) == 1 else f"the recipes of the {len(published)} matching builds:"
    shown = _spread([a * 100 for a in published], ".0f") + "%"
    if rate < min(published) * LOW_ACCEPTANCE_SHARE:
        own = [p.decode_tok_s for p in plans if p.decode_tok_s is not None]
        at = [a for p in plans if (a := at_acceptance(p, rate)) is not None]
        cost = (f" ({_spread(at, '.0f')} tok/s for one stream where the recipe's acceptance gives "
                f"{_spread(own, '.0f')})" if own and at and _spread(at, ".0f") != _spread(own, ".0f") else "")
        return [Finding("warning", f"speculative decoding accepts {rate:.0%} of drafted tokens against {recipes} "
                        f"{shown}: decode will fall short of the plan{cost}", f"spec accept {rate:.0%} ({shown})")]
    return [Finding("ok", f"speculative decoding accepts {rate:.0%} of drafted tokens ({recipes} {shown})")]


# --- the KV cache vLLM sized ----------------------------------------------------


@record(kw_only=False)
class ServedPool:
    """The KV cache a running vLLM holds per rank, in the plan's terms: its num_gpu_blocks at what a block
    id costs in the plan's layout (`KvShape.block_id_bytes`), and the pool it makes at the served context."""

    blocks: int
    block_tokens: int
    block_bytes: float
    """What one block id costs on one rank."""
    kv_bytes: float
    """blocks x block_bytes: the KV memory vLLM holds per rank."""
    max_model_len: int | None
    pool_tokens: float | None
    """vLLM's "GPU KV cache size" for these blocks: requests of max_model_len that fit, times max_model_len."""
    planned_bytes: float
    """The plan's KV memory per rank."""
    planned_tokens: float | None
    """The plan's pool at the served max_model_len."""
    node_bytes: float
    """The memory an engine can use on one node: a cache larger than this is not in the plan's layout."""
    drafter_bytes: float = 0.0
    """What the plan's drafter takes per node (weights and CUDA graphs) and a vLLM running without it
    gives the KV cache instead: in `planned_bytes` when vLLM reports no speculative decoding."""

    @property
    def in_layout(self) -> bool:
        """The blocks fit the node at the plan's bytes per block id; when not, vLLM pages this model
        otherwise than the catalog's attention facts say, and its figures are not the plan's terms."""
        return self.kv_bytes <= self.node_bytes


def served_pool(plan: Plan, config: ServedConfig, max_model_len: int | None) -> ServedPool | None:
    """The served KV cache held against `plan`, or None when vLLM gave no block count or the plan has
    no KV layout to cost a block in (the model's attention facts are unpublished)."""
    shape, inputs = plan.pool.shape, plan.pool.inputs
    if config.num_gpu_blocks is None or shape is None:
        return None
    block = config.block_size or inputs.block_tokens
    spec = 0 if config.speculating is False else config.speculative_tokens or inputs.speculative_tokens
    caching = inputs.prefix_caching if config.prefix_caching is None else config.prefix_caching
    length = max_model_len or inputs.max_model_len
    per_block = shape.block_id_bytes(block, spec)
    held = config.num_gpu_blocks * per_block
    request = shape.request_bytes(length, block, inputs.batched_tokens, spec, caching) if length else None
    budget = plan.fit.budget
    reserve = budget.reserve
    without = config.speculating is False and budget.kv_pinned_bytes is None
    drafter = reserve.draft_weights_bytes + reserve.draft_graph_bytes if without else 0.0
    planned = budget.kv_bytes + drafter
    return ServedPool(config.num_gpu_blocks, shape.block_tokens(block, spec), per_block, held, length,
                      pool_tokens(shape.bytes_per_token, held, request, length),
                      planned, pool_tokens(shape.bytes_per_token, planned, request, length),
                      plan.cluster.hardware.usable_memory_gib * 2**30, drafter)


def pool_findings(plans: Sequence[Plan], config: ServedConfig, served: ServedModel | None) -> list[Finding]:
    """The KV cache vLLM sized (`config`, from vllm:cache_config_info) against each fitting plan's: the
    same memory within POOL_AGREES is ok; much less is memory the plan counts on held elsewhere (page
    cache, another process, a cold compile)."""
    pools = [(p, pool) for p in plans if p.fits
             for pool in [served_pool(p, config, served.max_model_len if served else None)]
             if pool is not None and pool.planned_bytes > 0]
    if not pools:
        return []
    plan, pool = min(pools, key=lambda pair: abs(pair[1].kv_bytes / pair[1].planned_bytes - 1))
    share = pool.kv_bytes / pool.planned_bytes
    which = ("the plan" if len(plans) == 1 else f"the plan for {plan.build.id}" if len(pools) == 1
             else f"the closest of the {len(pools)} matching plans ({plan.build.id})")
    held = (f"vLLM holds {fmt_size(pool.kv_bytes)} of KV cache per rank ({pool.blocks:,} blocks of "
            f"{pool.block_tokens:,} tokens at {pool.block_bytes / 2**20:,.2f} MiB each in {plan.model.name}'s layout)")
    at = f" at max_model_len {pool.max_model_len:,}" if pool.max_model_len else ""
    tokens = f", a pool of {fmt_tokens(pool.pool_tokens)} tokens{at}" if pool.pool_tokens else ""
    budget = plan.fit.budget
    basis = (f"with --kv-cache-memory {fmt_size(budget.kv_pinned_bytes)}" if budget.kv_pinned_bytes
             else f"at gpu-memory-utilization {budget.utilization:g}")
    if pool.drafter_bytes:
        basis += f" and without the recipe's drafter (its {fmt_size(pool.drafter_bytes)} to the KV cache)"
    elif plan.drafter_off:
        basis += " and without the recipe's drafter (its memory to the KV cache)"
    expected = (f"{which}, {basis}, expects {fmt_size(pool.planned_bytes)}" +
                (f", {fmt_tokens(pool.planned_tokens)} tokens" if pool.planned_tokens else ""))
    if not pool.in_layout:
        return [Finding("info", f"vLLM reports {pool.blocks:,} KV blocks, which at {pool.block_bytes / 2**20:,.2f} "
                        f"MiB each in {plan.model.name}'s layout would be {fmt_size(pool.kv_bytes)} per rank, more "
                        f"than the {fmt_size(pool.node_bytes)} a {plan.cluster.hardware.name} has: vLLM pages this "
                        "model otherwise than the catalog's attention facts say, so its KV cache is not compared")]
    pinned, plan_pin = config.kv_cache_memory_bytes, budget.kv_pinned_bytes
    if pinned and (plan_pin is None or abs(pinned - plan_pin) > 0.01 * pinned):
        return [Finding("info", f"{held}{tokens}; vLLM was started with --kv-cache-memory {fmt_size(pinned)}, "
                        f"where {expected}, so they are not compared")]
    if share <= 0:
        return []
    gap = f"{(share - 1) * 100:+.1f}%"
    if abs(share - 1) <= POOL_AGREES:
        return [Finding("ok", f"{held}{tokens}; {expected} ({gap})")]
    if share < SMALL_POOL_SHARE:
        return [Finding("warning", f"{held}{tokens}; {expected} ({gap}): memory the plan counts on is held "
                        "elsewhere: the page cache of an earlier model (sync; echo 3 | sudo tee "
                        "/proc/sys/vm/drop_caches, then restart vLLM), another process on the node, or a cold "
                        "torch.compile whose temporary memory vLLM charged to its profile run (vllm #54122; a "
                        "restart with the compile cache kept starts warm)",
                        f"small KV cache {fmt_size(pool.kv_bytes, digits=0)}/rank "
                        f"(plan {fmt_size(pool.planned_bytes, digits=0)})")]
    return [Finding("info", f"{held}{tokens}; {expected} ({gap})")]
