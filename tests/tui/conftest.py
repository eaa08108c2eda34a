"""Fixtures for the terminal app: an app on the bundled catalog with fixed choices."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sparkadvisor.state import AppState

from .helpers import EXTRA_HARDWARE


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
