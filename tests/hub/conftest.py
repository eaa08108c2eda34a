"""Hub tests: a fake hub on 127.0.0.1, the hub's folders and token under a temporary folder.

The environment is set here, at import, before huggingface_hub is first imported: the
library freezes HF_HOME's token path and the telemetry switch at import.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="sparkadvisor-hf-home-")
for _name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT", "HF_HUB_OFFLINE", "HF_HUB_CACHE"):
    os.environ.pop(_name, None)

from fakehub import FakeHub  # noqa: E402


@pytest.fixture(autouse=True)
def hub_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh hub cache and no token for every test."""
    import huggingface_hub.constants as constants

    home = tmp_path / "hf"
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(home / "token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(home / "stored_tokens"))
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch):
    """A running fake hub, with HF_ENDPOINT pointing at it."""
    with FakeHub() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
