"""The highlighted build on 1, 2, 3 and 4 nodes side by side: what would another node buy?"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from sparkadvisor.core.ranking import Ranked
from sparkadvisor.core.table import row_cells

SWEEP_COLUMNS = (("nodes", "nodes"), ("fit", "fit"), ("per_node", "GiB/node"), ("kv_pool", "KV pool"),
                 ("speed", "tok/s"), ("ttft", "1st token"))


def speed_cell(cells: dict[str, str]) -> str:
    """The measured speed when a recipe measured it on these nodes, else the expected one."""
    return f"{cells['measured']} measured" if cells["measured"] != "-" else cells["expected"]


class SweepTable(DataTable[Text]):
    """Fit, GiB per node, KV pool, speed and first token at each cluster size."""

    can_focus = False

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="none", show_cursor=False, **kwargs)  # type: ignore[arg-type]

    def on_mount(self) -> None:
        for key, label in SWEEP_COLUMNS:
            self.add_column(label, key=key)

    def show(self, plans: tuple[Ranked, ...], current_nodes: int) -> None:
        """One row per cluster size; the current size marked."""
        self.clear()
        for item in plans:
            cells = row_cells(item)
            nodes = item.plan.cluster.nodes
            here = nodes == current_nodes
            fits = item.plan.fits
            values = {"nodes": f"{'▶ ' if here else '  '}{nodes}", "speed": speed_cell(cells) if fits else "-",
                      "kv_pool": cells["kv_pool"] if fits else "-", "ttft": cells["ttft"] if fits else "-"}
            row = [Text(values.get(key, cells.get(key, "")), style="bold" if here else "",
                        justify="left" if key in ("nodes", "fit") else "right") for key, _ in SWEEP_COLUMNS]
            self.add_row(*row, key=str(nodes))
