"""Every key of the main screen, driven through the Pilot (each test presses only its own keys).

`type_at_once` posts keys the way a terminal delivers a burst (tmux send-keys, a fast
typist): all before the app has handled the first, so nothing waits for a widget.
"""

from __future__ import annotations

import asyncio
import re

import pytest
from textual import events
from textual.widgets import Input, Label, OptionList, TextArea

from sparkadvisor.state import load_state
from sparkadvisor.tui.layout import LABELS
from sparkadvisor.tui.screens.main import PRECOMPUTE_DELAY_S

from .helpers import cell, row_ids, screen_lines

SIZE = (140, 40)
QWEN = "qwen3.8-flash-next-nvfp4"
GLM = "glm-5.3-flash-nvfp4-redhat"


def header_text(app) -> str:
    return str(app.screen.query_one("#cluster-header").render())


def seconds(text: str) -> float:
    """"37 s", "4.3 s" or "2 min 05 s" as seconds."""
    parts = text.replace(" s", "").split(" min ")
    return float(parts[0]) * 60 + float(parts[1]) if len(parts) == 2 else float(parts[0])


async def type_at_once(app, pilot, *keys: str) -> None:
    """Post every key before any is handled, then let the app catch up."""
    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))
    for _ in range(len(keys) + 2):  # each key's messages (key, change, re-rank) settle in turn
        await pilot.pause()


async def test_w_toggles_the_workload_and_reranks_in_place(make_app) -> None:
    app = make_app("agentic")
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.table
        assert "Agentic (Claude Code)" in header_text(app)
        agentic = row_ids(table)
        assert agentic.index(QWEN) > agentic.index(GLM)
        assert seconds(cell(table, QWEN, "ttft")) > 20
        table.move_to(agentic.index(QWEN))
        await pilot.press("w")
        assert "Chat" in header_text(app) and "Agentic" not in header_text(app)
        chat = row_ids(table)
        assert chat != agentic and sorted(chat) == sorted(agentic)
        assert [r.plan.build.id for r in app.screen.ranking.ranked] == chat
        assert seconds(cell(table, QWEN, "ttft")) < 10
        assert table.highlighted_build == QWEN and app.screen.table is table
    assert load_state().workload == "chat"


@pytest.mark.parametrize("key", ["1", "4"])
async def test_number_keys_set_the_node_count(make_app, key: str) -> None:
    app = make_app(nodes=2)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key)
        assert header_text(app).startswith(f"{key} x DGX Spark")
        assert f"▶ {key} " in app.screen.query_one("#detail").text
        fits_on_four = cell(app.screen.table, "deepseek-v4.1-flash", "rank") != "-"
        assert fits_on_four is (key == "4")
    assert load_state().nodes == int(key)


async def test_at_80_by_24_a_build_the_new_count_rules_out_gives_the_cursor_to_the_top(make_app) -> None:
    app = make_app(nodes=2)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.table
        assert table.highlighted_build == GLM and cell(table, GLM, "rank") == "1"
        await pilot.press("1")
        # GLM needs two nodes: the cursor goes to the best build for one, and the view shows the top.
        top = app.screen.ranking.ranked[0].plan.build.id
        assert cell(table, GLM, "rank") == "-" and cell(table, top, "rank") == "1"
        assert table.cursor == 0 and table.highlighted_build == top and table.scroll_offset.y == 0
        assert screen_lines(table)[1].split()[0] == "1"
        assert app.screen.query_one("#detail").text.count(app.screen.ranking.by_id[top].plan.model.name) >= 1
        # A build that still fits keeps the cursor through the change, wherever it now ranks.
        kept = app.screen.ranking.ranked[5].plan.build.id
        table.move_to(row_ids(table).index(kept))
        await pilot.press("2")
        assert table.highlighted_build == kept and cell(table, kept, "rank") != "-"
        row = table.cursor - table.scroll_offset.y + 1
        assert 1 <= row < table.scrollable_content_region.height


