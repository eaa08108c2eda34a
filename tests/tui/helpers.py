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

EXTRA_BUILD = """
[[builds]]
id = "glm-5.3-flash-nvfp4-imported"
model = "glm-5.3-flash"
repo = "someone/GLM-5.3-Flash-NVFP4-imported"
format = "nvfp4-compressed-tensors"
source = "article"
"""


def row_ids(table) -> list[str]:
    """Build ids in the order the table shows them."""
    return [table.coordinate_to_cell_key((i, 0)).row_key.value for i in range(table.row_count)]


def cell(table, build_id: str, column: str) -> str:
    """The text a user reads in one cell."""
    value = table.get_cell(build_id, column)
    return str(getattr(value, "text", value))
