"""The ranked candidates table: rows keyed by build id, re-ranked in place.

A new ranking updates only the cells whose text changed and then sorts the rows by the
positions the core computed; rows are never rebuilt, so the cursor stays on its build.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import RenderableType
from rich.text import Text
from textual.widgets import DataTable

from sparkadvisor.core.table import COLUMNS
from sparkadvisor.tui.model import RANK_COLUMN, Ranking

REASON_COLUMN = "reason"
"""An extra last column: why an excluded build is excluded."""
REASON_WIDTH = 60
NUMERIC = {c.key for c in COLUMNS if c.numeric}


class RankCell:
    """The rank cell; it carries its build id so `DataTable.sort` can order rows by position."""

    __slots__ = ("build_id", "text")

    def __init__(self, build_id: str, text: Text):
        self.build_id = build_id
        self.text = text

    def __rich__(self) -> RenderableType:
        return self.text


def cell_text(column: str, value: str, excluded: bool) -> Text:
    """A cell as Rich text: numbers right-aligned, excluded rows dimmed."""
    justify = "right" if column in NUMERIC else "left"
    overflow = "ellipsis" if column == REASON_COLUMN else "fold"
    return Text(value, style="dim" if excluded else "", justify=justify, no_wrap=True, overflow=overflow)


class CandidatesTable(DataTable[object]):
    """Every build for the scenario, best first; excluded builds dimmed below with their reason."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self._shown: dict[str, dict[str, tuple[str, bool]]] = {}
        self._widths: dict[str, int] = {}

    def on_mount(self) -> None:
        for column in COLUMNS:
            self.add_column(column.label, key=column.key)
            self._widths[column.key] = len(column.label)
        self.add_column("excluded because", key=REASON_COLUMN, width=REASON_WIDTH)
        self._widths[REASON_COLUMN] = REASON_WIDTH

    @property
    def highlighted_build(self) -> str | None:
        """The build id under the cursor."""
        if not self.row_count:
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value

    def _values(self, ranking: Ranking, build_id: str) -> dict[str, tuple[str, bool]]:
        ranked = ranking.by_id[build_id]
        cells = ranking.cells[build_id]
        values = {c.key: (cells[c.key], ranked.excluded) for c in COLUMNS}
        values[REASON_COLUMN] = (ranked.reason if ranked.excluded else "", True)
        return values

    def _cell(self, build_id: str, column: str, value: tuple[str, bool]) -> object:
        text = cell_text(column, *value)
        return RankCell(build_id, text) if column == RANK_COLUMN else text

    def add_builds(self, ranking: Ranking, build_ids: Iterable[str]) -> None:
        """Add rows for builds not in the table yet."""
        for build_id in build_ids:
            values = self._values(ranking, build_id)
            self._shown[build_id] = values
            for column, (text, _) in values.items():
                self._widths[column] = max(self._widths[column], len(text))
            self.add_row(*(self._cell(build_id, column, value) for column, value in values.items()), key=build_id)

    def remove_builds(self, build_ids: Iterable[str]) -> None:
        """Remove the rows of these builds."""
        for build_id in build_ids:
            self.remove_row(build_id)
            del self._shown[build_id]

    def clear_builds(self) -> None:
        """Remove every row (after the catalog itself changed)."""
        self.clear()
        self._shown.clear()

    @property
    def shown(self) -> set[str]:
        """Build ids with a row."""
        return set(self._shown)

    def update_builds(self, ranking: Ranking) -> None:
        """Update the cells whose text or dimming changed under a new ranking."""
        for build_id, old in self._shown.items():
            new = self._values(ranking, build_id)
            for column, value in new.items():
                if value == old[column]:
                    continue
                wider = len(value[0]) > self._widths[column]
                self._widths[column] = max(self._widths[column], len(value[0]))
                self.update_cell(build_id, column, self._cell(build_id, column, value), update_width=wider)
            self._shown[build_id] = new

    def order_by(self, positions: dict[str, int], keep: str | None) -> None:
        """Sort the rows by the core's positions; the cursor stays on build `keep`."""
        self.sort(RANK_COLUMN, key=lambda cell: positions[cell.build_id])
        if keep is not None and keep in self._shown:
            self.move_cursor(row=self.get_row_index(keep), animate=False, scroll=True)
