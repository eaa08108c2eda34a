"""Probe the running stack: vLLM, the gateway in front of it, and where Claude Code points.

Every HTTP call has a timeout (httpx's, and a hard bound over the whole call so a server
that trickles bytes cannot hold the probe); every failure becomes a `Finding` with a
sentence that names the URL and what to do. A Bearer token given for vLLM is sent, never
kept in a message: every sentence is scrubbed of it before it leaves this module.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

from sparkadvisor.core.checkup import Finding, ServedModel, Target, claude_target, same_service
from sparkadvisor.core.metrics import MetricsFormatError, MetricsWindow, Scrape, from_llamacpp, parse_prometheus, window
from sparkadvisor.sources.claude import ClaudeSettings, claude_findings, read_claude_settings
from sparkadvisor.sources.greeting import listen_while_waiting, not_http_sentence, web_page
from sparkadvisor.urls import redact_urls


@dataclass(frozen=True, slots=True)
class ProbeConfig:
    """What to probe and how long to wait."""

    vllm_url: str
    gateway_url: str | None = None
    claude_settings: Path | None = None
    interval_s: float = 5.0
    timeout_s: float = 5.0
    token: str | None = field(default=None, repr=False)
    """Bearer token for vLLM's --api-key; never printed."""
    messages: bool = False
    """Also send a one-token /v1/messages request."""


