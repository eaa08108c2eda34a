"""A checkbox whose state reads without colour: X when ticked, blank when not."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Checkbox


class TickBox(Checkbox):
    """Textual's Checkbox draws its X in both states and tells them apart by colour alone, so without
    colour (NO_COLOR, a monochrome terminal) an unticked "overwrite" looks ticked."""

    @property
    def _button(self) -> Content:
        self.BUTTON_INNER = "X" if self.value else " "
        return super()._button
