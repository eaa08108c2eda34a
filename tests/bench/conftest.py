"""Fixtures: a stand-in vLLM with a prefix cache (the probe's stand-ins are reused from tests/probe)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "probe"))

from bench_fakes import bench_server  # noqa: E402
from probe_fakes import Server  # noqa: E402


@pytest.fixture(autouse=True)
def no_vllm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own vLLM address never leaks into a test."""
    monkeypatch.delenv("SPARKADVISOR_VLLM_URL", raising=False)


@pytest.fixture
def standin() -> Iterator[Server]:
    """A stand-in vLLM serving the RedHatAI GLM build, fast: 0.2 s per request plus 40,000
    prompt tokens per second, decode at 50 tok/s per stream (two Sparks decode GLM-5.3-Flash at ~47)."""
    server = bench_server(overhead_s=0.2, prefill_tok_s=40_000.0, decode_tok_s=50.0)
    yield server
    server.close()