@dataclass(frozen=True, slots=True)
class Answer:
    """One HTTP exchange: the status and body, or the sentence saying why there is none."""

    url: str
    status: int | None = None
    text: str = ""
    problem: str | None = None
    """Why nothing usable came back (connection refused, timeout), in words."""
    content_type: str = ""
    location: str = ""
    """The Location header of a redirect."""

    @property
    def reached(self) -> bool:
        """Some HTTP answer came back, whatever its status."""
        return self.status is not None

    @property
    def ok(self) -> bool:
        """A 2xx answer."""
        return self.status is not None and 200 <= self.status < 300

    def snippet(self) -> str:
        """The start of the body on one line, for error sentences: an OpenAI-style error's message (vLLM's and
        llama-server's {"error": {"message": ...}}) where the body is one."""
        data = _json(self) if self.text.lstrip().startswith("{") else None
        error = data.get("error") if isinstance(data, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        flat = " ".join(str(message).split()) if isinstance(message, str) else " ".join(self.text.split())
        limit = 160 if isinstance(message, str) else 80
        return flat[:limit] + ("..." if len(flat) > limit else "")

    def web_page(self) -> str | None:
        """"an HTML page titled 'Sign in' (HTTP 200)" when a web page or a redirect answered, else None."""
        return web_page(self.status, self.content_type, self.location, self.text)


async def fetch(client: httpx.AsyncClient, method: str, url: str, timeout_s: float, **kwargs: Any) -> Answer:
    """One request bounded by `timeout_s` in total; every failure becomes an `Answer.problem`.

    A slow answer is also listened for on a second connection, to tell a hung server from one
    that is not HTTP at all (an SSH server greets first)."""
    listener = listen_while_waiting(url, timeout_s)
    try:
        async with asyncio.timeout(timeout_s):
            response = await client.request(method, url, **kwargs)
            return Answer(url, response.status_code, response.text, content_type=response.headers.get(
                "content-type", ""), location=response.headers.get("location", ""))
    except (TimeoutError, httpx.TimeoutException):
        first_bytes = listener.result() if listener.done() and not listener.cancelled() else None
        if first_bytes:
            return Answer(url, problem=not_http_sentence(url, first_bytes))
        return Answer(url, problem=f"{url} did not answer within {timeout_s:g} s: the server is hung, "
                                   "overloaded or behind a firewall")
    except httpx.ConnectError:
        return Answer(url, problem=f"nothing answers at {url} (connection refused or host unreachable)")
    except httpx.RemoteProtocolError:
        return Answer(url, problem=f"{url} answered with something that is not HTTP, so another service may hold "
                                   "this port")
    except (httpx.ReadError, httpx.WriteError):
        return Answer(url, problem=f"{url} closed the connection without an answer, so another service may hold "
                                   "this port")
    except httpx.HTTPError as error:
        return Answer(url, problem=f"{url} broke off the exchange ({type(error).__name__})")
    except (httpx.InvalidURL, httpx.UnsupportedProtocol, ValueError, OverflowError):
        return Answer(url, problem=f"{url} is not a valid http:// or https:// URL")
    finally:
        listener.cancel()


def _json(answer: Answer) -> Any:
    try:
        return json.loads(answer.text)
    except ValueError:
        return None


def _http_problem(answer: Answer, what: str, token_env: bool) -> str:
    if answer.status in (401, 403):
        fix = ("the token was refused; check the variable --token-env names" if token_env else
               "vLLM was started with --api-key; pass --token-env NAME naming the variable that holds the key")
        return f"{answer.url} answered HTTP {answer.status}: {fix}"
    body = f": {answer.snippet()}" if answer.text.strip() else ""
    return f"{what} answered HTTP {answer.status}{body}"


# --- vLLM ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VllmState:
    """What vLLM said."""

    url: str
    up: bool
    version: str | None = None
    models: tuple[ServedModel, ...] = ()
    metrics: MetricsWindow | None = None
    messages_ok: bool | None = None
    """The one-token /v1/messages request worked; None when not asked."""
    findings: tuple[Finding, ...] = ()
    other: str | None = None
    """What answers at the URL instead of vLLM ("an HTML page titled 'Sign in' (HTTP 200)"), when something does."""


async def probe_vllm(config: ProbeConfig) -> VllmState:
    """/health first (a dead server gives one sentence, not four), then /version, /v1/models
    and two /metrics scrapes `interval_s` apart, and /v1/messages on request."""
    base = base_url(config.vllm_url)
    headers = {"Authorization": f"Bearer {config.token}"} if config.token else {}
    async with _client(config, headers) as client:
        health = await fetch(client, "GET", f"{base}/health", config.timeout_s)
        if not health.reached:
            # Nothing answered, so nothing says which server belongs there: name both the export starts.
            down = f"the model server is down: {health.problem}; start vLLM or llama-server, or pass --vllm URL"
            return VllmState(base, False, findings=(Finding("critical", down),))
        if (page := health.web_page()) is not None:
            return _not_vllm(base, health.url, page)
        version, models, metrics = await asyncio.gather(
            fetch(client, "GET", f"{base}/version", config.timeout_s),
            fetch(client, "GET", f"{base}/v1/models", config.timeout_s),
            _metrics(client, base, config))
        if (page := models.web_page()) is not None:
            return _not_vllm(base, models.url, page)
        state = _vllm_state(base, health, version, models, metrics, config)
        if config.messages and state.models:
            state = await _messages(client, base, state, config)
    return state


def not_vllm_sentence(base: str, url: str, page: str) -> str:
    """One sentence for a port where a web page answers instead of vLLM's API."""
    return (f"vLLM is not at {base}: {url} answers with {page}, not vLLM's API, so a web UI, a login page or a "
            "proxy holds this port; check the host and port vLLM listens on (vllm serve --port, 8000 by default), "
            "or pass --vllm URL")


def _not_vllm(base: str, url: str, page: str) -> VllmState:
    return VllmState(base, False, findings=(Finding("critical", not_vllm_sentence(base, url, page)),), other=page)


def _client(config: ProbeConfig, headers: Mapping[str, str]) -> httpx.AsyncClient:
    """No proxies from the environment: the probe talks to the address it was given."""
    return httpx.AsyncClient(timeout=httpx.Timeout(config.timeout_s), headers=dict(headers), trust_env=False,
                             verify=tls_context())


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One verifying context for every probe: httpx loads the CA store again for each client it
    makes (~45 ms of CPU), and the TUI's status line probes every few seconds."""
    return httpx.create_ssl_context()


def _vllm_state(base: str, health: Answer, version: Answer, models: Answer,
                metrics: MetricsWindow | Finding, config: ProbeConfig) -> VllmState:
    findings: list[Finding] = []
    if not health.ok:
        cause = "its engine is dead; restart vLLM" if health.status == 503 else health.snippet()
        findings.append(Finding("critical", f"vLLM at {base} answers /health with HTTP {health.status}: {cause}"))
    served = _served_models(models, findings, config)
    window_ = metrics if isinstance(metrics, MetricsWindow) else None
    if isinstance(metrics, Finding):
        findings.append(metrics)
    found_version = _version(version)
    if health.ok and served:
        names = ", ".join(f"{m.id} ({m.length_text})" if m.max_model_len else m.id for m in served)
        if served[0].engine == "llama.cpp":  # it has no /version
            server = "llama-server (llama.cpp)"
        else:
            server = f"vLLM {found_version or '(version unknown)'}"
        findings.insert(0, Finding("ok", f"{server} is up at {base}, serving {names}"))
    # A port that answers /health but not with a model list (nginx, a gateway, another app) is not vLLM up, and
    # something other than a model server answers there.
    up = health.ok and (bool(served) or models.status in (401, 403))
    other = None
    if health.ok and not up and models.reached:
        other = "a server with no model list at /v1/models" + ("" if models.ok else f" (HTTP {models.status})")
    return VllmState(base, up, found_version, served, window_, None, tuple(findings), other=other)


def _version(answer: Answer) -> str | None:
    data = _json(answer) if answer.ok else None
    return str(data["version"]) if isinstance(data, dict) and "version" in data else None


def _served_models(answer: Answer, findings: list[Finding], config: ProbeConfig) -> tuple[ServedModel, ...]:
    if not answer.reached:
        findings.append(Finding("critical", f"vLLM /v1/models: {answer.problem}"))
        return ()
    if not answer.ok:
        findings.append(Finding("critical", _http_problem(answer, f"vLLM {answer.url}", config.token is not None)))
        return ()
    data = _json(answer)
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "id" in e for e in entries):
        findings.append(Finding("critical", f"{answer.url} did not return vLLM's model list "
                                f"(got {answer.snippet()!r}), so this port may not be vLLM"))
        return ()
    if not entries:
        findings.append(Finding("critical", f"vLLM at {config.vllm_url} serves no model"))
    return tuple(_served(e) for e in entries)


