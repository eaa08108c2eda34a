"""The TUI's export modal: renders the chosen format and writes it into a folder."""

from __future__ import annotations

from export_helpers import plan_for, ranked_for
from textual.app import App
from textual.widgets import Input, Select, TextArea

from sparkadvisor.tui.screens.export import ExportScreen


async def test_export_screen_shows_and_writes(index, tmp_path):
    plan = plan_for(index, "glm-5.3-flash-nvfp4-redhat", 2)
    app = App()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = ExportScreen(index, plan, ranked_for(index, 2))
        await app.push_screen(screen)
        await pilot.pause()
        text = screen.query_one("#export-text", TextArea).text
        assert "==> node0-head.sh <==" in text and "--kv-cache-memory-bytes 6G" in text
        screen.query_one("#export-format", Select).value = "json"
        await pilot.pause()
        assert '"vllm_argv"' in screen.query_one("#export-text", TextArea).text
        screen.query_one("#export-folder", Input).value = str(tmp_path / "out")
        screen.action_write()
        assert (tmp_path / "out" / "plan.json").exists()
        screen.action_write()
        await pilot.pause()
        assert any("already exists" in n.message for n in app._notifications)
