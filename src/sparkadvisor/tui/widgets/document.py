"""`Document`: sections of styled text drawn a line at a time, in one or two columns.

Replacing the sections works out the new height from the words alone and repaints; a line is
styled when it is first drawn, so only the lines in view (and the paragraphs above them) are
rendered. The widget keeps its size, so the screen is not laid out again (five `Static.update`
calls cost a full relayout each).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import cast

from rich._wrap import divide_line
from textual.binding import Binding
from textual.content import Content
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.visual import RulesMap, Visual

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
        self._rendered: dict[tuple[object, ...], _Section] = {}
        """Each section from the last render, by its text, styles and width: a section whose text
        did not change (a build's caveats and recipes across a workload toggle, the same text after
        a style update) is not wrapped again, and the lines it has drawn are kept."""
        self._heights: dict[tuple[str, int], int] = {}
        """Lines each paragraph (by its words and width) wrapped to in the last render: most steps of
        the arithmetic read the same after a toggle."""
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
            # `_scroll_update`; if the bar appears or goes, that asks for the layout itself). The same
            # height leaves the bar as it is (tests/tui/test_document.py checks the bar after a show).
            size = Size(self.scrollable_content_region.width, self._columns_now().height)
            if size != self.virtual_size:
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
        heights = self._heights if context == self._rendered_in else {}
        self._rendered, self._heights, self._rendered_in = {}, {}, context
        if self.split_at is not None and width >= self.split_at and self.right:
            left_width = min(self.left_width, width // 2)
            rule = Strip(Content(" │ ").render_segments(self.visual_style))
            return _Columns(width, self._column(self.left, left_width, earlier, heights),
                            self._column(self.right, width - left_width - GAP, earlier, heights), left_width, rule)
        return _Columns(width, self._column(self.stacked or [*self.left, *self.right], width, earlier, heights))

    def _column(self, sections: Sequence[Section], width: int, earlier: dict[tuple[object, ...], _Section],
                heights: dict[tuple[str, int], int]) -> _Column:
        made = []
        for section in sections:
            content = section(width) if callable(section) else section
            key = (content.plain, tuple(content.spans), width)
            rendered = earlier.get(key) or _Section(self, content, width, heights, self._heights)
            self._rendered[key] = rendered
            made.append(rendered)
        return _Column(made)

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
        width, height = self.scrollable_content_region.size
        strip = columns.line(index, height - y - 1) if index < columns.height else Strip.blank(width)
        style = self.rich_style
        return strip.extend_cell_length(width, style).crop(0, width).apply_style(style)


def wrapped_height(plain: str, width: int, rules: RulesMap) -> int:
    """How many lines one paragraph (no newline) wraps to at `width`, as `Content.render_strips` wraps it.

    Textual (8.2) wraps each paragraph with rich's `divide_line` on its words (`Content._wrap_and_format`),
    so with the default rules the height needs only that call: no styles, lines or strips (a quarter of
    the cost of `Content.get_height`). Other rules, or tabs, take Textual's own `get_height`.
    tests/tui/test_document.py checks both against the rendered strips and that Textual still wraps with
    this `divide_line`."""
    if (rules.get("text_wrap", "wrap"), rules.get("text_overflow", "fold"), rules.get("line_pad", 0)) \
            != ("wrap", "fold", 0) or "\t" in plain:
        return Content(plain).get_height(rules, width)
    return len(divide_line(plain, width, fold=True)) + 1


class _Section:
    """One section's text at one width. Its height comes from wrapping the words alone; its lines are
    styled when first drawn, from the top, a few paragraphs at a time (Textual wraps a paragraph on its
    own, so the first paragraphs make the same lines whether or not the rest follow)."""

    def __init__(self, widget: Document, content: Content, width: int, earlier: dict[tuple[str, int], int],
                 heights: dict[tuple[str, int], int]) -> None:
        self.widget, self.content, self.width, self.style = widget, content, width, widget.visual_style
        self.ends: list[int] = []
        """Lines up to the end of each paragraph."""
        self.cuts: list[int] = []
        """Where each paragraph ends in the text."""
        rules, at, lines = cast("RulesMap", widget.styles), 0, 0  # as textual passes them
        for paragraph in content.plain.split("\n"):
            key = (paragraph, width)
            height = earlier.get(key) or heights.get(key) or wrapped_height(paragraph, width, rules)
            heights[key] = height
            lines += height
            at += len(paragraph)
            self.ends.append(lines)
            self.cuts.append(at)
            at += 1
        self.height = lines
        self.strips: list[Strip] = []
        """The lines styled so far: all lines of the first paragraphs."""

    def line(self, index: int, ahead: int = 0) -> Strip:
        """Line `index` (< height); if it is not styled yet, style the paragraphs down to `ahead` lines
        below it too (the rest of the view), or twice as many as before."""
        if index >= len(self.strips):
            styled = bisect_right(self.ends, len(self.strips))
            through = min(max(bisect_right(self.ends, index + ahead) + 1, 2 * styled), len(self.ends))
            text = self.content if through == len(self.ends) else self.content[:self.cuts[through - 1]]
            self.strips = Visual.to_strips(self.widget, text, self.width, None, self.style)
        return self.strips[index]


class _Column:
    """Sections one under another, a blank line between two."""

    def __init__(self, sections: list[_Section]) -> None:
        self.sections = sections
        self.starts: list[int] = []
        at = 0
        for section in sections:
            self.starts.append(at)
            at += section.height + 1
        self.height = max(at - 1, 0)

    def __len__(self) -> int:
        return self.height

    def line(self, index: int, ahead: int = 0) -> Strip:
        """Line `index` (< height); `ahead`: how many lines below it are about to be drawn."""
        number = bisect_right(self.starts, index) - 1
        section, line = self.sections[number], index - self.starts[number]
        return section.line(line, ahead) if line < section.height else Strip.blank(0)


class _Columns:
    """The text rendered at one width: one column, or two whose lines are joined when drawn
    (only the lines in view are joined)."""

    def __init__(self, width: int, left: _Column, right: _Column | None = None, left_width: int = 0,
                 rule: Strip | None = None) -> None:
        self.width, self.left, self.right, self.left_width, self.rule = width, left, right, left_width, rule
        self.height = max(len(left), len(right)) if right is not None else len(left)
        self._joined: dict[int, Strip] = {}

    def line(self, index: int, ahead: int = 0) -> Strip:
        """Line `index` (< height) of the text; `ahead`: how many lines below it are about to be drawn."""
        if self.right is None:
            return self.left.line(index, ahead)
        joined = self._joined.get(index)
        if joined is None:
            left, right = self.left, self.right
            strip = left.line(index, ahead) if index < len(left) else Strip.blank(self.left_width)
            joined = self._joined[index] = Strip.join([strip.extend_cell_length(self.left_width), self.rule,
                                                       right.line(index, ahead) if index < len(right)
                                                       else Strip.blank(0)])
        return joined
