"""SVG snapshots of the app at the sizes people use: 80x24, 120x40 and 200x50, in each theme,
plus the grouped view and a build full-screen.

Regenerate with `pytest tests/tui/test_snapshots.py --snapshot-update` when figures move, and
look at the SVGs before committing them.
"""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(("size", "workload", "theme"), [
    ((80, 24), "agentic", "dark"), ((120, 40), "agentic", "light"), ((200, 50), "agentic", "dark"),
    ((120, 40), "chat", "high-contrast"),
])
def test_main_screen(snap_compare, make_app, size, workload: str, theme: str) -> None:
    assert snap_compare(make_app(workload, theme), terminal_size=size)


def test_grouped_by_model_at_120_by_40(snap_compare, make_app) -> None:
    assert snap_compare(make_app("agentic", "dark"), press=["m"], terminal_size=(120, 40))


def test_a_build_full_screen_at_80_by_24(snap_compare, make_app) -> None:
    assert snap_compare(make_app("agentic", "dark"), press=["enter"], terminal_size=(80, 24))
