"""Claude Code's settings: where its requests go, and what in them breaks local serving.

Reads ~/.claude/settings.json ("env") and the environment; keeps only the variables that
say where requests go and which model they name, never a token or key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sparkadvisor.core.checkup import Finding, Target

if TYPE_CHECKING:
    from sparkadvisor.sources.probe import GatewayState, VllmState

CLAUDE_MODEL_VARS = ("ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
                     "ANTHROPIC_DEFAULT_HAIKU_MODEL")
"""Claude Code variables that name the model it asks for (ecosystem.md §4)."""
CLAUDE_KEPT_VARS = ("ANTHROPIC_BASE_URL", "CLAUDE_CODE_ATTRIBUTION_HEADER", *CLAUDE_MODEL_VARS)
"""The only settings the probe keeps: never ANTHROPIC_AUTH_TOKEN or ANTHROPIC_API_KEY."""


@dataclass(frozen=True, slots=True)
class ClaudeSettings:
    """Claude Code's relevant settings: from settings.json "env", else the environment."""

    path: Path
    """The settings file read (it may not exist)."""
    base_url: str | None
    source: str
    """Where base_url came from: the settings file's path, "environment" or "nowhere"."""
    env: dict[str, str]
    """The kept variables (CLAUDE_KEPT_VARS) from the settings file, overlaid on the environment."""
    findings: tuple[Finding, ...] = ()
    base_url_problem: str | None = None
    """Why base_url is no URL Claude Code can reach (then nothing is probed there); None when it is one."""


def read_claude_settings(path: Path, environ: Mapping[str, str], given: bool = False) -> ClaudeSettings:
    """settings.json's "env" wins over the shell, as Claude Code applies it on every run. A file the user `given`
    by path that does not exist is said (a typo, most likely); Claude Code's own default may well be absent."""
    file_env, findings = _settings_env(path)
    if given and not path.exists():
        findings.append(Finding("warning", f"{path} does not exist, so nothing here was read from it; check the path "
                                           "given to --claude-settings (Claude Code reads ~/.claude/settings.json)"))
    shell = {k: environ[k] for k in CLAUDE_KEPT_VARS if k in environ}
    merged = {**shell, **file_env}
    base = merged.get("ANTHROPIC_BASE_URL") or None
    source = str(path) if file_env.get("ANTHROPIC_BASE_URL") else ("environment" if base else "nowhere")
    in_shell = shell.get("ANTHROPIC_BASE_URL")
    if file_env.get("ANTHROPIC_BASE_URL") and in_shell and in_shell != base:
        findings.append(Finding("info", f"ANTHROPIC_BASE_URL is {base} in {path} but {in_shell} in this shell; "
                                "run /status inside Claude Code to see which one it uses"))
    problem = _url_problem(base, "the environment" if source == "environment" else str(path))
    if problem:
        findings.append(Finding("critical", f"{problem}; Claude Code cannot reach it, so every agent request fails"))
    return ClaudeSettings(path, base, source, merged, tuple(findings), problem)


def _url_problem(base: str | None, where: str) -> str | None:
    """The sentence `check_url` has for ANTHROPIC_BASE_URL, or None when it is a URL."""
    from sparkadvisor.urls import UrlError, check_url

    try:
        check_url(base, f"ANTHROPIC_BASE_URL in {where}") if base else None
    except UrlError as error:
        return str(error)
    return None