async def test_2_and_3_set_the_node_count(make_app) -> None:
    app = make_app(nodes=1)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        assert header_text(app).startswith("3 x DGX Spark")
        await pilot.press("2")
        assert header_text(app).startswith("2 x DGX Spark: 243.2 GiB in all, 273 GB/s each")


async def test_5_to_8_set_the_node_count_where_the_hardware_sweeps_that_far(make_app) -> None:
    app = make_app(nodes=2)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("8")
        # DGX Spark's catalog entry sweeps 4 nodes: the key says so and changes nothing.
        assert header_text(app).startswith("2 x DGX Spark")
        app.screen.set_hardware("rtx-pro-6000")
        await pilot.pause()
        await pilot.press("8")
        assert header_text(app).startswith("8 x NVIDIA RTX PRO 6000")
        await pilot.press("5")
        assert header_text(app).startswith("5 x NVIDIA RTX PRO 6000")
    assert load_state().nodes == 5


async def test_h_picks_the_hardware_and_the_view_goes_to_the_top(make_app, extra_hardware_catalog) -> None:
    app = make_app(nodes=4, catalog_paths=[extra_hardware_catalog])
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.table
        table.move_to(30)
        await pilot.press("h")
        choice = app.screen.query_one(OptionList)
        assert choice.has_focus
        prompts = [str(choice.get_option_at_index(i).prompt) for i in range(choice.option_count)]
        choice.highlighted = next(i for i, prompt in enumerate(prompts) if "Big Box" in prompt)
        await pilot.press("enter")
        assert header_text(app).startswith("2 x Big Box")
        assert table.cursor == 0 and table.scroll_offset.y == 0
    assert load_state().hardware == "big-box"


async def test_a_takes_digits_typed_at_once_and_marks_bad_input(make_app) -> None:
    app = make_app("agentic")
    async with app.run_test(size=SIZE) as pilot:
        before = cell(app.screen.table, QWEN, "ttft")
        await type_at_once(app, pilot, "a", "5", "0", "0", "0", "0")
        editor = app.screen
        field = editor.query_one("#context_tokens", Input)
        assert field.has_focus and field.value == "50000"
        await pilot.pause()
        main = app.screen_stack[-2]
        assert "50,000 tokens" in str(main.query_one("#cluster-header").render())
        assert cell(main.table, QWEN, "ttft") != before
        field.value = "lots"
        await pilot.pause()
        assert field.has_class("-invalid")
        assert "'lots' is not a whole number" in str(editor.query_one("#context_tokens-error", Label).render())
        assert "50,000 tokens" in str(main.query_one("#cluster-header").render())
        field.value = "99999999999999999999999"
        await pilot.pause()
        assert "must be at most 100,000,000 tokens" in str(editor.query_one("#context_tokens-error", Label).render())
        assert "50,000 tokens" in str(main.query_one("#cluster-header").render())
        editor.query_one("#kv_cache_dtype", Input).value = "fp4-ish"
        await pilot.pause()
        assert "not a KV dtype" in str(editor.query_one("#kv_cache_dtype-error", Label).render())


