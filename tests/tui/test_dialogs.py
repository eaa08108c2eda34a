"""The dialogs at 80x24: what a person reads in them can be scrolled with the keys, whatever has focus."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.widgets import Button, ProgressBar

from sparkadvisor.tui.screens.bench import BenchScreen

REPORT = [f"line {n}: decode, 1 stream [measured] 47.0 tok/s beside 45.9 tok/s predicted" for n in range(40)]


async def open_bench(app, pilot) -> BenchScreen:
    await pilot.press("b")
    for _ in range(20):
        if isinstance(app.screen, BenchScreen):
            break
        await pilot.pause(0.05)
    dialog = app.screen
    assert isinstance(dialog, BenchScreen)
    return dialog


async def test_the_bench_report_scrolls_with_the_keys_while_a_button_has_focus(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await open_bench(app, pilot)
        dialog.post_message(BenchScreen.Finished(REPORT))
        await pilot.pause()
        await pilot.pause()
        scroll = dialog.query_one("#bench-scroll", VerticalScroll)
        assert isinstance(app.focused, Button) and scroll.max_scroll_y > 0
        assert scroll.scrollable_content_region.height >= 8  # the report is read here, a few lines at a time
        await pilot.press("down")
        assert scroll.scroll_y == 1
        await pilot.press("pagedown")
        assert scroll.scroll_y > 1
        await pilot.press("end")
        assert scroll.scroll_y == scroll.max_scroll_y
        await pilot.press("home")
        assert scroll.scroll_y == 0
        assert isinstance(app.focused, Button)


async def test_the_bench_progress_bar_stands_still_until_run_and_after_a_refusal(make_app, monkeypatch) -> None:
    from textual.widgets import Static

    monkeypatch.setenv("SPARKADVISOR_VLLM_URL", "http://127.0.0.1:9")  # the discard port: nothing answers
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await open_bench(app, pilot)
        bar = dialog.query_one(ProgressBar)
        assert bar.total is not None and bar.progress == 0  # an indeterminate bar pulses as if something ran
        await pilot.click("#bench-run")
        status = dialog.query_one("#bench-status", Static)
        for _ in range(100):
            if "down" in str(status.render()):
                break
            await pilot.pause(0.05)
        assert "the model server is down" in str(status.render()) and bar.total is not None


async def test_the_export_preview_is_readable_at_80_by_24_and_pages_without_a_tab(make_app) -> None:
    from textual.widgets import Select, TextArea

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("e")
        await pilot.pause()
        export = app.screen
        preview = export.query_one("#export-text", TextArea)
        assert isinstance(app.focused, Select)
        assert preview.scrollable_content_region.height >= 10  # a recipe is read here before it is written
        await pilot.press("pagedown")
        assert preview.scroll_y > 0 and isinstance(app.focused, Select)
        await pilot.press("pageup")
        assert preview.scroll_y == 0


async def test_the_import_dialog_shows_its_force_option_whole_and_no_pulse_at_80_by_24(make_app) -> None:
    from rich.cells import cell_len
    from textual.widgets import Checkbox

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("i")
        await pilot.pause()
        force = app.screen.query_one("#hub-import-force", Checkbox)
        # The whole option (switch and label, as wide as they draw) inside the dialog, not cut at its border.
        assert force.region.right <= force.parent.content_region.right
        assert force.content_region.width >= 4 + cell_len(str(force.label))
        bar = app.screen.query_one(ProgressBar)
        assert bar.total is not None and bar.progress == 0


async def test_the_assumptions_panel_shows_the_highlighted_builds_figures_as_you_type_at_80_columns(make_app) -> None:
    from textual.widgets import Input, Static

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        main = app.screen
        build = main.table.highlighted_build
        before = main.ranking.cells[build]["ttft"]
        await pilot.press("a")
        await pilot.pause()
        editor = app.screen
        effect = editor.query_one("#assumptions-effect", Static)
        # At 80 columns the panel covers the table's figures: it says them itself.
        assert f"first token {before}" in str(effect.render())
        editor.query_one("#context_tokens", Input).value = "20000"
        await pilot.pause()
        after = main.ranking.cells[build]["ttft"]
        assert after != before and f"first token {after}" in str(effect.render())
        panel = editor.query_one("#assumptions")
        assert panel.scroll_y == 0 and effect.region.bottom <= panel.region.bottom  # on screen, not scrolled off


async def test_a_max_model_len_typed_in_the_assumptions_re_ranks_and_heads_the_table(make_app) -> None:
    from textual.widgets import Input

    from sparkadvisor.tui.widgets.cluster_header import ClusterHeader

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        main = app.screen
        await pilot.press("a")
        await pilot.pause()
        app.screen.query_one("#max_model_len", Input).value = "64k"
        await pilot.pause()
        assert main.scenario.settings.max_model_len == 64_000
        header = str(main.query_one(ClusterHeader).render())
        assert "max-model-len 64,000" in header
        # A 100,000-token prompt no longer fits any build's context (an unknown one is no pass either).
        plans = [r.plan for r in main.ranking.ranked]
        assert not any(p.meets_targets for p in plans)
        assert all(p.usable_context.tokens <= 64_000 for p in plans if p.usable_context.tokens is not None)
        app.screen.query_one("#max_model_len", Input).value = "64K8"
        await pilot.pause()
        assert main.scenario.settings.max_model_len == 64_000  # a bad value changes nothing until fixed


async def test_batched_tokens_typed_in_the_assumptions_resize_the_pools_and_head_the_table(make_app) -> None:
    from textual.widgets import Input, Label

    from sparkadvisor.tui.widgets.cluster_header import ClusterHeader

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        main = app.screen
        gemma = "gemma-4-26b-a4b-nvfp4-nvidia"  # sliding-window layers keep window - 1 + batched tokens
        before = main.ranking.by_id[gemma].plan.kv_pool_tokens
        await pilot.press("a")
        await pilot.pause()
        app.screen.query_one("#batched_tokens", Input).value = "2K"
        await pilot.pause()
        assert main.scenario.settings.batched_tokens == 2048
        header = main.query_one(ClusterHeader)
        assert "2,048 batched tokens" in str(header.render())
        await pilot.pause()
        assert header.region.height == 2  # at 80 columns the setting follows the cluster: the table keeps its rows
        assert main.ranking.by_id[gemma].plan.kv_pool_tokens > before
        app.screen.query_one("#batched_tokens", Input).value = "128"
        app.screen.query_one("#streams", Input).value = "200"
        await pilot.pause()
        error = app.screen.query_one("#batched_tokens-error", Label)
        assert error.display and "128 batched tokens are fewer than the 200 streams" in str(error.render())
        assert main.scenario.workload.streams == 1  # nothing changes until it is fixed


async def test_speculation_off_in_the_assumptions_plans_every_recipe_without_its_drafter(make_app) -> None:
    from textual.widgets import Input

    from sparkadvisor.tui.widgets.cluster_header import ClusterHeader

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        main = app.screen
        glm = main.ranking.by_id["glm-5.3-flash-nvfp4-redhat"].plan
        assert glm.recipe.speculative is not None
        await pilot.press("a")
        await pilot.pause()
        field = app.screen.query_one("#speculation", Input)
        field.value = "on"
        await pilot.pause()
        assert main.scenario.settings.speculation is None  # only "off" is a value: a typo changes nothing
        field.value = "off"
        await pilot.pause()
        assert main.scenario.settings.speculation is False
        assert "· no speculation" in str(main.query_one(ClusterHeader).render())
        off = main.ranking.by_id["glm-5.3-flash-nvfp4-redhat"].plan
        assert off.drafter_off and off.decode_tok_s < glm.decode_tok_s / 2


async def test_a_valid_field_applies_beside_an_invalid_one_and_closing_says_what_stayed(make_app) -> None:
    from textual.widgets import Input, Label

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        main = app.screen
        await pilot.press("a")
        await pilot.pause()
        editor = app.screen
        editor.query_one("#kv_cache_dtype", Input).value = "foo"
        editor.query_one("#prefix_reuse", Input).value = "0.5"
        await pilot.pause()
        assert main.scenario.workload.prefix_reuse == 0.5  # applied, though another field does not parse
        error = editor.query_one("#kv_cache_dtype-error", Label)
        # The whole sentence wraps inside the panel: the valid dtypes are readable.
        assert error.display and error.region.height >= 2 and error.region.width <= editor.query_one(
            "#assumptions").region.width
        assert "use one of auto" in str(error.render())
        notices = []
        app.notify = lambda message, **kw: notices.append((message, kw.get("title")))  # type: ignore[method-assign]
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is main and main.scenario.settings.kv_cache_dtype is None
        assert notices and notices[0][1] == "Not applied"
        assert notices[0][0].startswith("KV cache dtype stays per recipe ('foo' is not a KV dtype; use one of auto")


async def test_batched_tokens_are_held_against_the_streams_in_force_and_closing_names_both(make_app) -> None:
    """Streams typed invalid still leave 8 in force: 4 batched tokens cannot hold them, so neither changes, and the
    notice on closing names both fields."""
    from textual.widgets import Input

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        main = app.screen
        await pilot.press("a")
        await pilot.pause()
        editor = app.screen
        editor.query_one("#streams", Input).value = "8"
        await pilot.pause()
        assert main.scenario.workload.streams == 8
        editor.query_one("#batched_tokens", Input).value = "4"
        editor.query_one("#streams", Input).value = "x"
        await pilot.pause()
        assert main.scenario.settings.batched_tokens is None and main.scenario.workload.streams == 8
        editor.query_one("#streams", Input).value = "1"
        await pilot.pause()
        assert (main.scenario.settings.batched_tokens, main.scenario.workload.streams) == (4, 1)
        editor.query_one("#streams", Input).value = "8"
        await pilot.pause()
        assert main.scenario.workload.streams == 1  # 4 batched tokens cannot hold 8 streams: neither applies
        notices = []
        app.notify = lambda message, **kw: notices.append(message)  # type: ignore[method-assign]
        await pilot.press("escape")
        await pilot.pause()
        assert notices and "Streams at once stays 1 (" in notices[0] and "Batched tokens stays 4 (" in notices[0]
