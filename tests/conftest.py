"""Test-wide fixtures: no test reads or writes the developer's own folders."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# A home for the whole run, set before any fixture: session fixtures (set up before the per-test home
# below) and a test that calls monkeypatch.undo() (which drops the per-test home too) land here, never in
# the developer's ~/.local/share, ~/.cache or ~/.config.
SESSION_HOME = tempfile.mkdtemp(prefix="sparkadvisor-tests-")
os.environ["SPARKADVISOR_HOME"] = SESSION_HOME
atexit.register(shutil.rmtree, SESSION_HOME, True)

# Keep compiled bytecode even where the environment says PYTHONDONTWRITEBYTECODE: without it every worker
# compiles every test module again (pytest's assertion rewriting, ~3 s a worker) and every `sparkadvisor`
# subprocess a test starts compiles the package again (~0.45 s each). __pycache__ is in .gitignore.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


@pytest.fixture(scope="session")
def warm_cache(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, list[Path]]:
    """The bundled catalog loaded once per worker, and the cache files that load wrote: each test's home
    starts with them, as a user's does after the first run, so a command a test runs does not parse,
    validate and calibrate the bundled catalog again (~0.4 s a time)."""
    home = tmp_path_factory.mktemp("warm-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPARKADVISOR_HOME", str(home))
        from sparkadvisor.catalogs import load_index

        loaded = load_index(include_user=False)
    return loaded, sorted((home / "cache").glob("catalog-*.json"))


@pytest.fixture(autouse=True)
def isolated_home(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                  monkeypatch: pytest.MonkeyPatch) -> Path:
    """Config, data and state under a temporary folder of their own (not the test's tmp_path,
    which tests use as an output folder); no hub or network telemetry. The cache holds the bundled
    catalog already parsed, unless the test is marked `cold_cache` (tests of the cache, of what a cold
    start imports, of a cache folder that cannot be made)."""
    home = tmp_path_factory.mktemp("home")
    if request.node.get_closest_marker("cold_cache") is None:
        _, files = request.getfixturevalue("warm_cache")
        (home / "cache").mkdir()
        for file in files:
            shutil.copy2(file, home / "cache" / file.name)
    monkeypatch.setenv("SPARKADVISOR_HOME", str(home))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    monkeypatch.setenv("SPARKADVISOR_PROBE", "off")
    monkeypatch.setenv("NO_COLOR", "")
    monkeypatch.delenv("NO_COLOR")
    return home


@pytest.fixture(scope="session")
def index(warm_cache):
    """The bundled catalog, loaded once."""
    return warm_cache[0]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cold_cache: the test's home starts with an empty cache folder")


# Tests that take many seconds on their own (a type check of src/, the app in a real terminal): run
# first, so that under `pytest -n 2` one worker spends them while the other works through the rest
# instead of the whole run waiting on them at the end.
LONG_FIRST = ("tests/test_types.py", "tests/tui/test_tmux.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def first(item: pytest.Item) -> int:
        return 0 if item.nodeid.startswith(LONG_FIRST) else 1

    items.sort(key=first)  # sort is stable: the rest keep their order
