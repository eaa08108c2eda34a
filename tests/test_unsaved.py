"""A home folder that cannot be written (read-only, full, a file where a folder should be): every
command still works, and says once, in one sentence naming the place, what it could not keep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkadvisor import paths, unsaved
from sparkadvisor.cli import main
from sparkadvisor.state import AppState, load_state, save_state, state_path

KEEP = "SPARKADVISOR_HOME=DIR puts what the app keeps in a folder it can write"


@pytest.fixture(autouse=True)
def nothing_pending() -> None:
    unsaved.take()
    unsaved._said.clear()


def blocked(folder: Path) -> Path:
    """A file where `folder` should be: no one, root included, can create anything under it."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("a file where a folder should be")
    return folder


@pytest.mark.cold_cache  # the catalog is parsed, so the cache is written (and fails)
def test_a_command_says_its_cache_was_not_saved_and_still_answers(capsys) -> None:
    cache = blocked(paths.cache_dir())
    assert main(["rank", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["nodes"] == 2
    assert captured.err.splitlines() == [
        f"sparkadvisor: could not save the catalog cache in {cache} (a file stands where a folder should be: {cache}); "
        f"every start reads and checks the catalog again, which is slower but loses nothing; {KEEP}"]
    assert cache.read_text() == "a file where a folder should be"


def test_choices_that_cannot_be_saved_are_noted_once() -> None:
    state = blocked(paths.state_dir())
    save_state(AppState(workload="chat"))
    save_state(AppState(workload="agentic"))
    assert unsaved.take() == [
        f"could not save your choices (theme, workload, hardware, nodes) in {state / 'state.json'} (a file stands "
        f"where a folder should be: {state}); the app keeps them until it quits, and the next start opens as this "
        f"one did; {KEEP}"]
    assert unsaved.take() == [] and load_state() == AppState()
    assert state_path() == state / "state.json"
