"""The import dialog: it reads in the background, shows the failure sentence, returns the build id."""

from __future__ import annotations

import repos
from textual.app import App
from textual.widgets import Input, Static

from sparkadvisor.catalogs import load_index
from sparkadvisor.tui.screens.hub_import import HubImportScreen


async def until(pilot, condition, seconds: float = 10.0) -> None:
    """Let the app run until `condition()` holds (the worker posts from another thread)."""
    for _ in range(int(seconds / 0.02)):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError("the dialog never got there")


class Host(App[None]):
    """A bare app that opens the dialog and keeps what it returns."""

    def __init__(self) -> None:
        super().__init__()
        self.results: list[str | None] = []

    def on_mount(self) -> None:
        self.push_screen(HubImportScreen(), self.results.append)


async def test_the_dialog_reports_a_failure_then_imports_and_returns_the_build_id(hub):
    hub.repos["openai/oss-moe"] = repos.make_repo(*repos.gpt_oss_120b(), shards=15)
    hub.latency_s = 0.05
    app = Host()
    async with app.run_test() as pilot:
        screen = app.screen
        screen.query_one("#hub-import-repo", Input).value = "openai/missing"
        await pilot.press("enter")
        status = screen.query_one("#hub-import-status", Static)
        await until(pilot, lambda: status.has_class("error"))
        assert str(status.render()).startswith("no model repo openai/missing on http://127.0.0.1:")
        assert app.results == []
        screen.query_one("#hub-import-repo", Input).value = "openai/gpt-oss-120b"
        await pilot.press("enter")
        await until(pilot, lambda: "already in the catalog" in str(status.render()))
        assert str(status.render()).startswith("openai/gpt-oss-120b is already in the catalog as build "
                                               "gpt-oss-120b-mxfp4") and "tick Force" in str(status.render())
        screen.query_one("#hub-import-repo", Input).value = "openai/oss-moe"
        await pilot.press("enter")
        assert app.screen is screen and "Reading" in str(status.render())
        await until(pilot, lambda: app.results)
    assert app.results == ["oss-moe-openai"]
    assert "oss-moe-openai" in load_index().builds


async def test_i_in_the_app_imports_from_the_hub_and_the_table_shows_the_new_build(hub):
    from sparkadvisor.state import AppState
    from sparkadvisor.tui.app import SparkAdvisorApp

    hub.repos["openai/oss-moe"] = repos.make_repo(*repos.gpt_oss_120b(), shards=3)
    app = SparkAdvisorApp(load_index(), [], AppState(workload="agentic", hardware="dgx-spark", nodes=2))
    async with app.run_test(size=(120, 40)) as pilot:
        main = app.screen
        total = main.table.row_count
        await pilot.press("i", *"openai/oss-moe", "enter")  # typed at once: the field takes it all
        await until(pilot, lambda: app.screen is main and main.table.row_count == total + 1)
        assert main.table.highlighted_build == "oss-moe-openai"