def _served(entry: dict[str, Any]) -> ServedModel:
    """One /v1/models entry: llama-server's says owned_by "llamacpp" and gives each slot's context as meta.n_ctx."""
    if entry.get("owned_by") == "llamacpp":
        meta = entry.get("meta")
        return ServedModel(str(entry["id"]), None, _int(meta.get("n_ctx")) if isinstance(meta, dict) else None,
                           "llama.cpp")
    return ServedModel(str(entry["id"]), entry.get("root"), _int(entry.get("max_model_len")))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


async def scrape(client: httpx.AsyncClient, base: str, timeout_s: float) -> Scrape | Finding:
    """One read of /metrics, or the finding that says why it failed."""
    answer = await fetch(client, "GET", f"{base}/metrics", timeout_s)
    if not answer.reached:
        return Finding("warning", f"the server's metrics: {answer.problem}")
    if not answer.ok:  # llama-server answers 501 and says to start it with --metrics
        return Finding("warning", _http_problem(answer, answer.url, False))
    try:
        parsed = parse_prometheus(answer.text)
    except MetricsFormatError as error:
        return Finding("warning", f"{answer.url}: {error} (got {answer.snippet()!r}), so this port may not be vLLM")
    if parsed.has_vllm:
        return parsed
    if parsed.has_llamacpp:
        return from_llamacpp(parsed)
    return Finding("warning", f"{answer.url} holds no vllm: metric, so this port may not be vLLM")


