"""Every key of the main screen, driven through the Pilot (each test presses only its own key)."""

from __future__ import annotations

import types

import pytest
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList, TextArea

from sparkadvisor import paths
from sparkadvisor.core.plan import Plan
from sparkadvisor.state import load_state
from sparkadvisor.tui.screens import main as main_module

from .helpers import EXTRA_BUILD, cell, row_ids

SIZE = (140, 40)
QWEN = "qwen3.8-flash-next-nvfp4"
GLM = "glm-5.3-flash-nvfp4-redhat"


def header_text(app) -> str:
    return str(app.screen.query_one("#cluster-header").render())


def seconds(text: str) -> float:
    """"37 s", "4.3 s" or "2 min 05 s" as seconds."""
    parts = text.replace(" s", "").split(" min ")
    return float(parts[0]) * 60 + float(parts[1]) if len(parts) == 2 else float(parts[0])


async def test_w_toggles_the_workload_and_reranks_without_rebuilding(make_app) -> None:
    app = make_app("agentic")
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.table
        assert "Agentic (Claude Code)" in header_text(app)
        agentic = row_ids(table)
        assert agentic.index(QWEN) > agentic.index(GLM)
        assert seconds(cell(table, QWEN, "ttft")) > 20
        table.move_cursor(row=agentic.index(QWEN))
        rebuilt = []
        table.add_row = lambda *a, **k: rebuilt.append(a)
        table.clear = lambda *a, **k: rebuilt.append(a)
        await pilot.press("w")
        assert "Chat" in header_text(app) and "Agentic" not in header_text(app)
        chat = row_ids(table)
        assert chat != agentic and sorted(chat) == sorted(agentic)
        assert [r.plan.build.id for r in app.screen.ranking.ranked] == chat
        assert seconds(cell(table, QWEN, "ttft")) < 10
        assert table.highlighted_build == QWEN
        assert rebuilt == []
    assert load_state().workload == "chat"


@pytest.mark.parametrize("key", ["1", "4"])
async def test_number_keys_set_the_node_count(make_app, key: str) -> None:
    app = make_app(nodes=2)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key)
        assert header_text(app).startswith(f"{key} x DGX Spark")
        sweep = app.screen.query_one("#sweep")
        assert str(sweep.get_cell(key, "nodes")).strip() == f"▶ {key}"
        fits_on_four = cell(app.screen.table, "deepseek-v4.1-flash", "rank") != "-"
        assert fits_on_four is (key == "4")
    assert load_state().nodes == int(key)


async def test_2_and_3_set_the_node_count(make_app) -> None:
    app = make_app(nodes=1)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        assert header_text(app).startswith("3 x DGX Spark")
        await pilot.press("2")
        assert header_text(app).startswith("2 x DGX Spark · 243.2 GiB · 273 GB/s")


async def test_h_picks_the_hardware(make_app, extra_hardware_catalog) -> None:
    app = make_app(nodes=4, catalog_paths=[extra_hardware_catalog])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("h")
        choice = app.screen.query_one(OptionList)
        prompts = [str(choice.get_option_at_index(i).prompt) for i in range(choice.option_count)]
        choice.highlighted = next(i for i, prompt in enumerate(prompts) if "Big Box" in prompt)
        await pilot.press("enter")
        assert header_text(app).startswith("2 x Big Box")
    assert load_state().hardware == "big-box"


async def test_a_recomputes_as_you_type_and_marks_bad_input(make_app) -> None:
    app = make_app("agentic")
    async with app.run_test(size=SIZE) as pilot:
        before = cell(app.screen.table, QWEN, "ttft")
        await pilot.press("a")
        editor = app.screen
        field = editor.query_one("#context_tokens", Input)
        field.value = "10000"
        await pilot.pause()
        main = app.screen_stack[-2]
        assert "10,000 tokens" in str(main.query_one("#cluster-header").render())
        assert cell(main.table, QWEN, "ttft") != before
        field.value = "lots"
        await pilot.pause()
        assert field.has_class("-invalid")
        assert "'lots' is not a whole number" in str(editor.query_one("#context_tokens-error", Label).render())
        assert "10,000 tokens" in str(main.query_one("#cluster-header").render())
        editor.query_one("#kv_cache_dtype", Input).value = "fp4-ish"
        await pilot.pause()
        assert "not a KV dtype" in str(editor.query_one("#kv_cache_dtype-error", Label).render())