async def test_a_sets_streams_engine_and_mode_and_refuses_what_no_engine_takes(make_app) -> None:
    app = make_app("agentic")
    async with app.run_test(size=SIZE) as pilot:
        main = app.screen
        single = cell(main.table, GLM, "expected")
        await pilot.press("a")
        editor = app.screen
        editor.query_one("#streams", Input).value = "4"
        await pilot.pause()
        assert "4 streams" in str(main.query_one("#cluster-header").render())
        assert cell(main.table, GLM, "expected") != single
        editor.query_one("#streams", Input).value = "1"
        editor.query_one("#enforce_eager", Input).value = "graphs"  # its recipe runs --enforce-eager
        await pilot.pause()
        assert main.scenario.settings.enforce_eager is False
        assert int(cell(main.table, GLM, "expected").split()[0]) > int(single.split()[0]), "graphs save eager's cost"
        editor.query_one("#enforce_eager", Input).value = "fast"
        editor.query_one("#engine", Input).value = "tensorrt"
        await pilot.pause()
        mode_error = str(editor.query_one("#enforce_eager-error", Label).render())
        assert "'fast' is not a mode; use eager or graphs" in mode_error
        assert "'tensorrt' is not an engine; use one of vllm" in str(editor.query_one("#engine-error", Label).render())
        assert main.scenario.settings.enforce_eager is False, "a bad value changes nothing"
        editor.query_one("#enforce_eager", Input).value = ""
        editor.query_one("#engine", Input).value = "llama.cpp"
        await pilot.pause()
        assert main.scenario.settings.engine == "llama.cpp" and main.scenario.settings.enforce_eager is None


async def test_tab_typed_at_once_after_a_moves_to_the_next_field_before_the_digits(make_app) -> None:
    app = make_app("agentic")
    async with app.run_test(size=SIZE) as pilot:
        await type_at_once(app, pilot, "a", "tab", "5", "0", "%", "tab", "tab", "shift+tab", "9")
        editor = app.screen
        assert editor.query_one("#context_tokens", Input).value == "100000", "the digits were meant for the next field"
        assert editor.query_one("#prefix_reuse", Input).value == "50%"
        output = editor.query_one("#output_tokens", Input)
        assert output.has_focus and output.value == "9"


async def test_a_tab_kept_before_the_dialog_was_ready_moves_the_focus_when_replayed(make_app) -> None:
    from sparkadvisor.tui.screens.assumptions import AssumptionsScreen

    app = make_app("agentic")
    async with app.run_test(size=SIZE) as pilot:
        main = app.screen
        editor = AssumptionsScreen(main.scenario.workload, main.scenario.settings, None, main.set_assumptions)
        typed = ["tab", "7", "0", "%", "shift+tab", "8"]
        editor.early_keys.extend(events.Key(k, k if len(k) == 1 else None) for k in typed)
        app.push_screen(editor)
        await pilot.pause()
        assert editor.query_one("#prefix_reuse", Input).value == "70%"
        context = editor.query_one("#context_tokens", Input)
        assert context.has_focus and context.value == "8"


async def test_a_minimum_capability_hides_weaker_and_unscored_builds_and_says_so(make_app) -> None:
    app = make_app("agentic")
    async with app.run_test(size=SIZE) as pilot:
        main = app.screen
        total = main.table.row_count
        await pilot.press("a")
        editor = app.screen
        editor.query_one("#min_capability", Input).value = "90%"
        await pilot.pause()
        shown = row_ids(main.table)
        assert GLM in shown and QWEN not in shown, "Qwen3.8-Flash-Next has no sourced score: unknown is not a pass"
        capabilities = [main.ranking.by_id[b].capability for b in shown]
        assert capabilities and all(c is not None and c >= 0.9 for c in capabilities)
        assert f"Candidates ({len(shown)} of {total})" in main.table.border_title
        assert "capability >= 90%" in main.table.border_title
        editor.query_one("#min_capability", Input).value = "lots"
        await pilot.pause()
        assert "'lots' is not a number" in str(editor.query_one("#min_capability-error", Label).render())
        assert len(row_ids(main.table)) == len(shown), "a value that does not parse changes nothing"
        editor.query_one("#min_capability", Input).value = ""
        await pilot.pause()
        assert main.table.row_count == total and "capability" not in main.table.border_title


