"""Help: the keys, what each basis means, and where sparkadvisor keeps its files."""

from __future__ import annotations

import textwrap

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from sparkadvisor import paths
from sparkadvisor.core.table import ABOVE_RANGE, BELOW_RANGE, SEVERITY_GLYPHS, SEVERITY_MEANING
from sparkadvisor.state import state_path
from sparkadvisor.tui.commands import COMMANDS
from sparkadvisor.tui.screens.early_keys import EarlyKeys
from sparkadvisor.tui.widgets.detail import BASIS_STYLE, SEVERITY_STYLE
from sparkadvisor.tui.widgets.footer import KeyFooter

BASIS_MEANING = {
    "stated": "printed by a source (model card, README, spec sheet)",
    "derived": "arithmetic on stated figures",
    "measured": "someone ran it and measured it",
    "estimated": "the speed model's estimate, calibrated on measured recipes",
    "assumed": "this project's assumption; the assumptions dialog (key a) edits it",
    "unknown": "no source gives it",
}


MOVES = (
    ("↑ ↓ j k", "Move", "One row up or down."),
    ("PgUp PgDn", "Page", "A screenful up or down."),
    ("Home End g G", "Ends", "The first or the last row."),
    ("← →", "Fold / scroll", "Grouped by model: fold or unfold a model's builds; in the wide view: scroll sideways."),
    ("Tab", "Pane", "Move between the table and the detail pane (the focused one has a heavy border)."),
    ("Esc", "Back", "Close a dialog or the full-screen build; clear the filter."),
    ("ctrl+p", "Palette", "Every command as \"category: Action\"."),
)


BUILD_KEYS = (
    ("r", "Recipe", "In a build's full-screen view (Enter), where it has several recipes on this cluster (or only "
                    "benchmark runs, beside its engine's defaults): follow the next; the table re-ranks with it and "
                    "the header names it."),
)
"""Keys of the full-screen build beside export and help."""


KEY_CELLS, NAME_CELLS = 14, 14
"""The key and name columns of the help's rows; the text wraps under itself after them."""
Row = tuple[str, str, str, str]
"""(key, its style, name, text)."""


def _key_line(key: str, name: str, text: str) -> Row:
    return key, "bold $accent", name, text


def keys_content() -> list[Row]:
    """One row per key: the commands, the full-screen build's own, then moving around."""
    lines = [_key_line(c.key_display or c.key, c.footer, c.tooltip) for c in COMMANDS if c.in_help]
    lines += [_key_line(*key) for key in BUILD_KEYS]
    lines += [_key_line(*move) for move in MOVES]
    return lines


def marks_content() -> list[Row]:
    """The legend of the table's glyphs and marks."""
    lines = [(glyph, SEVERITY_STYLE[severity], severity, SEVERITY_MEANING[severity])
             for severity, glyph in SEVERITY_GLYPHS.items()]
    lines += [_key_line(mark, name, text) for mark, name, text in (
        ("▲• SWAP", "flags", "each severity present once, then the most severe caveat's badge "
                             "(the detail pane lists them all with their sources)"),
        ("fits +X GiB", "fit", "fits, with X GiB per node left after the weights for the KV cache and vLLM's runtime "
                                 "(show's fit line splits it)"),
        ("by recipe", "fit", "does not fit by the arithmetic, but a community recipe runs it (e.g. streaming a table)"),
        ("needs N nodes", "fit", "does not fit this cluster; N nodes would hold it"),
        ("679k*", "KV pool", "measured by a recipe rather than computed"),
        (f"57.54{ABOVE_RANGE} 20{BELOW_RANGE}", "measured", "measured outside the low-high range predicted at its "
                                                          "own context and streams; trust the measurement"),
        ("46 (30-69)", "tok/s", "expected decode speed and its low-high range"),
        ("≤98  ≥18 s", "speed, times", "a bound: the speed leaves out a per-token table of unpublished size (PLE, "
                                       "Engram), or a caveat reports the engine slow (then the first token and the "
                                       "turn are too), so a target it seems to meet is unknown"),
        ("●", "mark", "marked for compare (space marks, c compares)"),
        ("▸ ▾ +N", "group", "a model with N more builds, folded or unfolded (m groups by model)"),
        ("dimmed row", "-", "does not fit, or a caveat rules it out for this workload; the reason is in the pane"),
    )]
    return lines


class Legend(Static):
    """Rows of key, name and text in three columns; a long text wraps under itself (a hanging indent),
    re-wrapped when the dialog's width changes."""

    def __init__(self, rows: list[Row], key_cells: int = KEY_CELLS, name_cells: int = NAME_CELLS) -> None:
        self.rows = rows
        self.key_cells, self.name_cells = key_cells, name_cells
        super().__init__(self._content(None))

    def _content(self, width: int | None) -> Content:
        indent = self.key_cells + self.name_cells
        room = max(width - indent, 24) if width else None
        lines = []
        for key, style, name, text in self.rows:
            parts = textwrap.wrap(text, room) if room else [text]
            name_cell = (name.ljust(self.name_cells - 1) + " ", "bold") if self.name_cells else ""
            lines.append(Content.assemble((key.ljust(self.key_cells - 1) + " ", style), name_cell,
                                          parts[0] if parts else ""))
            lines += [Content(" " * indent + part) for part in parts[1:]]
        return Content("\n").join(lines)

    def on_resize(self) -> None:
        self.update(self._content(self.content_size.width))


def basis_legend() -> Legend:
    """The legend of the [basis] marks in the detail pane; a long meaning wraps under itself."""
    return Legend([(f"[{name}]", BASIS_STYLE[name], "", meaning) for name, meaning in BASIS_MEANING.items()],
                  key_cells=12, name_cells=0)


def files_content() -> Content:
    """Where the user's files live."""
    return Content("\n").join([
        Content(f"your themes (*.toml): {paths.config_dir() / 'themes'}"),
        Content(f"your catalog:         {paths.user_catalog_path()}"),
        Content(f"remembered choices:   {state_path()}"),
    ])


class HelpScreen(EarlyKeys, ModalScreen[None]):
    """Keys, legend and file locations; Esc, q or ? closes."""

    CSS_PATH = "help.tcss"
    FIRST_FIELD = "#help"
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close", id="help.close", tooltip="Back")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static("sparkadvisor: keys", classes="help-heading")
            yield Legend(keys_content())
            yield Static("What the table shows", classes="help-heading")
            yield Legend(marks_content())
            yield Static("How each figure is known", classes="help-heading")
            yield basis_legend()
            yield Static("Files", classes="help-heading")
            yield Static(files_content())
        yield KeyFooter()

    def __init__(self) -> None:
        super().__init__()
        self.keep_early_keys()

    def on_mount(self) -> None:
        self.ready()
