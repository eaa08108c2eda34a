"""Square brackets in catalog text or in what a person types are text, never Textual markup:
a filter of `[/` or a hardware named `Box [b]x[/b] [/]` shows as typed and crashes nothing."""

from __future__ import annotations

import re
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


WIDE_MODEL = '''
[sources.wide]
title = "A model card in Chinese"
url = "https://example.org/wide"

[[models]]
id = "wide"
name = "通义千问模型超长名字测试版本"
family = "Test"
source = "wide"

[models.params]
total_b = 8
active_b = 8
source = "wide"

[models.attention]
design = "gqa"
layers = 32
heads = 32
kv_heads = 8
head_dim = 128
source = "wide"

[[builds]]
id = "wide-fp8"
model = "wide"
repo = "wide/repo"
format = "fp8"
source = "wide"
'''


async def test_a_name_in_double_width_characters_keeps_the_columns_in_line(make_app, tmp_path) -> None:
    from rich.cells import cell_len

    from .helpers import screen_lines

    path = tmp_path / "wide.toml"
    path.write_text(WIDE_MODEL, encoding="utf-8")
    app = make_app(catalog_paths=[path])
    async with app.run_test(size=(80, 24)) as pilot:
        await type_at_once(app, pilot, "slash", *"wide-fp8")
        table = app.screen.table
        header, row = screen_lines(table)[:2]
        cells = table.ranking.cells["wide-fp8"]
        assert "通义" in row and cell_len(row) == cell_len(header)
        # Each column starts under its label, and the last figure on screen is whole.
        assert cell_len(row[:row.index("fits")]) == header.index("fit")
        assert row.rstrip().endswith(cells["ttft"])


def test_compare_keeps_its_columns_in_line_with_double_width_names(tmp_path) -> None:
    from rich.cells import cell_len

    from sparkadvisor.catalogs import load_index
    from sparkadvisor.core.workload import AGENTIC
    from sparkadvisor.tui.model import Scenario, compute_ranking
    from sparkadvisor.tui.screens.compare import compare_content

    path = tmp_path / "wide.toml"
    path.write_text(WIDE_MODEL, encoding="utf-8")
    ranking = compute_ranking(load_index([path], include_user=False), Scenario("dgx-spark", 2, AGENTIC))
    items = [ranking.by_id["wide-fp8"], ranking.by_id["glm-5.3-flash-nvfp4-redhat"]]
    lines = compare_content(items, 80).plain.split("\n")
    model = next(line for line in lines if line.startswith("model"))
    repo = next(line for line in lines if line.startswith("repo"))
    assert "通义" in model and cell_len(model) == cell_len(repo)
    assert cell_len(model[:model.index("GLM")]) == repo.index("RedHatAI")


async def test_a_theme_named_with_quotes_and_brackets_is_listed_and_chosen_from_the_palette(make_app) -> None:
    from sparkadvisor import paths

    folder = paths.config_dir() / "themes"
    folder.mkdir(parents=True)
    name = "Bob's [b]theme[/b] [/]"
    dark = (Path(__file__).resolve().parents[2] / "themes" / "dark.toml").read_text(encoding="utf-8")
    (folder / "bob.toml").write_text(
        "\n".join(f"name = {json_str(name)}" if line.startswith("name =") else line for line in dark.splitlines()),
        encoding="utf-8")
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.press(*"bob")
        await pilot.pause(0.2)
        options = app.screen.query_one("CommandList")
        assert str(options.get_option_at_index(0).prompt).startswith(f"theme: {name}")
        await pilot.press("enter")
        await pilot.pause()
        assert app.theme == name


def json_str(text: str) -> str:
    import json

    return json.dumps(text)


async def test_a_served_model_name_with_brackets_shows_in_the_status_tooltip_as_text(make_app) -> None:
    from sparkadvisor.tui.widgets.probe_status import Part, ProbeStatus, StatusLine

    app = make_app()
    async with app.run_test(size=(120, 30), tooltips=True) as pilot:
        status = app.screen.query_one(ProbeStatus)
        status._show(StatusLine((Part("vLLM up · my [/]model[b]"),)))
        await pilot.hover(status)
        tooltip = app.screen.query_one("#textual-tooltip")
        for _ in range(100):  # the tooltip shows after a pause, later on a loaded machine
            await pilot.pause(0.1)
            if tooltip.display:
                break
        assert tooltip.display and "my [/]model[b]" in str(tooltip.render())


def test_compare_at_80_columns_wraps_a_long_cell_rather_than_cutting_it() -> None:
    from sparkadvisor.catalogs import load_index
    from sparkadvisor.core.caveats import badge
    from sparkadvisor.core.workload import AGENTIC
    from sparkadvisor.tui.model import Scenario, compute_ranking
    from sparkadvisor.tui.screens.compare import compare_content

    ranking = compute_ranking(load_index(include_user=False), Scenario("dgx-spark", 2, AGENTIC))
    items = [ranking.by_id[b] for b in ("glm-5.3-flash-nvfp4-redhat", "glm-5.3-flash-nvfp4-nvidia")]
    lines = compare_content(items, 80).plain.split("\n")
    assert all(len(line.rstrip()) <= 80 for line in lines)
    grid = " ".join(lines)
    for item in items:
        for caveat in item.plan.caveats:
            assert re.search(rf"[ ,]{re.escape(badge(caveat))}[ ,]", f" {grid} "), badge(caveat)  # whole
    assert any(line.startswith("why") and line.rstrip().endswith("…") for line in lines)  # whole below the grid