async def test_slash_takes_text_typed_at_once_and_escape_clears(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        total = app.screen.table.row_count
        await type_at_once(app, pilot, "slash", *"flash")
        box = app.screen.query_one("#filter", Input)
        assert box.display and box.has_focus and box.value == "flash"
        shown = sorted(row_ids(app.screen.table))
        assert QWEN in shown and GLM in shown and "gpt-oss-120b-mxfp4" not in shown
        assert all("flash" in app.screen.ranking.by_id[b].plan.model.name.lower() for b in shown)
        assert f"Candidates ({len(shown)} of {total})" in app.screen.table.border_title
        await pilot.press("escape")
        assert app.screen.table.row_count == total and not box.display


async def test_the_footer_says_what_enter_and_esc_do_in_the_filter(make_app) -> None:
    from sparkadvisor.tui.widgets.footer import KeyFooter

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        footer = app.screen.query_one(KeyFooter)
        await pilot.press("slash", "w")
        await pilot.pause()
        shown = [k.description for k in footer.items()]
        assert "Keep filter" in shown and "Clear filter" in shown and "Workload" not in shown
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.filter_text == "w" and "Workload" in [k.description for k in footer.items()]


async def test_a_filter_that_matches_nothing_clears_the_detail_pane(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await type_at_once(app, pilot, "slash", *"zzzz")
        screen = app.screen
        total = len(screen.ranking.ranked)
        assert screen.table.row_count == 0 and f"Candidates (0 of {total})" in screen.table.border_title
        assert screen.query_one("#detail").text.strip() == "No build matches 'zzzz'."


async def test_s_sorts_by_a_chosen_column_and_the_view_goes_to_the_top(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.table
        table.move_to(30)
        await pilot.press("s")
        choice = app.screen.query_one(OptionList)
        choice.highlighted = [o.id for o in choice.options].index("kv_pool")
        await pilot.press("enter")
        screen = app.screen
        assert row_ids(table) == screen.ranking.ordered("kv_pool")
        assert "sorted by KV pool ▲" in table.border_title
        assert table.cursor == 0 and table.scroll_offset.y == 0
        assert "KV pool▲" in screen_lines(table)[0], "the sorted column is on screen, even at 80 columns"


async def test_clicking_a_header_sorts_and_again_reverses(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.table
        x = screen_lines(table)[0].index("turn")
        await pilot.click("#candidates", offset=(x + 2, 1))
        assert "sorted by turn ▲" in table.border_title
        turns = [app.screen.ranking.by_id[b].plan.turn_s for b in row_ids(table)[:8]]
        assert turns == sorted(turns)
        await pilot.click("#candidates", offset=(x + 2, 1))
        assert "sorted by turn ▼" in table.border_title


async def test_rows_move_with_arrows_vi_keys_pages_and_ends(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.table
        last = table.row_count - 1
        page = table.scrollable_content_region.height - 2
        expected = {"down": 1, "j": 2, "k": 1, "up": 0, "pagedown": page, "pageup": 0, "end": last, "home": 0,
                    "G": last, "g": 0}
        for key, row in expected.items():
            await pilot.press(key)
            assert table.cursor == row, key
        await pilot.press("G")
        assert table.highlighted_build in screen_lines(table)[-1] or \
            app.screen.ranking.cells[table.highlighted_build]["model"][:10] in screen_lines(table)[-1]
        assert app.screen.query_one("#detail").text.startswith(
            app.screen.ranking.by_id[table.highlighted_build].plan.model.name)


@pytest.mark.parametrize("key", ["down", "w", "3"])
async def test_the_first_frame_after_a_key_paints_everything_the_key_changes(make_app, key) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        painted: list[set[int]] = []
        show = app._display  # textual 8.2: called once per frame put out (no frame: the test fails)

        def display(screen, update) -> None:
            show(screen, update)
            spans = getattr(update, "spans", None)  # a partial update: (y, x1, x2) of each line it repaints
            painted.append({y for y, _, _ in spans} if spans is not None else set(range(SIZE[1])))

        app._display = display
        await asyncio.sleep(PRECOMPUTE_DELAY_S + 0.05)  # idle, as between a person's keys
        await app.workers.wait_for_complete()
        before = app.screen.table.highlighted_build
        painted.clear()
        await pilot.press(key)
        await pilot.pause()
        build = app.screen.table.highlighted_build
        assert (build != before) == (key == "down")
        detail = app.screen.query_one("#detail")
        assert app.screen.ranking.by_id[build].plan.build.repo in " ".join(screen_lines(detail)[:3])
        pane = set(detail.region.line_range)
        assert painted and pane <= painted[0], "the detail pane is painted with the table, not a frame later"
        assert set().union(*painted) == painted[0], "the key's first frame paints all it changes"


async def test_a_cursor_move_redraws_the_rows_it_left_and_reached(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.table
        for key in ("down", "down", "up", "end", "home"):
            await pilot.press(key)
            drawn = app.export_screenshot()  # the frame from the lines kept since the last repaint
            table.refresh()
            await pilot.pause()
            assert app.export_screenshot() == drawn, key


async def test_enter_opens_the_build_full_screen_and_escape_returns(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        assert type(app.screen).__name__ == "BuildScreen"
        text = app.screen.query_one("#build-document").text
        for words in ("The arithmetic", "The same build on 1-4 nodes", "Caveats (6)", "source: ", "Recipes"):
            assert words in text
        await pilot.press("escape")
        assert type(app.screen).__name__ == "MainScreen" and app.screen.table.highlighted_build == GLM


async def test_r_in_a_build_follows_its_next_recipe_and_the_table_ranks_with_it(make_app) -> None:
    # DeepSeek-V4-Flash-0731 has three recipes on two Sparks; `r` in its full-screen view follows the next
    # one: the arithmetic, the "in use" mark and the table behind it change with it, and the header says so.
    build = "deepseek-v4-flash-0731-stack"
    app = make_app()
    async with app.run_test(size=(200, 50)) as pilot:
        main = app.screen
        main.open_build(build)
        await pilot.pause()
        screen = app.screen
        assert screen.item.plan.recipe.id == "deepseek-v4-flash-article-tp2"
        assert "r Recipe" in " ".join(screen_lines(screen.query_one("KeyFooter")))
        await pilot.press("r")
        await pilot.pause()
        assert screen.item.plan.recipe.id == "deepseek-v4-flash-0731-miaai-tp2"
        text = screen.query_one("#build-document").text
        assert "● in use MiaAI-Lab: DeepSeek-V4-Flash-0731" in text and "Measured 75.4 tok/s" in text
        assert main.ranking.by_id[build].plan.recipe.id == "deepseek-v4-flash-0731-miaai-tp2"
        assert "recipe deepseek-v4-flash-0731-miaai-tp2" in str(main.query_one("ClusterHeader").visual)
        assert str(screen.query_one("#build-document").border_subtitle).endswith(
            "200 out · recipe deepseek-v4-flash-0731-miaai-tp2")  # this view's own line says it too
        await pilot.press("r", "r")
        await pilot.pause()
        assert screen.item.plan.recipe.id == "deepseek-v4-flash-article-tp2"  # round the three
        await pilot.press("escape")
        # Back at the advisor's own pick: nothing is named, so the header says no recipe.
        assert main.scenario.settings.recipe is None and "recipe " not in str(main.query_one("ClusterHeader").visual)


async def test_a_followed_recipe_is_dropped_on_a_cluster_it_does_not_run_on(make_app) -> None:
    """MiaAI's recipe is TP2: on one Spark the header no longer names it, as --recipe sets its own cluster."""
    build = "deepseek-v4-flash-0731-stack"
    app = make_app()
    async with app.run_test(size=(200, 50)) as pilot:
        main = app.screen
        main.open_build(build)
        await pilot.pause()
        await pilot.press("r", "escape")
        await pilot.pause()
        assert main.scenario.settings.recipe == "deepseek-v4-flash-0731-miaai-tp2"
        await pilot.press("1")
        await pilot.pause()
        assert main.scenario.nodes == 1 and main.scenario.settings.recipe is None
        assert "recipe " not in str(main.query_one("ClusterHeader").visual)


async def test_r_is_not_offered_for_a_build_with_one_recipe_here(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(200, 50)) as pilot:
        app.screen.open_build("gpt-oss-120b-mxfp4")  # one recipe on two Sparks
        await pilot.pause()
        screen = app.screen
        assert "Recipe" not in " ".join(screen_lines(screen.query_one("KeyFooter")))
        recipe = screen.item.plan.recipe.id
        await pilot.press("r")
        await pilot.pause()
        assert screen.item.plan.recipe.id == recipe


async def test_m_groups_by_model_right_unfolds_left_folds(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.table
        await pilot.press("m")
        models = [app.screen.ranking.model_of[b] for b in row_ids(table)]
        assert len(models) == len(set(models)) < len(app.screen.ranking.ranked) and table.rows[0].build_id == GLM
        assert "by model" in table.border_title and "+2" in screen_lines(table)[1]
        await pilot.press("right")
        assert [r.kind for r in table.rows[:3]] == ["model", "member", "member"]
        await pilot.press("down", "left")
        assert table.rows[1].kind == "model" and table.cursor == 0


async def test_v_shows_every_column_and_scrolls_with_rank_model_build_fixed(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.table
        assert "per_node" not in table.layout_now.keys
        await pilot.press("v")
        assert "per_node" in table.layout_now.keys and "wide" in table.border_title
        labels = {label: key for key, label in LABELS.items()}
        seen: set[str] = set()
        for _ in range(12):
            await pilot.press("right")
            lines = screen_lines(table)
            assert lines[0].split()[:3] == ["#", "model", "build"]
            # Whole columns only: every label is whole, and each row's cells under them are whole.
            rest, shown = lines[0][table.layout_now.fixed_width:], []
            for label in sorted(labels, key=len, reverse=True):
                pattern = r"(?<!\S)" + re.escape(label) + r"[▲▼]?(?!\S)"
                if re.search(pattern, rest):
                    shown.append(labels[label])
                    rest = re.sub(pattern, " " * len(label), rest)
            assert not rest.strip(), f"a label cut: {rest.strip()!r}"
            seen.update(shown)
            for line, build_id in zip(lines[1:6], table.shown, strict=False):
                cells = table.ranking.cells[build_id]
                assert all(cells[k].strip() in line for k in shown if k not in ("caveats", "reason", "flags")), line
        assert table.scroll_offset.x > 0 and {"size", "per_node"} <= seen and "flags" not in shown


async def test_space_marks_and_c_compares(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        builds = row_ids(app.screen.table)[:2]
        reasons = [app.screen.ranking.by_id[b].reason for b in builds]
        first, second = (app.screen.ranking.by_id[b].plan.build.repo for b in builds)
        await pilot.press("space", "down", "c")
        assert type(app.screen).__name__ == "CompareScreen"
        text = app.screen.query_one("#compare-document").text
        assert first == "RedHatAI/GLM-5.3-Flash-NVFP4" and first in text and second in text
        assert "1st token, cold" in text and "source: " in text
        words = " ".join(text.split())
        for build, reason in zip(builds, reasons, strict=True):  # each reason whole, not only its clipped cell
            assert f"why {build}: {' '.join(reason.split())}" in words, build


async def test_e_exports_the_highlighted_build_with_the_real_ranking(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        ranking = app.screen.ranking
        first, second = row_ids(app.screen.table)[:2]
        await pilot.press("e")
        export = app.screen
        assert type(export).__name__ == "ExportScreen" and export.plan.build.id == GLM
        assert export.ranked == ranking.ranked
        export.query_one("#export-format").value = "md"
        for _ in range(50):  # the dialog renders the new format once the change reaches it
            await pilot.pause()
            report = export.query_one("#export-text", TextArea).text
            if report.startswith("==> report.md"):
                break
        assert f"- 1. `{first}`" in report and f"- 2. `{second}`" in report and first == GLM


async def test_t_cycles_themes_and_remembers(make_app) -> None:
    app = make_app(theme="dark")
    async with app.run_test(size=SIZE) as pilot:
        seen = [app.theme]
        for _ in app.theme_names:
            await pilot.press("t")
            seen.append(app.theme)
        assert set(seen) >= {"dark", "light", "high-contrast"} and seen[-1] == "dark"
        await pilot.press("t")
    assert load_state().theme == app.theme != "dark"


async def test_question_mark_opens_help_with_the_legend(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.pause()
        text = " ".join(" ".join(str(s.render()).split()) for s in app.screen.query("Static"))
        for words in ("Switch between the agentic", "[measured]", "✖", "▲", "•", "679k*", "fits +X GiB",
                      "57.54↑", "outside the low-high range predicted at its own context", "≤98 ≥18 s", "Home End g G",
                      "[assumed] this project's assumption; the assumptions dialog (key a) edits it",
                      "b Bench Measure the served build on your cluster"):
            assert words in text, words
        legend = app.screen.query_one("Legend")
        lines = [line for line in str(legend.render()).splitlines() if line.strip()]
        assert all(len(line) <= legend.content_size.width for line in lines)
        assert any(line.startswith(" " * 28) for line in lines), "a long text wraps under itself"
        await pilot.press("question_mark")
        assert type(app.screen).__name__ == "MainScreen"


def test_a_basis_meaning_wraps_under_itself_in_a_narrow_help() -> None:
    """At 80 columns "[estimated] ... calibrated on measured" went on with "recipes" at the left edge."""
    from sparkadvisor.tui.screens.help import basis_legend

    lines = str(basis_legend()._content(66)).splitlines()  # the help's text width at 80 columns
    assert len(lines) > 6 and all(line.startswith(("[", " " * 12)) for line in lines), lines


async def test_tab_moves_focus_and_the_focused_pane_has_the_heavy_border(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        table, detail = app.screen.table, app.screen.query_one("#detail")
        assert table.has_focus and table.styles.border_top[0] == "heavy" and detail.styles.border_top[0] == "round"
        await pilot.press("tab")
        assert detail.has_focus and detail.styles.border_top[0] == "heavy" and table.styles.border_top[0] == "round"


async def test_q_quits(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 0


@pytest.mark.parametrize(("width", "title"), [
    (80, f"{GLM} · 2 x DGX Spark"), (120, f"{GLM} · 2 x DGX Spark: 243.2 GiB in all, 273 GB/s each")])
async def test_the_build_screens_title_is_whole_at_every_width(make_app, width, title) -> None:
    app = make_app()
    async with app.run_test(size=(width, 24)) as pilot:
        await pilot.press("enter")
        assert str(app.screen.query_one("#build-document").border_title) == title


async def test_r_in_a_build_with_only_benchmark_runs_follows_one_and_back(make_app) -> None:
    """vLLM's defaults are a choice beside the benchmark's own settings: `r` follows the run and comes back."""
    app = make_app(nodes=1)
    async with app.run_test(size=(200, 50)) as pilot:
        main_screen = app.screen
        main_screen.open_build("nemotron-3-nano-fp8")
        await pilot.pause()
        screen = app.screen
        assert screen.item.plan.recipe is None
        await pilot.press("r")
        await pilot.pause()
        assert screen.item.plan.recipe.id == "nemotron-3-nano-fp8-djangodevreng-tp1"
        followed = main_screen.ranking.by_id["nemotron-3-nano-fp8"].plan.recipe
        assert followed.id == "nemotron-3-nano-fp8-djangodevreng-tp1"
        await pilot.press("r")
        await pilot.pause()
        assert screen.item.plan.recipe is None and main_screen.scenario.settings.recipe is None
