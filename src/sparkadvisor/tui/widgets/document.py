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
    Document { scrollbar-size-vertical: 1; scrollbar-gutter: stable; overflow-x: hidden; padding: 0 1; }
    """

    def __init__(self, split_at: int | None = None, left_width: int = 72, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.split_at = split_at
        self.left_width = left_width
        self.left: Sequence[Section] = ()
        self.right: Sequence[Section] = ()
        self.stacked: Sequence[Section] | None = None
        self._columns: _Columns | None = None
        self._rendered: dict[tuple[object, ...], list[Strip]] = {}
        """Each section's strips from the last render, by its text, styles and width: a section
        whose text did not change (a build's caveats and recipes across a workload toggle, the
        same text after a style update) is not wrapped again."""
        self._rendered_in: tuple[object, ...] | None = None
        """The widget's style and theme those strips were rendered in."""

    def show(self, left: Sequence[Section], right: Sequence[Section] = (), stacked: Sequence[Section] | None = None,
             keep_scroll: bool = False) -> None:
        """Replace the text (`stacked`: the order in one column, if not left then right);
        back to the top unless `keep_scroll`."""
        self.left, self.right, self.stacked = left, right, stacked
        self._columns = None
        if self.scrollable_content_region.width:  # before the first layout, `on_resize` renders it
            # The new height without a layout of the screen (which would cost it a second frame for the
            # scroll bars' repaint): only the scroll bar changes, and it is updated here (textual 8.2's
            # `_scroll_update`; if the bar appears or goes, that asks for the layout itself).
            size = Size(self.scrollable_content_region.width, self._columns_now().height)
            self.set_reactive(Document.virtual_size, size)
            self._scroll_update(size)
        if not keep_scroll:
            self.scroll_to(y=0, animate=False, immediate=True)
        self.refresh()

    @property
    def text(self) -> str:
        """The text as plain lines (for tests and copying)."""
        return "\n".join(strip.text.rstrip() for strip in self.lines())

    def lines(self) -> list[Strip]:
        """The text rendered at the current width."""
        columns = self._columns_now()
        return [columns.line(i) for i in range(columns.height)]

    def _columns_now(self) -> _Columns:
        width = max(self.scrollable_content_region.width, 20)
        if self._columns is None or self._columns.width != width:
            self._columns = self._render_columns(width)
        return self._columns

    def _render_columns(self, width: int) -> _Columns:
        context = (self.visual_style, self.app.theme, self.styles.text_wrap, self.styles.text_overflow,
                   self.styles.text_align)
        earlier = self._rendered if context == self._rendered_in and self.text_selection is None else {}
        self._rendered, self._rendered_in = {}, context
        if self.split_at is not None and width >= self.split_at and self.right:
            left_width = min(self.left_width, width // 2)
            rule = Strip(Content(" │ ").render_segments(self.visual_style))
            return _Columns(width, self._strips(self.left, left_width, earlier),
                            self._strips(self.right, width - left_width - GAP, earlier), left_width, rule)
        return _Columns(width, self._strips(self.stacked or [*self.left, *self.right], width, earlier))

    def _strips(self, sections: Sequence[Section], width: int,
                earlier: dict[tuple[object, ...], list[Strip]]) -> list[Strip]:
        strips: list[Strip] = []
        for section in sections:
            content = section(width) if callable(section) else section
            key = (content.plain, tuple(content.spans), width)
            rendered = earlier.get(key)
            if rendered is None:
                rendered = Visual.to_strips(self, content, width, None, self.visual_style)
            self._rendered[key] = rendered
            if strips:
                strips.append(Strip.blank(0))
            strips += rendered
        return strips

    def _update_virtual_size(self) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, self._columns_now().height)

    def on_resize(self) -> None:
        self._columns = None
        self._update_virtual_size()

    def notify_style_update(self) -> None:
        self._columns = None
        super().notify_style_update()

    def render_line(self, y: int) -> Strip:
        columns = self._columns_now()
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        strip = columns.line(index) if index < columns.height else Strip.blank(width)
        return strip.extend_cell_length(width, self.rich_style).crop(0, width).apply_style(self.rich_style)


class _Columns:
    """The text rendered at one width: one column, or two whose lines are joined when drawn
    (only the lines in view are joined)."""

    def __init__(self, width: int, left: list[Strip], right: list[Strip] | None = None, left_width: int = 0,
                 rule: Strip | None = None) -> None:
        self.width, self.left, self.right, self.left_width, self.rule = width, left, right, left_width, rule
        self.height = max(len(left), len(right)) if right is not None else len(left)
        self._joined: dict[int, Strip] = {}

    def line(self, index: int) -> Strip:
        """Line `index` (< height) of the text."""
        if self.right is None:
            return self.left[index]
        joined = self._joined.get(index)
        if joined is None:
            left, right = self.left, self.right
            strip = left[index] if index < len(left) else Strip.blank(self.left_width)
            joined = self._joined[index] = Strip.join([strip.extend_cell_length(self.left_width), self.rule,
                                                       right[index] if index < len(right) else Strip.blank(0)])
        return joined
