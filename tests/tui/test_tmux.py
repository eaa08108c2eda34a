"""The real app in a real terminal: `sparkadvisor` inside tmux, driven by keys, read from the screen."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).parent / "sparkadvisor"
pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed, so no real terminal to drive"),
    pytest.mark.skipif(not SCRIPT.exists(), reason=f"the sparkadvisor script is not installed at {SCRIPT}"),
]
ROW = re.compile(r"^[│┃]? +(\d+|-) +(\S+(?: \S+)*?)  ")


class Terminal:
    """One tmux server of our own (its own socket), one pane running the app."""

    def __init__(self, home: Path, width: int = 160, height: int = 45):
        self.socket = f"sparkadvisor-test-{os.getpid()}-{width}"
        app = f"env -u COLUMNS -u LINES SPARKADVISOR_HOME={home} TERM=xterm-256color {SCRIPT}"
        command = f"{app}; echo \"sparkadvisor exited with status $?\""
        self.tmux("new-session", "-d", "-x", str(width), "-y", str(height), "-s", "app", command, ";",
                  "set-option", "-w", "-t", "app", "remain-on-exit", "on")

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True,
                              check=True).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "app")

    def press(self, key: str) -> None:
        self.tmux("send-keys", "-t", "app", key)

    def wait_for(self, check: Callable[[str], bool], what: str, timeout_s: float = 60) -> str:
        """The screen once `check` holds and two captures 0.1 s apart agree: a loaded machine can hand
        tmux a frame in pieces, and a capture between them shows the top of the new frame over the old."""
        deadline, previous = time.monotonic() + timeout_s, None
        while time.monotonic() < deadline:
            text = self.screen()
            if check(text) and text == previous:
                return text
            previous = text
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; the screen shows:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def table_rows(screen: str) -> list[tuple[str, str, str]]:
    """(rank, model, row text) for each row of the candidates table, top to bottom."""
    rows = []
    for line in screen.splitlines():
        match = ROW.match(line)
        if match and "model" not in line:
            rows.append((match.group(1), match.group(2), line))
        if line[:1] in ("╰", "┗", "━") and rows:
            break
    return rows


def first_token_s(row: str) -> float:
    """The first duration on a table row is its first-token time ("37 s", "4.3 s", "1 min 13 s")."""
    match = re.search(r"(?:(\d+) min )?(\d+(?:\.\d+)?) s\b", row)
    assert match, f"no duration on the row {row!r}"
    return float(match.group(1) or 0) * 60 + float(match.group(2))


def row_of(rows: list[tuple[str, str, str]], model: str, build: str = "") -> tuple[int, str]:
    found = next(((i, text) for i, (_, name, text) in enumerate(rows) if name == model and build in text), None)
    assert found is not None, f"no {model} {build} row among: {[name for _, name, _ in rows]}"
    return found


@pytest.fixture
def terminal(isolated_home: Path):
    term = Terminal(isolated_home)
    yield term
    term.close()


def test_real_terminal_rank_toggle_one_node_and_quit(terminal: Terminal) -> None:
    screen = terminal.wait_for(lambda s: "GLM-5.3-Flash" in s and "Agentic" in s, "the ranked table")
    assert "2 x DGX Spark: 243.2 GiB in all, 273 GB/s each" in screen and "Agentic (Claude Code)" in screen
    # The catalog holds more builds than a screen: narrow the table to the article's candidates.
    terminal.press("/")
    terminal.wait_for(lambda s: "filter by model" in s, "the filter box")
    typed = ""
    for key in "flash":  # one at a time: keys that reach Textual together can be taken in another order
        terminal.press(key)
        typed += key
        terminal.wait_for(lambda s, t=typed: any(line.strip() == t for line in s.splitlines()), f"{typed!r} typed")
    terminal.press("Enter")
    screen = terminal.wait_for(lambda s: "Qwen3.8-Flash-Next" in s and "filter: flash" in s, "the filtered table")
    agentic = table_rows(screen)
    glm, _ = row_of(agentic, "GLM-5.3-Flash", "RedHatAI")
    qwen, qwen_row = row_of(agentic, "Qwen3.8-Flash-Next")
    assert qwen > glm and agentic[glm][0] == "1"
    assert first_token_s(qwen_row) > 20, "agentic: no prefix cache, the whole context is recomputed each turn"

    terminal.press("w")
    screen = terminal.wait_for(lambda s: "Chat:" in s, "the chat workload label")
    assert "Agentic (Claude Code)" not in screen
    chat = table_rows(screen)
    assert [m for _, m, _ in chat] != [m for _, m, _ in agentic]
    _, qwen_row = row_of(chat, "Qwen3.8-Flash-Next")
    assert first_token_s(qwen_row) < 10, "chat: a short prompt, no minute-long first token"

    terminal.press("1")
    screen = terminal.wait_for(lambda s: "1 x DGX Spark: 121.6 GiB" in s, "the one-node view")
    assert "▶ 1 " in screen, "the detail pane's node sweep marks the one-node row"

    terminal.press("q")
    screen = terminal.wait_for(lambda s: "exited with status" in s or "Pane is dead" in s, "the app to exit")
    assert re.search(r"(exited with status|Pane is dead \(status) 0\b", screen) and "Traceback" not in screen


def test_real_terminal_at_80_by_24_shows_the_decision_and_help(isolated_home: Path) -> None:
    term = Terminal(isolated_home, 80, 24)
    try:
        screen = term.wait_for(lambda s: "GLM-5.3-Flash" in s and "? Help" in s, "the table and the footer")
        lines = screen.splitlines()
        header = next(line for line in lines if " model " in line and " build " in line)
        assert all(label in header for label in ("flags", "fit", "tok/s", "1st token")), header
        _, glm = row_of(table_rows(screen), "GLM-5.3-Flash", "RedHatAI")
        assert "▲" in glm and "fits +11.2 GiB" in glm and re.search(r" \d\d \(\d+-\d+\) ", glm)
        assert first_token_s(glm) < 20
        assert "? Help" in lines[-1] and "q Quit" in lines[-1]
        term.press("q")
        term.wait_for(lambda s: "exited with status 0" in s or "Pane is dead" in s, "the app to exit")
    finally:
        term.close()
