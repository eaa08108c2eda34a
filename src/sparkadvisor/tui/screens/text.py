"""A long text in a modal, selectable and copyable: the plan of a build, or a long error."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, TextArea

from sparkadvisor.core.explain import explain
from sparkadvisor.core.ranking import Ranked
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.table import header
from sparkadvisor.tui.model import Ranking
from sparkadvisor.tui.screens.early_keys import EarlyKeys
from sparkadvisor.tui.widgets.footer import KeyFooter


def plan_text(item: Ranked, ranking: Ranking) -> str:
    """The plan as plain text: the same steps as `sparkadvisor show`."""
    plan = item.plan
    place = f"rank {item.rank}" if item.rank else "excluded"
    lines = [f"{plan.model.name} · {plan.build.repo} · {place}: {item.reason}",
             header(ranking.cluster, ranking.scenario.workload), ""]
    lines += [f"{step.title} [{step.basis}] {step.text}" for step in explain(plan)]
    return "\n".join(safe_text(line) for line in lines)


class TextScreen(EarlyKeys, ModalScreen[None]):
    """Read-only text with a title; Esc closes."""

    CSS_PATH = "text.tcss"
    FIRST_FIELD = "#text-body"
    BINDINGS = [("escape", "dismiss", "Close"), ("q", "dismiss", "Close")]

    def __init__(self, title: str, text: str):
        super().__init__()
        self.keep_early_keys()
        self.title_text = title
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical(id="text-box"):
            yield Label(safe_text(f"{self.title_text}  (Esc closes; select text to copy)"), id="text-title",
                        markup=False)
            yield TextArea(self.text, read_only=True, soft_wrap=True, id="text-body")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.ready()
