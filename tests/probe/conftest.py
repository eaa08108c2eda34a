"""Fixtures: fake vLLM and gateway servers, and Claude Code settings files, all temporary."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from probe_fakes import Server, gateway_server, vllm_server


@pytest.fixture(autouse=True)
def no_claude_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own Claude Code variables never leak into a test."""
    for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL",
                 "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
                 "CLAUDE_CODE_ATTRIBUTION_HEADER", "SPARKADVISOR_VLLM_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def vllm() -> Iterator[Server]:
    """A healthy fake vLLM serving the RedHatAI GLM build, one request decoding at 50 tok/s (its plan: 46.9)."""
    server = vllm_server(generation_tok_s=50.0)
    yield server
    server.close()


@pytest.fixture
def gateway() -> Iterator[Server]:
    """A healthy fake gateway."""
    server = gateway_server()
    yield server
    server.close()


@pytest.fixture
def settings_file(tmp_path: Path):
    """Write a Claude Code settings.json with the given env and return its path."""
    def write(env: dict[str, str] | None = None, text: str | None = None) -> Path:
        path = tmp_path / "claude" / "settings.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text if text is not None else json.dumps({"env": env or {}}), encoding="utf-8")
        return path
    return write