async def _metrics(client: httpx.AsyncClient, base: str, config: ProbeConfig) -> MetricsWindow | Finding:
    first = await scrape(client, base, config.timeout_s)
    if isinstance(first, Finding):
        return first
    started = time.monotonic()
    await asyncio.sleep(config.interval_s)
    second = await scrape(client, base, config.timeout_s)
    if isinstance(second, Finding):
        return second
    return window(first, second, round(time.monotonic() - started, 2))


async def _messages(client: httpx.AsyncClient, base: str, state: VllmState, config: ProbeConfig) -> VllmState:
    """A one-token Anthropic Messages request: the path Claude Code uses."""
    body = {"model": state.models[0].id, "max_tokens": 1, "messages": [{"role": "user", "content": "ping"}]}
    answer = await fetch(client, "POST", f"{base}/v1/messages", config.timeout_s, json=body,
                         headers={"anthropic-version": "2023-06-01"})
    data = _json(answer) if answer.ok else None
    if isinstance(data, dict) and data.get("type") == "message":
        return replace(state, messages_ok=True,
                       findings=(*state.findings, Finding("ok", f"{base}/v1/messages answers (one-token request)")))
    problem = answer.problem or (_http_problem(answer, answer.url, config.token is not None) if not answer.ok
                                 else f"{answer.url} did not return an Anthropic message (got {answer.snippet()!r})")
    return replace(state, messages_ok=False, findings=(*state.findings, Finding(
        "critical", f"the Anthropic path fails: {problem}; Claude Code cannot talk to this vLLM directly")))


# --- the gateway --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GatewayState:
    """Whether the gateway answers; `up` is None when no gateway was named or found."""

    url: str | None
    up: bool | None
    inferred: bool = False
    """The URL came from Claude Code's ANTHROPIC_BASE_URL, not --gateway."""
    findings: tuple[Finding, ...] = ()
    other: str | None = None
    """What answers at the URL instead of a gateway (a web page), when something does."""


async def probe_gateway(url: str | None, timeout_s: float, inferred: bool = False) -> GatewayState:
    """GET /health, then / when /health is not there (free-claude-code, LiteLLM answer one)."""
    if url is None:
        return GatewayState(None, None)
    base = base_url(url)
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), trust_env=False, verify=tls_context()) as client:
        answer = await fetch(client, "GET", f"{base}/health", timeout_s)
        if answer.status in (404, 405):
            answer = await fetch(client, "GET", f"{base}/", timeout_s)
    where = "the gateway Claude Code points at" if inferred else "the gateway"
    page = answer.web_page()
    if page is not None:
        finding = Finding("critical", _not_gateway(base, answer.url, page, inferred))
        return GatewayState(base, False, inferred, (finding,), other=page)
    if answer.ok:
        return GatewayState(base, True, inferred, (Finding("ok", f"{where} is up at {base}"),))
    if answer.status in (401, 403):
        return GatewayState(base, True, inferred, (Finding("ok", f"{where} is up at {base} (its {answer.url} asks "
                                                                 f"for a key: HTTP {answer.status})"),))
    why = answer.problem or _http_problem(answer, answer.url, False)
    consequence = "; every agent request fails" if inferred else ""
    return GatewayState(base, False, inferred, (Finding("critical", f"{where} is down: {why}{consequence}"),))


def _not_gateway(base: str, url: str, page: str, inferred: bool) -> str:
    who = f"Claude Code points at {base}, but no gateway answers there" if inferred else f"no gateway at {base}"
    fix = ("every agent request fails; check ANTHROPIC_BASE_URL and the port the gateway listens on" if inferred
           else "check the port the gateway listens on, or pass --gateway URL")
    return (f"{who}: {url} answers with {page}, not a gateway's API, so a web UI, a login page or a proxy holds "
            f"this port; {fix}")


# --- everything ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProbeReport:
    """The whole stack as the probe found it."""

    vllm: VllmState
    gateway: GatewayState
    claude: ClaudeSettings
    claude_target: Target
    findings: tuple[Finding, ...]
    """Every finding about liveness and settings, token scrubbed (plan findings come later)."""


