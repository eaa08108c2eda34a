"""Test-wide fixtures: no test reads or writes the developer's own folders."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Config, data and state under a temporary folder of their own (not the test's tmp_path,
    which tests use as an output folder); no hub or network telemetry."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("SPARKADVISOR_HOME", str(home))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    monkeypatch.setenv("SPARKADVISOR_PROBE", "off")
    monkeypatch.setenv("NO_COLOR", "")
    monkeypatch.delenv("NO_COLOR")
    return home


@pytest.fixture(scope="session")
def index():
    """The bundled catalog, loaded once."""
    from sparkadvisor.catalogs import load_index

    return load_index(include_user=False)
