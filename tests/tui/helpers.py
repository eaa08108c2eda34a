"""Shared test data and readers for the terminal app tests."""

from __future__ import annotations

EXTRA_HARDWARE = """
[[hardware]]
id = "big-box"
name = "Big Box"
memory_gb = 512
usable_memory_gib = 480
memory_bandwidth_gb_s = 800
max_nodes = 2
source = "article"
"""


def row_ids(table) -> list[str]:
    """Build ids in the order the table shows them."""
    return table.shown


def cell(table, build_id: str, column: str) -> str:
    """The text of one cell in the table's current ranking."""
    return table.ranking.cells[build_id][column]


def screen_lines(widget) -> list[str]:
    """The lines a line-drawn widget (the table, a document) paints now, as plain text."""
    return [widget.render_line(y).text for y in range(widget.scrollable_content_region.height)]
