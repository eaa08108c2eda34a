"""Pick one of a few options: the hardware, or the column to sort by."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from sparkadvisor.tui.screens.early_keys import EarlyKeys
from sparkadvisor.tui.widgets.footer import KeyFooter


class ChoiceScreen(EarlyKeys, ModalScreen[str | None]):
    """A titled list; Enter picks, Esc keeps the current choice."""

    CSS_PATH = "choice.tcss"
    FIRST_FIELD = "#choice-list"
    BINDINGS = [("escape", "dismiss(None)", "Cancel")]

    def __init__(self, title: str, options: list[tuple[str, str]], current: str | None = None):
        super().__init__()
        self.keep_early_keys()
        self.title_text = title
        self.options = options
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="choice"):
            yield Label(self.title_text, id="choice-title", markup=False)
            # Content, not a str: an option's str is parsed as markup (a hardware named "Box [/]").
            yield OptionList(*(Option(Content(label), id=key) for key, label in self.options), id="choice-list")
        yield KeyFooter()

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        keys = [key for key, _ in self.options]
        if self.current in keys:
            options.highlighted = keys.index(self.current)
        self.ready()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
