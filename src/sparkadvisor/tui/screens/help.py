"""Help: the keys, what each basis means, and where sparkadvisor keeps its files."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from sparkadvisor import paths
from sparkadvisor.state import state_path
from sparkadvisor.tui.commands import COMMANDS
from sparkadvisor.tui.widgets.detail import BASIS_STYLE

BASIS_MEANING = {
    "stated": "printed by a source (model card, README, spec sheet)",
    "derived": "arithmetic on stated figures",
    "measured": "someone ran it and measured it",
    "estimated": "the speed model's estimate, calibrated on measured recipes",
    "assumed": "this project's assumption; editable with a",
    "unknown": "no source gives it",
}


def keys_content() -> Content:
    """One line per key."""
    lines = [Content.assemble(((c.key_display or c.key).ljust(7), "bold $accent"), (c.footer.ljust(12), "bold"),
                              c.tooltip) for c in COMMANDS if c.show]
    lines.append(Content.assemble(("ctrl+p".ljust(7), "bold $accent"), ("Palette".ljust(12), "bold"),
                                  "Every command as \"category: Action\"."))
    return Content("\n").join(lines)


def basis_content() -> Content:
    """The legend of the [basis] marks in the detail pane."""
    return Content("\n").join(Content.assemble((f"[{name}]".ljust(12), BASIS_STYLE[name]), meaning)
                              for name, meaning in BASIS_MEANING.items())


def files_content() -> Content:
    """Where the user's files live."""
    return Content("\n").join([
        Content(f"your themes (*.toml): {paths.config_dir() / 'themes'}"),
        Content(f"your catalog:         {paths.user_catalog_path()}"),
        Content(f"remembered choices:   {state_path()}"),
    ])


class HelpScreen(ModalScreen[None]):
    """Keys, legend and file locations; Esc, q or ? closes."""

    CSS_PATH = "help.tcss"
    BINDINGS = [("escape,q,question_mark", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static("sparkadvisor: keys", classes="help-heading")
            yield Static(keys_content())
            yield Static("How each figure is known", classes="help-heading")
            yield Static(basis_content())
            yield Static("Files", classes="help-heading")
            yield Static(files_content())