async def test_slash_filters_by_name_and_escape_clears(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash")
        box = app.screen.query_one("#filter", Input)
        assert box.display and box.has_focus
        total = app.screen.table.row_count
        await pilot.press(*"flash")
        shown = sorted(row_ids(app.screen.table))
        assert QWEN in shown and "glm-5.3-flash-nvfp4-redhat" in shown and "gpt-oss-120b-mxfp4" not in shown
        assert all("flash" in app.screen.ranking.by_id[b].plan.model.name.lower() for b in shown)
        assert f"Candidates ({len(shown)} of {total})" in app.screen.table.border_title
        await pilot.press("escape")
        assert app.screen.table.row_count == total and not box.display


async def test_s_sorts_by_a_chosen_column(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s")
        choice = app.screen.query_one(OptionList)
        choice.highlighted = [o.id for o in choice.options].index("ttft")
        await pilot.press("enter")
        screen = app.screen
        expected = sorted(screen.ranking.positions("ttft").items(), key=lambda kv: kv[1])
        assert row_ids(screen.table) == [b for b, _ in expected]
        assert "sorted by 1st token ▲" in screen.table.border_title


async def test_clicking_a_header_sorts_and_again_reverses(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.table
        x = 1 + sum(c.get_render_width(table) for c in table.ordered_columns[:3])
        await pilot.click("#candidates", offset=(x + 2, 1))
        assert "sorted by size ▲" in table.border_title
        sizes = [app.screen.ranking.by_id[b].plan.weights.total_bytes for b in row_ids(table)[:8]]
        assert sizes == sorted(sizes)
        await pilot.click("#candidates", offset=(x + 2, 1))
        assert "sorted by size ▼" in table.border_title


async def test_e_shows_the_plan_as_text_without_an_exporter(make_app, monkeypatch) -> None:
    monkeypatch.setattr(main_module, "optional_module", lambda name: None)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        text = app.screen.query_one(TextArea).text
        assert text.startswith("GLM-5.3-Flash · RedHatAI/GLM-5.3-Flash-NVFP4 · rank 1")
        assert "weights [stated]" in text


async def test_e_opens_the_exporter_when_installed(make_app, monkeypatch) -> None:
    opened = []

    class ExportScreen(ModalScreen[None]):
        def __init__(self, index, plan: Plan):
            super().__init__()
            opened.append(plan.build.id)

    fake = types.SimpleNamespace(ExportScreen=ExportScreen)
    monkeypatch.setattr(main_module, "optional_module", lambda name: fake if name.endswith("export") else None)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        assert isinstance(app.screen, ExportScreen) and opened == [GLM]


async def test_i_imports_and_reloads_the_catalog(make_app, monkeypatch) -> None:
    class HubImportScreen(ModalScreen[str | None]):
        def on_mount(self) -> None:
            paths.user_catalog_path().parent.mkdir(parents=True, exist_ok=True)
            paths.user_catalog_path().write_text(EXTRA_BUILD)
            self.dismiss("glm-5.3-flash-nvfp4-imported")

    fake = types.SimpleNamespace(HubImportScreen=HubImportScreen)
    monkeypatch.setattr(main_module, "optional_module", lambda name: fake if name.endswith("hub_import") else None)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        total = app.screen.table.row_count
        await pilot.press("i")
        await pilot.pause()
        assert app.screen.table.row_count == total + 1
        assert app.screen.table.highlighted_build == "glm-5.3-flash-nvfp4-imported"


async def test_i_without_the_importer_says_so(make_app, monkeypatch) -> None:
    monkeypatch.setattr(main_module, "optional_module", lambda name: None)
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("i")
        assert [n.message for n in app._notifications] == ["Hub import is not part of this install."]


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


async def test_question_mark_opens_help(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert type(app.screen).__name__ == "HelpScreen"
        text = " ".join(str(s.render()) for s in app.screen.query("Static"))
        assert "Switch between the agentic" in text and "[measured]" in text
        await pilot.press("question_mark")
        assert type(app.screen).__name__ == "MainScreen"


async def test_q_quits(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 0
