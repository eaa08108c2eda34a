"""The ranked candidates table, drawn a line at a time: only the rows on screen are rendered.

The table holds no widgets per row. It keeps the core's ranking, the rows to show (build
ids from `tui.rows`) and a cursor; each visible line is drawn from the ranking's cells
when the screen paints it. A re-rank, a sort or a filter swaps the row list and repaints
the visible lines, so 5,000 builds cost what 48 do. Columns come from `tui.layout`:
the ones that fit the width, whole, with rank, model and build fixed on horizontal scroll.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from sparkadvisor.core.table import ABOVE_RANGE, BELOW_RANGE, SEVERITY_GLYPHS
from sparkadvisor.tui.layout import FIXED, GAP, GUTTER, LABELS, NUMERIC, Layout, natural_widths, place
from sparkadvisor.tui.model import RANK_COLUMN, Ranking
from sparkadvisor.tui.rows import Row, table_rows

GLYPH_SEVERITY = {glyph: severity for severity, glyph in SEVERITY_GLYPHS.items()}
MAX_MARKS = 3


def column_edges(layout: Layout) -> list[int]:
    """Where each scrolled column starts, from the left of the scrolled part, and where the last ends."""
    edges = [0]
    for placed in layout.scrolled:
        edges.append(edges[-1] + placed.width + GAP)
    return edges


def fit_text(text: str, width: int, right: bool = False) -> str:
    """`text` in exactly `width` terminal cells: padded, or cut with an ellipsis (a CJK character takes two)."""
    if not text.isascii():
        cells = cell_len(text)
        if cells > width:
            return set_cell_size(text, width - 1) + "…" if width else ""
        pad = " " * (width - cells)
        return pad + text if right else text + pad
    if len(text) > width:
        return text[: max(width - 1, 0)] + "…" if width else ""
    return text.rjust(width) if right else text.ljust(width)


def flags_text(text: str, width: int) -> str:
    """The flags cell in `width` cells: glyphs and badge, or the glyphs alone when the badge would be cut."""
    if len(text) <= width:
        return text.ljust(width)
    return text.split(" ", 1)[0][:width].ljust(width)


class CandidatesTable(ScrollView, can_focus=True):
    """Every build for the scenario, best first; builds that do not fit or are ruled out dimmed below."""

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False),
        Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False),
        Binding("home,g", "first", "First", show=False),
        Binding("end,G", "last", "Last", show=False),
        Binding("left", "left", "Collapse or scroll left", show=False),
        Binding("right", "right", "Expand or scroll right", show=False),
        Binding("enter", "open", "Open", tooltip="The highlighted build full-screen"),
        Binding("space", "mark", "Mark", tooltip="Mark up to three builds to compare (c)"),
    ]
    COMPONENT_CLASSES = {
        "candidates--header", "candidates--sorted", "candidates--cursor", "candidates--cursor-blurred",
        "candidates--odd", "candidates--excluded", "candidates--critical", "candidates--warning",
        "candidates--info", "candidates--outside", "candidates--mark", "candidates--group",
    }
    DEFAULT_CSS = """
    CandidatesTable { scrollbar-size-vertical: 1; scrollbar-size-horizontal: 1; }
    CandidatesTable > .candidates--header { text-style: bold; color: $primary; background: $panel; }
    CandidatesTable > .candidates--sorted { text-style: bold underline; color: $accent; background: $panel; }
    CandidatesTable > .candidates--cursor { background: $block-cursor-background; color: $block-cursor-foreground;
                                            text-style: bold; }
    CandidatesTable > .candidates--cursor-blurred { background: $block-cursor-blurred-background;
                                                    text-style: bold; }
    CandidatesTable > .candidates--odd { background: $foreground 4%; }
    CandidatesTable > .candidates--excluded { color: $foreground-muted; }
    CandidatesTable > .candidates--critical { color: $error; text-style: bold; }
    CandidatesTable > .candidates--warning { color: $warning; text-style: bold; }
    CandidatesTable > .candidates--info { color: $secondary; }
    CandidatesTable > .candidates--outside { color: $warning; text-style: bold; }
    CandidatesTable > .candidates--mark { color: $accent; text-style: bold; }
    CandidatesTable > .candidates--group { color: $accent; }
    """

    class Highlighted(Message):
        """The cursor is on another build (None: the table is empty)."""

        def __init__(self, build_id: str | None) -> None:
            self.build_id = build_id
            super().__init__()

    class Opened(Message):
        """Enter (or a double click) on a build."""

        def __init__(self, build_id: str) -> None:
            self.build_id = build_id
            super().__init__()

    class HeaderClicked(Message):
        """A click on a column's label."""

        def __init__(self, column: str) -> None:
            self.column = column
            super().__init__()

    def __init__(self, ranking: Ranking, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.ranking = ranking
        self.order: list[str] = [r.plan.build.id for r in ranking.ranked]
        self._made_rows: dict[str, Row] = {}
        self.rows: list[Row] = table_rows(self.order, ranking.model_of, made=self._made_rows)
        self.cursor = 0
        self.grouped = False
        self.expanded: set[str] = set()
        self.marked: list[str] = []
        self.wide = False
        self.sort_column, self.sort_reverse = RANK_COLUMN, False
        self._natural = natural_widths(ranking.widest)
        self._layout: tuple[tuple[object, ...], Layout] | None = None
        self._styles: dict[str, Style] = {}
        self._announced: str | None = None

    # --- what is shown --------------------------------------------------------------

    @property
    def highlighted_build(self) -> str | None:
        """The build id under the cursor."""
        return self.rows[self.cursor].build_id if self.rows else None

    @property
    def row_count(self) -> int:
        return len(self.rows)

    @property
    def shown(self) -> list[str]:
        """Build ids on rows, top to bottom."""
        return [row.build_id for row in self.rows]

    def show(self, ranking: Ranking, order: Sequence[str], keep: str | None = None, top: bool = False) -> None:
        """Show `order` (build ids) from `ranking`; the cursor stays on `keep`, or goes to the top."""
        if ranking is not self.ranking:
            self.ranking = ranking
            self._natural = natural_widths(ranking.widest)
        self.order = list(order)
        self._rebuild(keep, top)

    def _rebuild(self, keep: str | None, top: bool = False) -> None:
        self.rows = table_rows(self.order, self.ranking.model_of, self.grouped, self.expanded, self._made_rows)
        self._layout = None
        self._update_virtual_size()
        where = 0 if top else self._row_of(keep)
        self.move_to(where if where is not None else min(self.cursor, max(len(self.rows) - 1, 0)), top=top)
        self.refresh()

    def _row_of(self, build_id: str | None) -> int | None:
        if build_id is None:
            return None
        for i, row in enumerate(self.rows):
            if row.build_id == build_id:
                return i
        if self.grouped:  # a build folded into its model's row
            model = self.ranking.model_of.get(build_id)
            return next((i for i, r in enumerate(self.rows) if self.ranking.model_of[r.build_id] == model), None)
        return None

    def set_grouped(self, grouped: bool) -> None:
        """One row per model (its best build), or every build."""
        keep = self.highlighted_build
        self.grouped = grouped
        self.expanded.clear()
        self._rebuild(keep)

    def set_wide(self, wide: bool) -> None:
        """Every column at its natural width with sideways scrolling, or the columns that fit."""
        self.wide = wide
        self._layout = None
        self._update_virtual_size()
        if not wide:
            self.scroll_to(x=0, animate=False)
        self.refresh()

    def set_sort(self, column: str, reverse: bool) -> None:
        """Mark the sorted column (its label is underlined, and it is kept on screen)."""
        self.sort_column, self.sort_reverse = column, reverse
        self._layout = None

    # --- layout ---------------------------------------------------------------------

    @property
    def layout_now(self) -> Layout:
        """The columns for the current width."""
        width = self.scrollable_content_region.width or self.size.width
        key = (width, self.wide, self.sort_column, id(self._natural))
        if self._layout is None or self._layout[0] != key:
            self._layout = (key, place(self._natural, width, self.sort_column, self.wide))
        return self._layout[1]

    def _update_virtual_size(self) -> None:
        layout = self.layout_now
        width = 0
        if self.wide:
            view = max((self.scrollable_content_region.width or self.size.width) - layout.fixed_width, 0)
            edges = column_edges(layout)
            # Room to scroll until the last column starts at the left edge of the scrolled part.
            width = layout.fixed_width + (edges[-1] if edges[-1] <= view else edges[-2] + view)
        self.virtual_size = Size(width, len(self.rows) + 1)

    def _window(self, layout: Layout, view: int) -> tuple[int, int]:
        """The scrolled part's cells on screen: whole columns from the one the scroll offset is in."""
        edges = column_edges(layout)
        start = max((e for e in edges[:-1] if e <= self.scroll_offset.x), default=0)
        end = max((e for e in edges if start <= e <= start + view), default=start)
        return start, (end if end > start else start + view)  # a column wider than the view: what fits

    def on_resize(self) -> None:
        self._layout = None
        self._update_virtual_size()
        self.scroll_to_cursor()

    def notify_style_update(self) -> None:
        self._styles.clear()
        super().notify_style_update()

    def style(self, name: str) -> Style:
        """A component style, resolved once per theme."""
        if name not in self._styles:
            self._styles[name] = self.get_component_rich_style(f"candidates--{name}")
        return self._styles[name]

    # --- drawing --------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        layout = self.layout_now
        width = self.scrollable_content_region.width
        if y == 0:
            fixed, scrolled = self._header(layout)
        else:
            index = self.scroll_offset.y + y - 1
            if index >= len(self.rows):
                return Strip.blank(width, self.rich_style)
            fixed, scrolled = self._row(index, layout)
        base = self.style("header") if y == 0 else self._row_style(self.scroll_offset.y + y - 1)
        view = max(width - layout.fixed_width, 0)
        start, end = self._window(layout, view) if self.wide else (0, view)
        strip = Strip.join([Strip(fixed), Strip(scrolled).crop(start, end)])
        return strip.extend_cell_length(width, base).crop(0, width)

    def _header(self, layout: Layout) -> tuple[list[Segment], list[Segment]]:
        base, sorted_style = self.style("header"), self.style("sorted")
        def cells(placed: Sequence[object]) -> list[Segment]:
            out = []
            for p in placed:
                label = LABELS[p.key]  # type: ignore[attr-defined]
                if p.key == self.sort_column and p.key != RANK_COLUMN:  # type: ignore[attr-defined]
                    label += "▼" if self.sort_reverse else "▲"
                style = sorted_style if p.key == self.sort_column else base  # type: ignore[attr-defined]
                out += [Segment(fit_text(label, p.width, p.key in NUMERIC), style),  # type: ignore[attr-defined]
                        Segment(" " * GAP, base)]
            return out
        return [Segment(" " * GUTTER, base), *cells(layout.fixed)], cells(layout.scrolled)

    def _row_style(self, index: int) -> Style:
        if index == self.cursor and index < len(self.rows):
            return self.style("cursor" if self.has_focus else "cursor-blurred")
        return self.style("odd") if index % 2 else Style()

    def _row(self, index: int, layout: Layout) -> tuple[list[Segment], list[Segment]]:
        row = self.rows[index]
        cells = self.ranking.cells[row.build_id]
        base = self._row_style(index)
        if self.ranking.by_id[row.build_id].excluded:
            base = base + self.style("excluded")
        marked = row.build_id in self.marked
        fixed = [Segment("●" if marked else self._gutter(row), base + self.style("mark" if marked else "group"))]
        for placed in layout.fixed:
            fixed += [Segment(self._fixed_text(row, placed.key, cells, placed.width), base), Segment(" ", base)]
        scrolled: list[Segment] = []
        for placed in layout.scrolled:
            scrolled += self._cell(placed.key, cells[placed.key], placed.width, base)
            scrolled.append(Segment(" ", base))
        return fixed, scrolled

    @staticmethod
    def _gutter(row: Row) -> str:
        if row.kind == "model" and row.builds > 1:
            return "▾" if row.expanded else "▸"
        return " "

    def _fixed_text(self, row: Row, key: str, cells: dict[str, str], width: int) -> str:
        text = cells[key]
        if row.kind == "member" and key == "model":
            text = "└─" if row.last else "├─"
        elif row.kind == "model" and key == "build" and row.builds > 1:
            more = f" +{row.builds - 1}"
            return fit_text(text, width - len(more)) + more
        return fit_text(text, width, key in NUMERIC)

    def _cell(self, key: str, text: str, width: int, base: Style) -> list[Segment]:
        if key == "flags":
            shown = flags_text(text, width)
            return [Segment(ch, base + self.style(GLYPH_SEVERITY[ch])) if ch in GLYPH_SEVERITY else Segment(ch, base)
                    for ch in shown] if text else [Segment(shown, base)]
        if key == "measured" and text[-1:] in (ABOVE_RANGE, BELOW_RANGE):
            return [Segment(fit_text(text, width, True), base + self.style("outside"))]
        return [Segment(fit_text(text, width, key in NUMERIC), base)]

    # --- the cursor -----------------------------------------------------------------

    def move_to(self, index: int, top: bool = False) -> None:
        """Put the cursor on row `index` (clamped), scroll it into view, say which build it is on."""
        before, scrolled = self.cursor, self.scroll_offset
        self.cursor = max(0, min(index, len(self.rows) - 1))
        if top:
            self.scroll_to(y=0, animate=False)
        self.scroll_to_cursor()
        if top or self.scroll_offset != scrolled:
            self.refresh()
        else:  # the rows stay where they are: only the two cursor lines are drawn again
            self.refresh_line(before + 1)
            self.refresh_line(self.cursor + 1)
        build = self.highlighted_build
        if build != self._announced:
            self._announced = build
            self.post_message(self.Highlighted(build))

    def scroll_to_cursor(self) -> None:
        """Scroll so the cursor's row is on screen (below the header)."""
        visible = max(self.scrollable_content_region.height - 1, 1)
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + visible:
            self.scroll_to(y=self.cursor - visible + 1, animate=False, immediate=True)

    def action_cursor(self, delta: int) -> None:
        self.move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        page = max(self.scrollable_content_region.height - 2, 1)
        self.move_to(self.cursor + direction * page)

    def action_first(self) -> None:
        self.move_to(0)

    def action_last(self) -> None:
        self.move_to(len(self.rows) - 1)

    def action_left(self) -> None:
        """Collapse the model under the cursor, or scroll left."""
        row = self.rows[self.cursor] if self.rows else None
        model = self.ranking.model_of[row.build_id] if row else ""
        if row is not None and self.grouped and (row.expanded or row.kind == "member"):
            self.expanded.discard(model)
            self._rebuild(next(r.build_id for r in self.rows if r.kind == "model"
                               and self.ranking.model_of[r.build_id] == model))
        else:
            self._scroll_columns(-1)

    def action_right(self) -> None:
        """Expand the model under the cursor, or scroll right."""
        row = self.rows[self.cursor] if self.rows else None
        if row is not None and row.kind == "model" and row.builds > 1 and not row.expanded:
            self.expanded.add(self.ranking.model_of[row.build_id])
            self._rebuild(row.build_id)
        else:
            self._scroll_columns(1)

    def _scroll_columns(self, step: int) -> None:
        """Scroll sideways by one whole column."""
        edges = column_edges(self.layout_now)[:-1]
        start = max((e for e in edges if e <= self.scroll_offset.x), default=0)
        at = edges.index(start) if start in edges else 0
        self.scroll_to(x=edges[min(max(at + step, 0), len(edges) - 1)] if edges else 0, animate=False)

    def action_open(self) -> None:
        if self.rows:
            self.post_message(self.Opened(self.rows[self.cursor].build_id))

    def action_mark(self) -> None:
        """Mark or unmark the highlighted build for comparison."""
        build = self.highlighted_build
        if build is None:
            return
        if build in self.marked:
            self.marked.remove(build)
        elif len(self.marked) >= MAX_MARKS:
            self.notify(f"Compare takes up to {MAX_MARKS} builds; unmark one first (space).", severity="warning")
            return
        else:
            self.marked.append(build)
        self.refresh()

    # --- the mouse ------------------------------------------------------------------

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            column = self._column_at(offset.x)
            if column is not None:
                self.post_message(self.HeaderClicked(column))
            return
        index = self.scroll_offset.y + offset.y - 1
        if index < len(self.rows):
            self.move_to(index)
            if event.chain == 2:
                self.action_open()

    def _column_at(self, x: int) -> str | None:
        layout = self.layout_now
        edge = GUTTER
        for placed in layout.fixed:
            edge += placed.width + GAP
            if x < edge:
                return placed.key
        x += self.scroll_offset.x
        for placed in layout.scrolled:
            edge += placed.width + GAP
            if x < edge:
                return placed.key
        return None

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()


__all__ = ["FIXED", "CandidatesTable"]
