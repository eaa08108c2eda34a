"""Fixtures for the terminal app: an app on the bundled catalog with fixed choices."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sparkadvisor.state import AppState

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


@pytest.fixture
def make_app(index) -> Callable[..., object]:
    """A factory: the app on the bundled catalog (plus `catalog_paths`), in a given workload and theme."""
    from sparkadvisor.tui.app import SparkAdvisorApp

    def factory(workload: str = "agentic", theme: str = "dark", nodes: int = 2,
                catalog_paths: list[Path] | None = None) -> SparkAdvisorApp:
        chosen = index
        if catalog_paths:
            from sparkadvisor.catalogs import load_index

            chosen = load_index(catalog_paths, include_user=False)
        state = AppState(theme=theme, workload=workload, hardware="dgx-spark", nodes=nodes)
        return SparkAdvisorApp(chosen, list(catalog_paths or []), state)

    return factory


@pytest.fixture
def extra_hardware_catalog(tmp_path: Path) -> Path:
    """A catalog file that adds a second hardware profile."""
    path = tmp_path / "extra-hardware.toml"
    path.write_text(EXTRA_HARDWARE, encoding="utf-8")
    return path


def row_ids(table) -> list[str]:
    """Build ids in the order the table shows them."""
    return [table.coordinate_to_cell_key((i, 0)).row_key.value for i in range(table.row_count)]


def cell(table, build_id: str, column: str) -> str:
    """The text a user reads in one cell."""
    value = table.get_cell(build_id, column)
    return str(getattr(value, "text", value))
