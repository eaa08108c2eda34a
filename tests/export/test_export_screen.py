"""The TUI's export modal: renders the chosen format and writes it into a folder."""

from __future__ import annotations

from contextlib import asynccontextmanager

import pytest
from export_helpers import plan_for, ranked_for
from textual.app import App
from textual.widgets import Input, Label, Select, TextArea
from textual.widgets.select import InvalidSelectValueError

from sparkadvisor.tui.screens.export import ExportScreen


@asynccontextmanager
async def export_dialog(index, build: str, nodes: int):
    """(the export dialog for `build` on `nodes` Sparks, its pilot), open at 80x24."""
    app = App()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = ExportScreen(index, plan_for(index, build, nodes), ranked_for(index, nodes))
        await app.push_screen(screen)
        await pilot.pause()
        yield screen, pilot


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
        await pilot.pause()
        assert f"Wrote 1 file to {tmp_path / 'out'}" in [n.message for n in app._notifications]  # not "1 file(s)"
        screen.action_write()
        await pilot.pause()
        assert any("already exists" in n.message for n in app._notifications)


async def test_address_fields_reach_the_files_and_bad_ones_are_named(index):
    plan = plan_for(index, "glm-5.3-flash-nvfp4-redhat", 2)
    app = App()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = ExportScreen(index, plan, ranked_for(index, 2))
        await app.push_screen(screen)
        screen.query_one("#export-format", Select).value = "claude"
        await pilot.pause()
        text = screen.query_one("#export-text", TextArea)
        assert "head-address-placeholder.invalid" in text.text
        screen.query_one("#export-head", Input).value = "10.1.2.3"
        screen.query_one("#export-gateway", Input).value = "http://user:pw@gw:1"
        await pilot.pause()
        assert text.text.startswith("Cannot export: the gateway URL carries credentials") and "pw" not in text.text
        screen.query_one("#export-gateway", Input).value = ""
        await pilot.pause()
        assert '"ANTHROPIC_BASE_URL": "http://10.1.2.3:8000"' in text.text
        screen.query_one("#export-workers", Input).value = "10.1.2.4, 10.1.2.5"
        await pilot.pause()
        assert "2 worker addresses for 1 worker" in text.text and not screen.files


async def test_the_dialog_says_which_addresses_it_left_out_as_export_does(index, tmp_path):
    async with export_dialog(index, "glm-5.3-flash-nvfp4-redhat", 2) as (screen, pilot):
        notice = screen.query_one("#export-notice", Label)
        assert notice.display and str(notice.render()) == (
            "No head addr or worker addrs: the scripts stop until HEAD_ADDR and NODE_ADDR are set")
        assert notice.size.height <= 2, "at 80 columns it leaves the preview most of the dialog"
        screen.query_one("#export-head", Input).value = "10.1.2.3"
        await pilot.pause()
        assert str(notice.render()) == "No worker addrs: the scripts stop until NODE_ADDR is set"
        screen.query_one("#export-folder", Input).value = str(tmp_path / "out")
        screen.action_write()
        await pilot.pause()
        messages = [n.message for n in screen.app._notifications]
        assert "Wrote 2 files to" in messages[0] and messages[1] == str(notice.render())
        screen.query_one("#export-workers", Input).value = "10.1.2.4"
        await pilot.pause()
        assert not notice.display, "every address given: nothing left out"


async def test_a_refused_write_names_the_dialogs_own_controls_and_the_folder(index, tmp_path):
    plan = plan_for(index, "glm-5.3-flash-nvfp4-redhat", 2)
    (tmp_path / "taken").write_text("a file\n", encoding="utf-8")
    app = App()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = ExportScreen(index, plan, ranked_for(index, 2))
        await app.push_screen(screen)
        await pilot.pause()
        screen.query_one("#export-format", Select).value = "json"
        screen.query_one("#export-folder", Input).value = str(tmp_path / "out")
        await pilot.pause()
        screen.action_write()
        screen.action_write()
        await pilot.pause()
        refused = list(app._notifications)[-1].message
        assert refused == (f"{tmp_path / 'out' / 'plan.json'} already exists; tick overwrite to replace it, "
                           "or choose another folder")
        screen.query_one("#export-folder", Input).value = str(tmp_path / "taken")
        screen.action_write()
        await pilot.pause()
        refused = list(app._notifications)[-1].message
        assert refused == (f"{tmp_path / 'taken'} is a file, not a folder; give the folder to write plan.json "
                           "into"), refused
        assert (tmp_path / "taken").read_text(encoding="utf-8") == "a file\n"


async def test_a_build_that_does_not_fit_says_why_whole_at_80_columns_in_the_apps_words(index):
    async with export_dialog(index, "glm-5.3-flash-nvfp4-redhat", 1) as (screen, _):
        preview = screen.query_one("#export-text", TextArea)
        assert preview.text == ("Cannot export: glm-5.3-flash-nvfp4-redhat does not fit on 1 x DGX Spark: there is "
                                "nothing to launch; it needs 2 nodes (close this and press 2)")
        lines = [preview.render_line(y).text for y in range(preview.scrollable_content_region.height)]
        shown = " ".join(line.strip() for line in lines if line.strip())
        assert shown == preview.text, "wrapped in the preview, not cut at its edge"


async def test_a_llama_cpp_plan_offers_its_own_formats_and_no_vllm_only_controls(index):
    async with export_dialog(index, "deepseek-r1-ud-iq1m-unsloth", 2) as (screen, pilot):
        formats = screen.query_one("#export-format", Select)
        for vllm_only in ("yaml", "compose"):
            with pytest.raises(InvalidSelectValueError):
                formats.value = vllm_only
        sh = next(label for label, value in formats._options if value == "sh")
        assert "llama-server" in str(sh) and "vLLM" not in str(sh)
        assert screen.query_one("#export-launcher", Select).disabled and screen.query_one("#export-nic").disabled
        text = screen.query_one("#export-text", TextArea)
        assert "==> node0-head.sh <==" in text.text and "==> node1-worker.sh <==" in text.text
        screen.query_one("#export-workers", Input).value = "10.0.0.2"
        await pilot.pause()
        assert 'RPC_SERVERS="${RPC_SERVERS:-10.0.0.2:50052}"' in text.text
        assert not screen.query_one("#export-notice", Label).display


async def test_one_machine_offers_no_worker_launcher_or_nic(index):
    async with export_dialog(index, "qwen3.6-35b-a3b-nvfp4-redhat", 1) as (screen, _):
        assert all(screen.query_one(f"#{field}").disabled for field in ("export-workers", "export-launcher",
                                                                         "export-nic"))
        assert not screen.query_one("#export-head").disabled  # Claude Code and the report still name the head
