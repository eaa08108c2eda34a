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


# Tests that take many seconds on their own (a type check of src/, the app in a real terminal): run
# first, so that under `pytest -n 2` one worker spends them while the other works through the rest
# instead of the whole run waiting on them at the end.
LONG_FIRST = ("tests/test_types.py", "tests/tui/test_tmux.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def first(item: pytest.Item) -> int:
        return 0 if item.nodeid.startswith(LONG_FIRST) else 1

    items.sort(key=first)  # sort is stable: the rest keep their order
