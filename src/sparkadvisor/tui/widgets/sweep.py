"""The highlighted build on 1, 2, 3 and 4 nodes side by side: what would another node buy?"""

from __future__ import annotations

from textual.content import Content

from sparkadvisor.core.ranking import Ranked
from sparkadvisor.core.table import row_cells

SWEEP_COLUMNS = (("nodes", "nodes", 5), ("fit", "fit", 15), ("per_node", "GiB/node", 8), ("kv_pool", "KV pool", 7),
                 ("speed", "tok/s", 14), ("ttft", "1st token", 10))
"""(key, label, width) of each column."""
LEFT = ("nodes", "fit")


def speed_cell(cells: dict[str, str]) -> str:
    """The measured speed when a recipe measured it on these nodes, else the expected one."""
    return f"{cells['measured']} measured" if cells["measured"] != "-" else cells["expected"]


def sweep_values(item: Ranked, here: bool) -> dict[str, str]:
    """One cluster size's cells; what only a fitting build has is "-" otherwise."""
    cells, fits = row_cells(item), item.plan.runs
    return cells | {"nodes": f"{'▶ ' if here else '  '}{item.plan.cluster.nodes}",
                    "speed": speed_cell(cells) if fits else "-", "kv_pool": cells["kv_pool"] if fits else "-",
                    "ttft": cells["ttft"] if fits else "-"}


def _line(values: dict[str, str], style: str) -> Content:
    texts = [values[key].ljust(width) if key in LEFT else values[key].rjust(width)
             for key, _, width in SWEEP_COLUMNS]
    return Content.assemble((" ".join(texts), style))


def sweep_content(plans: tuple[Ranked, ...], current_nodes: int) -> Content:
    """A heading, the column labels, and one line per cluster size with the current one marked."""
    labels = {key: label for key, label, _ in SWEEP_COLUMNS}
    lines = [Content.assemble(("The same build on 1-4 nodes", "bold $primary")), _line(labels, "bold")]
    for item in plans:
        here = item.plan.cluster.nodes == current_nodes
        lines.append(_line(sweep_values(item, here), "bold $accent" if here else ""))
    return Content("\n").join(lines)
