"""Remembered choices: saved atomically, read back, and harmless when broken."""

from __future__ import annotations

import json

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
