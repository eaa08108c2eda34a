"""`claude`: the Claude Code side, pointed at the server (vLLM or llama-server) or at a gateway.

The `env` block for ~/.claude/settings.json names the served model for Opus, Sonnet and
Haiku and sets CLAUDE_CODE_ATTRIBUTION_HEADER=0 (without it the per-request header
defeats prefix caching). The token is never written: `apiKeyHelper` prints the server's own
token variable (VLLM_API_KEY, or LLAMA_API_KEY for llama-server) when Claude Code asks for it.
Both servers answer Anthropic's Messages API at /v1/messages.
"""

from __future__ import annotations

import json

from sparkadvisor.core.safetext import safe_json
from sparkadvisor.export.llamacpp import AnyLaunch
from sparkadvisor.export.spec import PLACEHOLDER_HOST, ExportFile
from sparkadvisor.export.text import comment, sh_arg


def uses_placeholder(launch: AnyLaunch) -> bool:
    """True when Claude Code would be pointed at the head node but no head address was given."""
    return not launch.options.gateway_url and launch.options.placeholder_head


def base_url(launch: AnyLaunch) -> str:
    """The gateway URL the user gave, else the head node's server (a named placeholder without --head-addr)."""
    gateway = launch.options.gateway_url
    if gateway:
        return gateway.rstrip("/")
    host = launch.head.default  # PLACEHOLDER_HOST when no --head-addr was given
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{launch.options.port}"


def settings(launch: AnyLaunch) -> dict[str, object]:
    """The settings.json fragment: apiKeyHelper and the env block."""
    name, token = launch.served_name, launch.token_variable
    return {
        "apiKeyHelper": f'printf "%s" "${{{token}:-no-token}}"',
        "env": {
            "ANTHROPIC_BASE_URL": base_url(launch),
            "ANTHROPIC_DEFAULT_OPUS_MODEL": name,
            "ANTHROPIC_DEFAULT_SONNET_MODEL": name,
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": name,
            "CLAUDE_CODE_ATTRIBUTION_HEADER": "0",
        },
    }


def check_command(launch: AnyLaunch) -> str:
    """One line that asks the service for a one-word answer and says whether it came."""
    body = json.dumps({"model": launch.served_name, "max_tokens": 8,
                       "messages": [{"role": "user", "content": "Say ok."}]}, ensure_ascii=False)
    url = base_url(launch) + "/v1/messages"
    return (f'if curl -fsS --max-time 120 {sh_arg(url)} -H "content-type: application/json" '
            f'-H "anthropic-version: 2023-06-01" -H "authorization: Bearer ${{{launch.token_variable}:-no-token}}" '
            f"-d {sh_arg(body)} | grep -q '\"type\": *\"message\"'; then echo 'the service answers'; "
            f"else echo {sh_arg(f'NOT answering at {url}: Claude Code would fail or fall back to the cloud')} "
            ">&2; exit 1; fi")


def render_claude(launch: AnyLaunch) -> tuple[ExportFile, ...]:
    """claude-settings.json (merge into ~/.claude/settings.json) and claude-check.sh."""
    text = safe_json(settings(launch)) + "\n"  # a catalog's escape sequences as \\uXXXX, the value unchanged
    where = "the gateway" if launch.options.gateway_url else f"{launch.server_name} on the head node"
    script = ["#!/usr/bin/env bash"]
    script += comment(f"Does {where} answer as {launch.served_name}? Run before starting Claude Code: the "
                      "article's gateway was off for days and Claude Code silently used the cloud.")
    script += comment(f"Merge claude-settings.json into ~/.claude/settings.json; export {launch.token_variable} "
                      "in your shell if the server requires a token (it is never written to a file).")
    script += [line for note in launch.notes if note.loud for line in comment(f"WARNING: {note.text}")]
    if uses_placeholder(launch):
        script += comment(f"{PLACEHOLDER_HOST} is a placeholder: export again with --head-addr ADDR (or set "
                          "ANTHROPIC_BASE_URL in the settings) before you rely on this.")
    if uses_placeholder(launch):  # a check of a name that never resolves would only say "NOT answering"
        message = (f"claude-settings.json points Claude Code at {PLACEHOLDER_HOST}, a placeholder: export again "
                   "with --head-addr ADDR (or --gateway-url URL), then run this check")
        script += ["set -u", f"printf '%s\\n' {sh_arg(message)} >&2", "exit 2"]
    else:
        script += ["set -u", check_command(launch)]
    return (ExportFile("claude-settings.json", text), ExportFile("claude-check.sh", "\n".join(script) + "\n", True))
