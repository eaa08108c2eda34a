"""The ranked candidates table: rows keyed by build id, re-ranked in place.

Each cell is a live view of (build, column) in the table's current ranking. A new ranking
is swapped in, columns widen only if a text got longer, and the rows are sorted by the
positions the core computed: no row is rebuilt, so the cursor stays on its build and a
re-rank of thousands of builds costs a sort, not thousands of cell updates.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text
from textual.widgets import DataTable

from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.table import COLUMNS
from sparkadvisor.tui.model import RANK_COLUMN, Ranking

REASON_COLUMN = "reason"
"""An extra last column: why an excluded build is excluded."""
REASON_WIDTH = 60
NUMERIC = {c.key for c in COLUMNS if c.numeric}
CAPPED_WIDTHS = {"model": 26, "build": 24}
"""Names wider than this end in an ellipsis, so the figures stay on an 80-column screen."""


class LiveCell:
    """One cell, drawn from the table's current ranking; it carries its build id so
    `DataTable.sort` can order rows by the core's positions."""

    __slots__ = ("table", "build_id", "column")

    def __init__(self, table: CandidatesTable, build_id: str, column: str):
        self.table = table
        self.build_id = build_id
        self.column = column

    @property
    def text(self) -> Text:
        """The cell as the user reads it now."""
        return self.table.cell_text(self.build_id, self.column)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.text

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        width = min(len(self.table.cell_value(self.build_id, self.column)), CAPPED_WIDTHS.get(self.column, 10**6))
        return Measurement(width, width)


class CandidatesTable(DataTable[LiveCell]):
    """Every build for the scenario, best first; excluded builds dimmed below with their reason."""

    def __init__(self, ranking: Ranking, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self.ranking = ranking
        self._shown: set[str] = set()

    def on_mount(self) -> None:
        for column in COLUMNS:
            self.add_column(column.label, key=column.key)
        self.add_column("excluded because", key=REASON_COLUMN, width=REASON_WIDTH)

    def cell_value(self, build_id: str, column: str) -> str:
        """The plain text of a cell in the current ranking."""
        if column == REASON_COLUMN:
            ranked = self.ranking.by_id[build_id]
            return safe_text(ranked.reason) if ranked.excluded else ""
        return self.ranking.cells[build_id][column]

    def cell_text(self, build_id: str, column: str) -> Text:
        """A cell as Rich text: numbers right-aligned, excluded rows dimmed."""
        excluded = self.ranking.by_id[build_id].excluded
        return Text(self.cell_value(build_id, column), style="dim" if excluded else "",
                    justify="right" if column in NUMERIC else "left", no_wrap=True,
                    overflow="ellipsis" if column == REASON_COLUMN or column in CAPPED_WIDTHS else "fold")

    @property
    def highlighted_build(self) -> str | None:
        """The build id under the cursor."""
        if not self.row_count:
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value

    @property
    def shown(self) -> set[str]:
        """Build ids with a row."""
        return set(self._shown)

    def add_builds(self, build_ids: Iterable[str]) -> None:
        """Add rows for builds not in the table yet."""
        keys = [c.key for c in COLUMNS] + [REASON_COLUMN]
        for build_id in build_ids:
            self._shown.add(build_id)
            self.add_row(*(LiveCell(self, build_id, key) for key in keys), key=build_id)

    def remove_builds(self, build_ids: Iterable[str]) -> None:
        """Remove the rows of these builds."""
        for build_id in build_ids:
            self.remove_row(build_id)
            self._shown.discard(build_id)

    def clear_builds(self, ranking: Ranking) -> None:
        """Remove every row (after the catalog itself changed)."""
        self.clear()
        self._shown.clear()
        self.ranking = ranking

    def show_ranking(self, ranking: Ranking) -> None:
        """Draw every cell from `ranking`; widen the columns whose longest text grew."""
        self.ranking = ranking
        for column in self.ordered_columns:
            key = str(column.key.value)
            width, build_id = ranking.widest.get(key, (0, ""))
            width = min(width, CAPPED_WIDTHS.get(key, width))
            if width > column.content_width and build_id in self._shown:
                self.update_cell(build_id, key, self.get_cell(build_id, key), update_width=True)
        self.refresh()

    def order_by(self, positions: dict[str, int], keep: str | None) -> None:
        """Sort the rows by the core's positions; the cursor stays on build `keep`."""
        self.sort(RANK_COLUMN, key=lambda cell: positions[cell.build_id])
        if keep is not None and keep in self._shown:
            self.move_cursor(row=self.get_row_index(keep), animate=False, scroll=True)
