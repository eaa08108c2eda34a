"""Remembered choices: saved atomically, read back, and harmless when broken."""

from __future__ import annotations

import json

from sparkadvisor import paths, unsaved
from sparkadvisor.state import AppState, load_state, save_state, state_path


def test_missing_file_gives_defaults() -> None:
    assert load_state() == AppState()


def test_saved_choices_come_back() -> None:
    chosen = AppState(theme="light", workload="chat", hardware="dgx-spark", nodes=1)
    save_state(chosen)
    assert load_state() == chosen
    assert json.loads(state_path().read_text())["workload"] == "chat"
    assert [p.name for p in state_path().parent.iterdir()] == ["state.json"]


def test_broken_file_gives_defaults() -> None:
    state_path().parent.mkdir(parents=True)
    state_path().write_text("{not json")
    assert load_state() == AppState()


def test_wrong_types_are_ignored_field_by_field() -> None:
    state_path().parent.mkdir(parents=True)
    state_path().write_text(json.dumps({"theme": "light", "nodes": "three", "extra": 1}))
    assert load_state() == AppState(theme="light")


async def test_the_app_says_its_choices_could_not_be_saved(make_app) -> None:
    """A read-only home: the choice still takes, and a notification names the file and what it costs."""
    unsaved.take()
    state = paths.state_dir()
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text("a file where a folder should be")
    app = make_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("w")
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert app.state.workload == "chat"
    assert messages == [f"Could not save your choices (theme, workload, hardware, nodes) in {state / 'state.json'} "
                        f"(a file stands where a folder should be: {state}); the app keeps them until it quits, and "
                        "the next start opens as this one did; SPARKADVISOR_HOME=DIR puts what the app keeps in a "
                        "folder it can write"]
