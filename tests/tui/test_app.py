"""The app as a whole: footer, palette, sizes, NO_COLOR, broken themes, bad catalogs, import cost."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sparkadvisor import cli, paths
from sparkadvisor.tui.commands import COMMANDS
from sparkadvisor.tui.widgets.footer import FooterItem, KeyFooter

from .helpers import row_ids, screen_lines

DECISION = ("flags", "fit", "expected", "ttft")


async def footer_keys(app, pilot) -> list[FooterItem]:
    """The footer's keys on screen, once the footer has drawn them."""
    for _ in range(50):
        await pilot.pause()
        keys = app.screen.query_one(KeyFooter).items()
        if keys:
            return keys
    raise AssertionError("the footer never showed its keys")


async def test_footer_shows_each_key_with_its_tooltip(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(240, 40)) as pilot:
        keys = {k.description: k.tooltip for k in await footer_keys(app, pilot)}
        for command in (c for c in COMMANDS if c.show):
            assert keys[command.footer] == command.tooltip
        ids = [b.id for b in app.screen.BINDINGS if hasattr(b, "id") and b.id]
        assert len(ids) == len(set(ids)) == len(COMMANDS)


async def test_the_footer_keeps_help_quit_and_the_keys_that_change_the_answer_at_80_columns(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        keys = await footer_keys(app, pilot)
        shown = [k.description for k in keys]
        assert {"Help", "Quit", "Workload", "Nodes", "Assumptions", "Filter"} <= set(shown) and "Theme" not in shown
        assert all(k.right <= 80 for k in keys) and app.screen.query_one(KeyFooter).region.y == 23


async def test_a_click_on_a_footer_key_presses_it(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        workload = next(k for k in await footer_keys(app, pilot) if k.description == "Workload")
        await pilot.click(KeyFooter, offset=(workload.x + 1, 0))
        await pilot.pause()
        assert app.screen.scenario.workload.kind == "chat"


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 50)])
async def test_the_decision_is_on_the_first_screen_and_no_figure_is_cut(make_app, size) -> None:
    app = make_app()
    async with app.run_test(size=size):
        table = app.screen.table
        assert set(DECISION) <= set(table.layout_now.keys)
        lines = screen_lines(table)
        cells = table.ranking.cells
        for line, build_id in zip(lines[1:], table.shown, strict=False):
            row = cells[build_id]
            for key in table.layout_now.keys:
                if key in ("model", "build", "reason", "caveats", "flags"):
                    continue
                assert f" {row[key]} " in f" {line} ", (key, row[key], line)
            assert row["flags"].split(" ")[0] in line
        assert lines[1].split()[:2] == ["1", "GLM-5.3-Flash"] and "fits +11.2 GiB" in lines[1]


async def test_palette_lists_commands_as_category_action(make_app) -> None:
    app = make_app("agentic")
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.press(*"toggle")
        await pilot.pause(0.1)
        options = app.screen.query_one("CommandList")
        assert "workload: Toggle agentic / chat" in str(options.get_option_at_index(0).prompt)
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.scenario.workload.kind == "chat"


async def test_works_at_80_by_24(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)):
        screen = app.screen
        assert screen.has_class("-narrow")
        assert screen.table.region.height >= 10 and screen.query_one("#detail").region.height >= 6
        assert screen.query_one(KeyFooter).region.y == 23


def test_memory_bar_parts_differ_by_glyph_not_only_colour(index) -> None:
    from sparkadvisor.core.advisor import evaluate_build
    from sparkadvisor.core.plan import Cluster
    from sparkadvisor.core.workload import AGENTIC
    from sparkadvisor.tui.widgets.memory_bar import parts

    plan = evaluate_build(index, index.builds["glm-5.3-flash-nvfp4-redhat"], Cluster(index.hardware["dgx-spark"], 2),
                          AGENTIC)
    drawn = parts(plan.budget)
    assert [p.label for p in drawn] == ["weights", "KV", "runtime", "free"]
    assert len({p.glyph for p in drawn}) == 4
    assert round(drawn[0].gib, 1) == 92.2 and drawn[1].gib == 6.0


