"""Two or three builds side by side (`c`): fit, KV pool, speed, first token cached and cold,
caveats. The same lines as `sparkadvisor compare A B [C]`."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.screen import ModalScreen

from sparkadvisor.core.catalog import CatalogIndex
from sparkadvisor.core.ranking import Ranked
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.table import COMPARE_ROWS, compare_cells
from sparkadvisor.tui.screens.early_keys import EarlyKeys
from sparkadvisor.tui.widgets.candidates import fit_text
from sparkadvisor.tui.widgets.detail import caveats_content
from sparkadvisor.tui.widgets.document import Document
from sparkadvisor.tui.widgets.footer import KeyFooter

LABEL_WIDTH = max(len(label) for _, label in COMPARE_ROWS) + 2


CLIPPED_ROWS = ("reason",)
"""Rows cut to their column rather than wrapped: each build's reason is printed whole below the grid."""


def compare_content(items: Sequence[Ranked], width: int) -> Content:
    """The comparison as lines of label and one cell per build in columns that fit `width`: a long cell (the caveat
    badges, a fit) wraps onto more lines of its row, the why is cut (it follows whole below)."""
    column = max((width - LABEL_WIDTH) // len(items) - 2, 8)
    cells = [compare_cells(item) for item in items]
    lines = []
    for key, label in COMPARE_ROWS:
        style = "bold" if key in ("model", "rank") else ""
        wrapped = [[c[key]] if key in CLIPPED_ROWS else textwrap.wrap(c[key], column, break_on_hyphens=False) or [""]
                   for c in cells]
        for n in range(max(len(w) for w in wrapped)):
            head = label.ljust(LABEL_WIDTH) if n == 0 else " " * LABEL_WIDTH
            lines.append(Content.assemble((head, "bold $primary"), *(
                (fit_text(w[n] if n < len(w) else "", column) + "  ", style) for w in wrapped)))
    return Content("\n").join(lines)


class CompareScreen(EarlyKeys, ModalScreen[None]):
    """Builds side by side, then each one's caveats with their sources."""

    CSS_PATH = "compare.tcss"
    FIRST_FIELD = "#compare-document"
    BINDINGS = [Binding("escape,q,c", "dismiss", "Close", id="compare.close", tooltip="Back to the table")]

    def __init__(self, items: Sequence[Ranked], index: CatalogIndex):
        super().__init__()
        self.keep_early_keys()
        self.items = list(items)
        self.index = index

    def compose(self) -> ComposeResult:
        document = Document(id="compare-document")
        document.border_title = Content(safe_text("Compare: " + " · ".join(i.plan.build.id for i in self.items)))
        yield document
        yield KeyFooter()

    def on_mount(self) -> None:
        document = self.query_one(Document)
        # The why cell is clipped to its column: each reason whole below it, as the CLI prints them.
        why = Content("\n").join(Content.assemble((f"why {i.plan.build.id}: ", "bold"), safe_text(i.reason))
                                 for i in self.items)
        words = [Content.assemble((safe_text(f"{i.plan.model.name} · {i.plan.build.repo}: "), "bold")) +
                 caveats_content(i, self.index) for i in self.items]
        document.show([lambda width: compare_content(self.items, width), why, *words])
        self.ready()
