"""Square brackets in catalog text or in what a person types are text, never Textual markup:
a filter of `[/` or a hardware named `Box [b]x[/b] [/]` shows as typed and crashes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Label, OptionList

from .test_keys import type_at_once

MARKUP_NAME = "Box [b]bold[/b] [/] [link=https://evil.example]x[/link]"
MARKUP_HARDWARE = f'''
[sources.mk]
title = "Markup [bold red]source[/] [/]"
url = "https://example.org/mk"

[[hardware]]
id = "mk-box"
name = "{MARKUP_NAME}"
memory_gb = 128
usable_memory_gib = 121.6
memory_bandwidth_gb_s = 273
max_nodes = 2
source = "mk"
'''


@pytest.fixture
def markup_catalog(tmp_path: Path) -> Path:
    path = tmp_path / "markup.toml"
    path.write_text(MARKUP_HARDWARE, encoding="utf-8")
    return path


def plain_title(widget) -> str:
    return widget._border_title.plain if widget._border_title is not None else ""


async def test_a_filter_with_square_brackets_is_shown_as_typed(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await type_at_once(app, pilot, "slash", *"[/]")
        table = app.screen.table
        assert app.screen.filter_text == "[/]"
        assert plain_title(table).endswith("filter: [/]")


async def test_a_hardware_name_with_markup_is_shown_as_text_everywhere(make_app, markup_catalog) -> None:
    from sparkadvisor.tui.app import SparkAdvisorApp
    from sparkadvisor.tui.screens.main import MainScreen

    app = make_app(catalog_paths=[markup_catalog])
    assert isinstance(app, SparkAdvisorApp)
    async with app.run_test(size=(120, 30)) as pilot:
        main = app.screen
        assert isinstance(main, MainScreen)
        main.set_hardware("mk-box")
        await pilot.pause()
        await pilot.press("h")
        choice = app.screen.query_one(OptionList)
        prompts = [str(choice.get_option_at_index(i).prompt) for i in range(choice.option_count)]
        assert any(prompt.startswith(MARKUP_NAME + ":") for prompt in prompts)
        await pilot.press("escape")
        await pilot.press("enter")
        await pilot.pause()
        document = app.screen.query_one("#build-document")
        assert MARKUP_NAME in plain_title(document)
        await pilot.press("e")
        await pilot.pause()
        title = app.screen.query_one("#export-title", Label)
        assert MARKUP_NAME in str(title.render())


async def test_an_assumption_typed_with_square_brackets_is_refused_in_words(make_app) -> None:
    from textual.widgets import Input

    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("a")
        await pilot.pause()
        app.screen.query_one("#kv_cache_dtype", Input).focus()
        await type_at_once(app, pilot, *"[/")
        error = app.screen.query_one("#kv_cache_dtype-error", Label)
        assert str(error.render()).startswith("'[/' is not a KV dtype")