def _settings_env(path: Path) -> tuple[dict[str, str], list[Finding]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, []
    except (OSError, UnicodeDecodeError) as error:
        return {}, [Finding("warning", f"{path} cannot be read ({error.__class__.__name__}); Claude Code's "
                                       "settings are unknown")]
    except json.JSONDecodeError as error:
        return {}, [Finding("warning", f"{path} is not valid JSON (line {error.lineno}, column {error.colno}: "
                                       f"{error.msg}); Claude Code will not apply its env; fix the file")]
    if not isinstance(data, dict):
        return {}, [Finding("warning", f"{path} holds a JSON {_json_kind(data)}, not an object; Claude Code reads "
                                       "an object with an \"env\" object in it and applies none of this; fix the file")]
    env = data.get("env")
    if env is not None and not isinstance(env, dict):
        return {}, [Finding("warning", f"\"env\" in {path} is a JSON {_json_kind(env)}, not an object; Claude Code "
                                       "applies none of it; write it as {\"env\": {\"ANTHROPIC_BASE_URL\": ...}}")]
    if env is None:
        return {}, []
    return {k: str(env[k]) for k in CLAUDE_KEPT_VARS if k in env}, []


def _json_kind(value: object) -> str:
    """What a JSON value is, as a person names it."""
    if isinstance(value, bool):
        return "true/false"
    return {list: "array", str: "string", int: "number", float: "number", type(None): "null"}.get(type(value), "value")


def claude_findings(settings: ClaudeSettings, target: Target, vllm: VllmState, gateway: GatewayState) -> list[Finding]:
    """Where Claude Code's requests go, and what in its settings breaks local serving."""
    findings = list(settings.findings)
    url = settings.base_url
    if target == "cloud":
        how = f"ANTHROPIC_BASE_URL is {url}" if url else f"no ANTHROPIC_BASE_URL in {settings.path} or the environment"
        advice = _where_to_point(settings, vllm, gateway)
        findings.append(Finding("critical", f"Claude Code goes to the cloud: {how}; {advice}"))
        return findings
    if settings.base_url_problem is None:
        findings += _target_up(url or "", target, vllm, gateway)
    if (url or "").rstrip("/").endswith("/v1"):
        findings.append(Finding("critical", f"ANTHROPIC_BASE_URL {url} ends in /v1, but Claude Code appends "
                                "/v1/messages itself; drop the /v1"))
    if settings.env.get("CLAUDE_CODE_ATTRIBUTION_HEADER") != "0":
        findings.append(Finding("warning", "Claude Code sends its attribution header, which changes every prompt and "
                                "defeats prefix caching; add \"CLAUDE_CODE_ATTRIBUTION_HEADER\": \"0\" to the \"env\" "
                                f"of {settings.path} (a shell export does not work)"))
    if target == "vllm":
        findings += _direct_model_names(settings, vllm)
    return findings


def _where_to_point(settings: ClaudeSettings, vllm: VllmState, gateway: GatewayState) -> str:
    """The address to give Claude Code: only one the probe found answering (the gateway first)."""
    local = gateway.url if gateway.up else vllm.url if vllm.up else None
    if local:
        return f"add \"ANTHROPIC_BASE_URL\": \"{local}\" to the \"env\" of {settings.path}"
    found = (f"{vllm.url} answers with {vllm.other}, not vLLM" if vllm.other
             else f"the model server at {vllm.url} is down")
    return (f"nothing local answers to point it at yet: {found}; start vLLM or llama-server, or pass --vllm URL where "
            "it runs, and probe again for the address to give Claude Code")


def _target_up(url: str, target: Target, vllm: VllmState, gateway: GatewayState) -> list[Finding]:
    up: bool | None
    if target == "vllm":
        up, name = vllm.up, f"{_server(vllm)} directly"
    elif target == "gateway":
        up, name = gateway.up, "the gateway"
    else:
        return [Finding("warning", f"Claude Code points at {url}, which is neither vLLM ({vllm.url}) nor the "
                                   f"gateway ({gateway.url}); pass that URL as --gateway to check it")]
    if up:
        return [Finding("ok", f"Claude Code points at {name} ({url}), which is up")]
    if target == "gateway" and gateway.inferred:
        return []
    other = vllm.other if target == "vllm" else gateway.other
    if other:
        what = "vLLM" if target == "vllm" else "a gateway"
        return [Finding("critical", f"Claude Code points at {url}, where {other} answers, not {what}: every agent "
                                    "request fails")]
    return [Finding("critical", f"Claude Code points at {name} ({url}), which is down: every agent request fails")]


def _server(vllm: VllmState) -> str:
    """"llama-server" or "vLLM", whichever answered at the URL; "the model server" when nothing did."""
    if vllm.models:
        return vllm.models[0].server
    return "vLLM" if vllm.up or vllm.other else "the model server"


def _direct_model_names(settings: ClaudeSettings, vllm: VllmState) -> list[Finding]:
    served = {m.id for m in vllm.models}
    findings = [Finding("warning", f"vLLM serves {m.id!r}, a name with '/', which Claude Code cannot use; restart "
                        "vLLM with --served-model-name NAME") for m in vllm.models if "/" in m.id]
    for var in CLAUDE_MODEL_VARS:
        value = settings.env.get(var)
        if served and value and value not in served:
            findings.append(Finding("warning", f"{var}={value} names a model {_server(vllm)} does not serve "
                                    f"({', '.join(sorted(served))}); Claude Code's requests will fail"))
    return findings
