"""`Document`: sections of styled text drawn a line at a time, in one or two columns.

Replacing the sections re-renders the text at the widget's width and repaints; the widget
keeps its size, so the screen is not laid out again (five `Static.update` calls cost a
full relayout each).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textual.binding import Binding
from textual.content import Content
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.visual import Visual

Section = Content | Callable[[int], Content]
"""A text, or a function of the width that makes it (a bar drawn to fit)."""
GAP = 3
"""Cells between the two columns: space, rule, space."""


class Document(ScrollView, can_focus=True):
    """Read-only text; with `split_at`, two columns side by side once the widget is that wide."""

    BINDINGS = [
        Binding("up,k", "scroll_up", "Up", show=False),
        Binding("down,j", "scroll_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown,space", "page_down", "Page down", show=False),
        Binding("home,g", "scroll_home", "Top", show=False),
        Binding("end,G", "scroll_end", "Bottom", show=False),
    ]
    DEFAULT_CSS = """
    Document { scrollbar-size-vertical: 1; padding: 0 1; }
    """

    def __init__(self, split_at: int | None = None, left_width: int = 72, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.split_at = split_at
        self.left_width = left_width
        self.left: Sequence[Section] = ()
        self.right: Sequence[Section] = ()
        self.stacked: Sequence[Section] | None = None
        self._lines: tuple[int, list[Strip]] | None = None

    def show(self, left: Sequence[Section], right: Sequence[Section] = (), stacked: Sequence[Section] | None = None,
             keep_scroll: bool = False) -> None:
        """Replace the text (`stacked`: the order in one column, if not left then right);
        back to the top unless `keep_scroll`."""
        self.left, self.right, self.stacked = left, right, stacked
        self._lines = None
        self._update_virtual_size()
        if not keep_scroll:
            self.scroll_to(y=0, animate=False, immediate=True)
        self.refresh()

    @property
    def text(self) -> str:
        """The text as plain lines (for tests and copying)."""
        return "\n".join(strip.text.rstrip() for strip in self.lines())

    def lines(self) -> list[Strip]:
        """The text rendered at the current width."""
        width = max(self.scrollable_content_region.width, 20)
        if self._lines is None or self._lines[0] != width:
            self._lines = (width, self._render_lines(width))
        return self._lines[1]

    def _render_lines(self, width: int) -> list[Strip]:
        if self.split_at is not None and width >= self.split_at and self.right:
            left_width = min(self.left_width, width // 2)
            left = self._strips(self.left, left_width)
            right = self._strips(self.right, width - left_width - GAP)
            rule = Strip(Content(" │ ").render_segments(self.visual_style))
            blank = Strip.blank(left_width)
            return [Strip.join([(left[i] if i < len(left) else blank).extend_cell_length(left_width), rule,
                                right[i] if i < len(right) else Strip.blank(0)])
                    for i in range(max(len(left), len(right)))]
        return self._strips(self.stacked or [*self.left, *self.right], width)

    def _strips(self, sections: Sequence[Section], width: int) -> list[Strip]:
        strips: list[Strip] = []
        for section in sections:
            content = section(width) if callable(section) else section
            if strips:
                strips.append(Strip.blank(0))
            strips += Visual.to_strips(self, content, width, None, self.visual_style)
        return strips

    def _update_virtual_size(self) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, len(self.lines()))

    def on_resize(self) -> None:
        self._lines = None
        self._update_virtual_size()

    def notify_style_update(self) -> None:
        self._lines = None
        super().notify_style_update()

    def render_line(self, y: int) -> Strip:
        lines = self.lines()
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        strip = lines[index] if index < len(lines) else Strip.blank(width)
        return strip.extend_cell_length(width, self.rich_style).crop(0, width).apply_style(self.rich_style)