async def probe(config: ProbeConfig, environ: Mapping[str, str] | None = None) -> ProbeReport:
    """vLLM and the gateway probed at once, Claude Code's settings read, each judged."""
    environ = os.environ if environ is None else environ
    path = config.claude_settings or Path.home() / ".claude" / "settings.json"
    settings = read_claude_settings(path, environ, given=config.claude_settings is not None)
    gateway_url, inferred = config.gateway_url, False
    if gateway_url is None and settings.base_url and settings.base_url_problem is None \
            and not same_service(settings.base_url, config.vllm_url):
        if claude_target(settings.base_url, config.vllm_url, None) == "other":
            gateway_url, inferred = settings.base_url, True
    vllm, gateway = await asyncio.gather(probe_vllm(config), probe_gateway(gateway_url, config.timeout_s, inferred))
    target = claude_target(settings.base_url, vllm.url, gateway.url)
    findings = [*vllm.findings, *gateway.findings, *claude_findings(settings, target, vllm, gateway)]
    return ProbeReport(vllm, gateway, settings, target, tuple(scrub(f, config.token) for f in findings))


def scrub(finding: Finding, token: str | None) -> Finding:
    """The finding with the token, and any credentials written into a URL, replaced by ***."""
    text = redact_urls(finding.text)
    if token:
        text = text.replace(token, "***")
    return finding if text == finding.text else Finding(finding.severity, text)


# --- the status line's poll ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuickCheck:
    """One poll for the TUI's status line: cheap enough to repeat every few seconds."""

    vllm_url: str
    up: bool
    problem: str | None
    """Why vLLM is not up, in words."""
    served: ServedModel | None
    scrape: Scrape | None
    """This poll's /metrics, kept by the caller to measure the next interval against."""
    scraped_at: float
    """time.monotonic() of the scrape."""
    claude_target: Target
    claude_target_up: bool | None
    """Whether what Claude Code points at answers; None for the cloud."""


def base_url(url: str) -> str:
    """A server's root: people often paste the OpenAI-style URL ending in /v1."""
    root = url.strip().rstrip("/")
    return root[:-3] if root.endswith("/v1") else root


async def quick_check(vllm_url: str, timeout_s: float, settings_path: Path | None = None,
                      environ: Mapping[str, str] | None = None) -> QuickCheck:
    """/health, /v1/models and /metrics once, and whether Claude Code's target answers."""
    base = base_url(vllm_url)
    config = ProbeConfig(base, timeout_s=timeout_s)
    settings = read_claude_settings(settings_path or Path.home() / ".claude" / "settings.json",
                                    os.environ if environ is None else environ)
    target = claude_target(settings.base_url, base, None)
    async with _client(config, {}) as client:
        health = await fetch(client, "GET", f"{base}/health", timeout_s)
        if not health.reached:
            target_up = await _target_up_now(target, settings.base_url, False, timeout_s)
            return QuickCheck(base, False, health.problem, None, None, time.monotonic(), target, target_up)
        models, metrics = await asyncio.gather(fetch(client, "GET", f"{base}/v1/models", timeout_s),
                                               scrape(client, base, timeout_s))
    found: list[Finding] = []
    page = health.web_page() or models.web_page()
    served = _served_models(models, found, config) if page is None else ()
    up = health.ok and (bool(served) or models.status in (401, 403))
    problem = None if up else (f"{base} answers with {page}, not vLLM's API" if page else
                               found[0].text if found else f"/health answered HTTP {health.status}")
    target_up = await _target_up_now(target, settings.base_url, up, timeout_s)
    return QuickCheck(base, up, problem, served[0] if served else None,
                      metrics if isinstance(metrics, Scrape) else None, time.monotonic(), target, target_up)


async def _target_up_now(target: Target, url: str | None, vllm_up: bool, timeout_s: float) -> bool | None:
    if target == "cloud" or url is None:
        return None
    if target == "vllm":
        return vllm_up
    return bool((await probe_gateway(url, timeout_s)).up)
