"""SVG snapshots of the main screen at a fixed size: both workloads, two themes, and 80x24.

Regenerate with `pytest tests/tui/test_snapshots.py --snapshot-update` when figures move.
"""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(("workload", "theme"), [("agentic", "dark"), ("chat", "dark"),
                                                 ("agentic", "light"), ("chat", "light")])
def test_main_screen(snap_compare, make_app, workload: str, theme: str) -> None:
    assert snap_compare(make_app(workload, theme), terminal_size=(140, 40))


def test_main_screen_at_80_by_24(snap_compare, make_app) -> None:
    assert snap_compare(make_app("agentic", "high-contrast"), terminal_size=(80, 24))
