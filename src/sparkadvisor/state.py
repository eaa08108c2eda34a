"""What the app remembers between runs: theme, workload, hardware and node count.

Stored as JSON in `paths.state_dir()/state.json`, written atomically (temp file + os.replace).
A missing or unreadable file gives the defaults: state is a convenience, never a reason to fail.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from sparkadvisor import paths
from sparkadvisor.atomic import write_atomic

STATE_FILE = "state.json"


@dataclass(frozen=True, slots=True)
class AppState:
    """The choices a user made last time."""

    theme: str = "dark"
    """Name of the theme in use."""
    workload: str = "agentic"
    """agentic or chat."""
    hardware: str = "dgx-spark"
    """Hardware id from the catalog."""
    nodes: int = 2
    """Nodes in the cluster."""

    def changed(self, **changes: Any) -> AppState:
        """A copy with some choices changed."""
        return replace(self, **changes)


def state_path() -> Path:
    """Where the state file lives."""
    return paths.state_dir() / STATE_FILE


def load_state(path: Path | None = None) -> AppState:
    """The saved state; defaults for anything missing, unreadable or of the wrong type."""
    path = path or state_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return AppState()
    if not isinstance(data, dict):
        return AppState()
    defaults = AppState()
    kept = {f.name: data[f.name] for f in fields(AppState)
            if f.name in data and type(data[f.name]) is type(getattr(defaults, f.name))}
    return replace(defaults, **kept)


def save_state(state: AppState, path: Path | None = None) -> None:
    """Write the state atomically; a failure to write is noted (`unsaved`), never raised (state is a
    convenience)."""
    path = path or state_path()
    try:
        write_atomic(path, json.dumps(asdict(state), indent=2))
    except OSError as error:
        from sparkadvisor.unsaved import not_saved

        not_saved("your choices (theme, workload, hardware, nodes)", path, error,
                  "the app keeps them until it quits, and the next start opens as this one did")
