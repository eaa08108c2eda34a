"""The terminal app: themes, remembered choices, and the main screen.

`run(catalog_paths)` is what `sparkadvisor` with no command calls. A catalog that cannot
be read raises `CatalogError` before the screen opens, so the CLI prints it as one message.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from textual import events
from textual.app import App
from textual.binding import Binding

from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.units import plural
from sparkadvisor.core.workload import WORKLOADS
from sparkadvisor.state import AppState, load_state, save_state
from sparkadvisor.tui.model import Scenario
from sparkadvisor.tui.screens.early_keys import buffered
from sparkadvisor.tui.screens.main import MainScreen
from sparkadvisor.tui.themes import DEFAULT_THEME, ThemeLoad, load_themes


def scenario_from(state: AppState, index: CatalogIndex) -> Scenario:
    """The remembered scenario, corrected to what this catalog has."""
    hardware_id = state.hardware if state.hardware in index.hardware else next(iter(index.hardware))
    nodes = min(max(state.nodes, 1), index.hardware[hardware_id].max_nodes)
    return Scenario(hardware_id, nodes, WORKLOADS.get(state.workload, WORKLOADS["agentic"]))


class SparkAdvisorApp(App[int]):
    """sparkadvisor's terminal app."""

    TITLE = "sparkadvisor"
    CSS_PATH = str(Path(__file__).parent / "screens" / "main.tcss")
    """The main screen's stylesheet, read by the app because the main screen is the default screen."""
    BINDINGS = [
        Binding("tab", "focus_next", "Next field", show=False, priority=True, id="app.focus_next",
                tooltip="Focus the next field or pane"),
        Binding("shift+tab", "focus_previous", "Previous field", show=False, priority=True, id="app.focus_previous",
                tooltip="Focus the previous field or pane")]
    """Textual's own focus keys, as priority bindings: a priority binding acts when its key is read, while
    a plain one acts only after the focused field has passed the key up, by which time the keys typed
    behind it (a burst: Tab, 5, 0, %) have gone to the old field."""

    def __init__(self, index: CatalogIndex, catalog_paths: list[Path], state: AppState | None = None,
                 themes: ThemeLoad | None = None, remember_choices: bool = True):
        super().__init__()
        self.index = index
        self.catalog_paths = catalog_paths
        self.state = state or AppState()
        self.remember_choices = remember_choices
        self.themes = themes or load_themes()
        for theme in self.themes.themes:
            self.register_theme(theme)
        self._theme_missing = self._choose_theme(self.state.theme)

    @property
    def theme_names(self) -> list[str]:
        """The TOML themes, in cycling order."""
        return [theme.name for theme in self.themes.themes]

    def _choose_theme(self, name: str) -> str | None:
        """Use `name`, else the default; the name that was missing, if any."""
        if name in self.available_themes:
            self.theme = name
            return None
        self.theme = DEFAULT_THEME if DEFAULT_THEME in self.available_themes else "textual-dark"
        return name

    async def on_event(self, event: events.Event) -> None:
        if self.screen_stack and buffered(self.screen_stack[-1], event):
            return
        await super().on_event(event)

    def get_default_screen(self) -> MainScreen:
        return MainScreen(self.index, scenario_from(self.state, self.index), self.catalog_paths)

    def on_mount(self) -> None:
        if self.themes.problems:
            count = len(self.themes.problems)
            self.notify(safe_text("\n".join(self.themes.problems), keep_newlines=True),
                        title=f"{plural(count, 'theme file')} skipped", severity="warning", timeout=12, markup=False)
        if self._theme_missing:
            self.notify(safe_text(f"Theme {self._theme_missing!r} is not available; using {self.theme!r}."),
                        severity="warning", markup=False)
        if self.state.hardware not in self.index.hardware:
            shown = self.index.hardware[scenario_from(self.state, self.index).hardware_id].name
            self.notify(safe_text(f"Hardware {self.state.hardware!r}, remembered from the last session, is not in "
                                  f"this catalog (was it added with --catalog?); showing {shown}."),
                        severity="warning", markup=False)
        self._say_unsaved()

    def _say_unsaved(self) -> None:
        """What could not be saved (a read-only home: the catalog cache, the remembered choices), once each."""
        from sparkadvisor.unsaved import take

        for note in take():
            self.notify(safe_text(note[:1].upper() + note[1:]), title="Not saved", severity="warning", timeout=12,
                        markup=False)

    def watch_theme(self, theme: str) -> None:
        self.remember(theme=theme)

    def use_theme(self, name: str) -> None:
        """Switch to a registered theme."""
        if name in self.available_themes:
            self.theme = name

    def cycle_theme(self) -> None:
        """The next TOML theme after the current one."""
        names = self.theme_names or [self.theme]
        position = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(position + 1) % len(names)]

    def remember(self, **changes: Any) -> None:
        """Change and save the remembered choices."""
        state = self.state.changed(**changes)
        if state == self.state:
            return
        self.state = state
        if self.remember_choices:
            save_state(self.state)
            self._say_unsaved()


def run(catalog_paths: list[Path]) -> int:
    """Open the app on the bundled catalog, the user's imports and `catalog_paths`."""
    from sparkadvisor.catalogs import load_index

    index = load_index(catalog_paths)
    if not index.hardware:
        print("sparkadvisor: the catalog defines no hardware; add a [[hardware]] table.", file=sys.stderr)
        return 1
    # Textual reads keys from stdin and draws on stderr: without a terminal there (cron, a script,
    # `> out.txt 2>&1`, ssh without -t) it would draw into a file and wait for keys forever.
    if not all(stream is not None and stream.isatty() for stream in (sys.stdin, sys.stderr)):
        print("sparkadvisor: the app needs a terminal, and stdin or stderr is not one; for text, run "
              "`sparkadvisor rank` (every command: `sparkadvisor --help`)", file=sys.stderr)
        return 2
    app = SparkAdvisorApp(index, list(catalog_paths), load_state())
    app.run()
    return app.return_code or 0
