"""The terminal app shows hostile catalog text escaped: no title, no clear screen, no broken layout."""

from __future__ import annotations

from sparkadvisor.catalogs import load_index
from sparkadvisor.state import AppState

from .test_safe_text import RAW, hostile_catalog


async def test_app_shows_escapes_as_text(tmp_path) -> None:
    from sparkadvisor.tui.app import SparkAdvisorApp

    path = hostile_catalog(tmp_path)
    index = load_index([path], include_user=False)
    app = SparkAdvisorApp(index, [path], AppState(theme="dark", workload="agentic", hardware="dgx-spark", nodes=2))
    async with app.run_test(size=(200, 50)) as pilot:
        table = app.screen.table
        table.move_to(table.shown.index("evil-fp8"))
        for _ in range(3):  # the highlight message, then the detail pane's repaint
            await pilot.pause()
        screen = app.export_screenshot()
    assert not any(raw in screen for raw in RAW)
    assert "\\x1b]2;owned" in screen
