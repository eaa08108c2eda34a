"""The import dialog: it reads in the background, shows the failure sentence, returns the build id."""

from __future__ import annotations

import repos
from textual.app import App
from textual.widgets import Input, Static

from sparkadvisor.catalogs import load_index
from sparkadvisor.tui.screens.hub_import import HubImportScreen


class Host(App[None]):
    """A bare app that opens the dialog and keeps what it returns."""

    def __init__(self) -> None:
        super().__init__()
        self.results: list[str | None] = []

    def on_mount(self) -> None:
        self.push_screen(HubImportScreen(), self.results.append)


async def test_the_dialog_reports_a_failure_then_imports_and_returns_the_build_id(hub):
    hub.repos["openai/oss-moe"] = repos.make_repo(*repos.gpt_oss_120b(), shards=15)
    hub.latency_s = 0.02
    app = Host()
    async with app.run_test() as pilot:
        screen = app.screen
        screen.query_one("#hub-import-repo", Input).value = "openai/missing"
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        status = screen.query_one("#hub-import-status", Static)
        assert str(status.render()).startswith("no model repo openai/missing on http://127.0.0.1:")
        assert status.has_class("error") and app.results == []
        screen.query_one("#hub-import-repo", Input).value = "openai/oss-moe"
        await pilot.press("enter")
        await pilot.pause(0.05)
        assert app.screen is screen and "Reading" in str(status.render())
        await app.workers.wait_for_complete()
        await pilot.pause()
    assert app.results == ["oss-moe-openai"]
    assert "oss-moe-openai" in load_index().builds
