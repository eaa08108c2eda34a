"""What the app meant to keep and could not write, said once in one sentence each.

The catalog cache, the app's remembered choices and the hub metadata kept for offline imports
are conveniences: failing to write one never stops a command. But a person whose home folder
is read-only (or full) should learn what was not saved, where, and what that costs. The writer
notes it here; the CLI prints the notes on stderr when the command ends, the TUI shows them
as notifications.
"""

from __future__ import annotations

from pathlib import Path

_said: set[tuple[str, str]] = set()
_pending: list[str] = []


def not_saved(what: str, where: Path, error: OSError, cost: str) -> None:
    """Note that `what` could not be written to `where` (a file or its folder) and what that
    costs; each `what` in each place is said once per process."""
    key = (what, str(where))
    if key in _said:
        return
    _said.add(key)
    _pending.append(f"could not save {what} in {where} ({_reason(error)}); {cost}; SPARKADVISOR_HOME=DIR puts "
                    "what the app keeps in a folder it can write")


def _reason(error: OSError) -> str:
    """The cause in a person's words: "read-only file system", "a file stands where a folder should be"."""
    import errno

    if error.errno in (errno.EEXIST, errno.ENOTDIR):
        blocker = _file_in_the_way(Path(error.filename)) if isinstance(error.filename, str) else None
        return "a file stands where a folder should be" + (f": {blocker}" if blocker else "")
    return (error.strerror or type(error).__name__).lower()


def _file_in_the_way(path: Path) -> Path | None:
    """The nearest of `path` and its parents that exists and is not a folder."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def take() -> list[str]:
    """The sentences not shown yet, oldest first; each is handed out once."""
    notes = list(_pending)
    _pending.clear()
    return notes