async def test_no_color_is_respected(make_app, monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app()
    async with app.run_test(size=(140, 40)):
        assert app.no_color
        detail = app.screen.query_one("#detail").text
        assert all(glyph in detail for glyph in "█▓▒░") and "▲ SWAP (warning)" in detail


async def test_broken_theme_is_reported_once_and_the_app_runs(index) -> None:
    from sparkadvisor.tui.app import SparkAdvisorApp

    folder = paths.config_dir() / "themes"
    folder.mkdir(parents=True)
    (folder / "broken.toml").write_text('name = "broken"\nprimary = "purple-ish"\n')
    app = SparkAdvisorApp(index, [])
    async with app.run_test(size=(140, 40), notifications=True):
        messages = [n.message for n in app._notifications]
        assert len(messages) == 1 and "broken.toml: primary: 'purple-ish' is not a colour" in messages[0]
        assert [n.title for n in app._notifications] == ["1 theme file skipped"]  # not "1 theme file(s)"
        assert len(row_ids(app.screen.table)) == len(index.builds)


def test_a_bad_catalog_is_one_message_not_a_traceback(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[builds]]\nid = "x"\nmodel = "nope"\nrepo = "a/b"\nformat = "fp8"\nsource = "article"\n')
    assert cli.main(["--catalog", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "the catalog has 1 problem:" in err and "'nope'" in err and "Traceback" not in err


def test_the_app_imports_without_hub_or_http_libraries() -> None:
    code = ("import sys, sparkadvisor.tui.app; "
            "print([m for m in ('huggingface_hub', 'httpx') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


async def test_an_unticked_box_reads_unticked_without_colour(index, monkeypatch) -> None:
    from textual.app import App

    from sparkadvisor.core.advisor import advise
    from sparkadvisor.core.plan import Cluster
    from sparkadvisor.core.workload import AGENTIC
    from sparkadvisor.tui.screens.export import ExportScreen
    from sparkadvisor.tui.widgets.tickbox import TickBox

    monkeypatch.setenv("NO_COLOR", "1")
    ranked = advise(index, Cluster(index.hardware["dgx-spark"], 2), AGENTIC)
    app = App()
    async with app.run_test(size=(120, 30)) as pilot:
        await app.push_screen(ExportScreen(index, ranked[0].plan, ranked))
        await pilot.pause()
        box = app.screen.query_one("#export-force", TickBox)
        assert "▐ ▌ overwrite" in box.render().plain
        box.value = True
        await pilot.pause()
        assert "▐X▌ overwrite" in box.render().plain


async def test_remembered_hardware_this_catalog_lacks_is_said_not_swapped_silently(index) -> None:
    from sparkadvisor.state import AppState
    from sparkadvisor.tui.app import SparkAdvisorApp

    app = SparkAdvisorApp(index, [], AppState(hardware="my-own-box", nodes=2), remember_choices=False)
    async with app.run_test(size=(140, 40), notifications=True):
        assert [n.message for n in app._notifications] == [
            "Hardware 'my-own-box', remembered from the last session, is not in this catalog (was it added with "
            "--catalog?); showing DGX Spark."]
        assert app.screen.scenario.hardware_id == "dgx-spark"


async def test_the_footer_shows_the_node_range_the_hardware_sweeps(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(200, 50)) as pilot:
        nodes = next(k for k in await footer_keys(app, pilot) if k.description == "Nodes")
        assert nodes.display == "1-4"  # a DGX Spark's catalog entry sweeps 4 nodes
        app.screen.set_hardware("h100-sxm")
        await pilot.pause()
        nodes = next(k for k in await footer_keys(app, pilot) if k.description == "Nodes")
        assert nodes.display == "1-8"
        app.screen.set_hardware("rtx-5090")
        await pilot.pause()
        nodes = next(k for k in await footer_keys(app, pilot) if k.description == "Nodes")
        assert nodes.display == "1"
