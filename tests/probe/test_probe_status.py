"""The TUI's status line: polled by a worker, never blocking the screen."""

from __future__ import annotations

import asyncio
import time

import pytest
from probe_fakes import closed_port_url, vllm_server
from textual.app import App, ComposeResult

from sparkadvisor.core.checkup import ServedModel
from sparkadvisor.sources.probe import QuickCheck
from sparkadvisor.tui.widgets.probe_status import ProbeStatus, status_line, status_text


@pytest.fixture(autouse=True)
def probing_on(monkeypatch) -> None:
    """These tests exercise the polling that the suite otherwise switches off."""
    monkeypatch.delenv("SPARKADVISOR_PROBE", raising=False)


class StatusApp(App[None]):
    def __init__(self, status: ProbeStatus) -> None:
        super().__init__()
        self.status_widget = status

    def compose(self) -> ComposeResult:
        yield self.status_widget


async def _wait_for(widget: ProbeStatus, words: str, limit_s: float = 10.0) -> None:
    deadline = time.monotonic() + limit_s
    while words not in widget.status and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


def test_the_widget_needs_no_arguments(monkeypatch) -> None:
    monkeypatch.setenv("SPARKADVISOR_VLLM_URL", "http://spark1:8000")
    assert ProbeStatus().url == "http://spark1:8000"


def test_status_text_says_what_is_wrong_first() -> None:
    down = QuickCheck("http://127.0.0.1:8000", False, "nothing answers at http://127.0.0.1:8000/health", None, None,
                      0.0, "cloud", None)
    assert status_text(down, None) == ("Claude Code -> cloud! · vLLM down: nothing answers at "
                                       "http://127.0.0.1:8000/health", "critical")
    up = QuickCheck("http://x", True, None, ServedModel("glm", None, 262144), None, 0.0, "gateway", False)
    assert status_text(up, None) == ("Claude Code -> gateway (down!) · vLLM up · glm · 262,144 ctx", "critical")


async def test_the_line_shows_the_hit_rate_between_polls(settings_file) -> None:
    server = vllm_server(hits_per_scrape=300, queries_per_scrape=1000)
    path = settings_file({"ANTHROPIC_BASE_URL": server.url})
    status = ProbeStatus(server.url, poll_s=0.2, timeout_s=2.0, claude_settings=path)
    try:
        async with StatusApp(status).run_test() as pilot:
            await _wait_for(status, "prefix hits 30%", limit_s=10.0)
            await pilot.pause()
            assert status.status == ("prefix hits 30% (agent: ~95%) · vLLM up · RedHatAI/GLM-5.3-Flash-NVFP4 · "
                                     "262,144 ctx · KV 31% · 1 running, 0 waiting · Claude Code -> vllm")
            assert status.has_class("-warning"), "30% is far below what an agent reuses"
    finally:
        server.close()


async def test_polls_share_one_certificate_store(monkeypatch, settings_file) -> None:
    """httpx loads the CA store (~45 ms of CPU) for each client it makes; a poll every few seconds must not."""
    import httpx

    from sparkadvisor.sources import probe

    made: list[object] = []
    real = httpx.create_ssl_context

    def counting(*args, **kwargs):
        made.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(httpx, "create_ssl_context", counting)
    probe.tls_context.cache_clear()
    server = vllm_server()
    path = settings_file({"ANTHROPIC_BASE_URL": server.url})
    try:
        for _ in range(3):
            check = await probe.quick_check(server.url, 2.0, path)
            assert check.up
    finally:
        server.close()
        probe.tls_context.cache_clear()
    assert len(made) == 1
    import ssl
    assert probe.tls_context().verify_mode == ssl.CERT_REQUIRED, "one context, still verifying"


async def test_a_stalled_server_never_blocks_the_screen(settings_file) -> None:
    server = vllm_server(mode="stall")
    status = ProbeStatus(server.url, poll_s=5, timeout_s=3.0, claude_settings=settings_file({}))
    try:
        async with StatusApp(status).run_test() as pilot:
            started = time.monotonic()
            await pilot.press("tab")
            assert time.monotonic() - started < 1.5, "a key is handled while the probe waits its 3 s timeout"
            assert status.status == "probing vLLM..."
            await _wait_for(status, "did not answer")
            assert f"vLLM down: {server.url}/health did not answer within 3 s" in status.status
            assert status.status.startswith("Claude Code -> cloud!") and status.has_class("-critical")
    finally:
        server.close()


async def test_a_closed_port_is_down(settings_file) -> None:
    url = closed_port_url()
    status = ProbeStatus(url, poll_s=5, timeout_s=0.3, claude_settings=settings_file({"ANTHROPIC_BASE_URL": url}))
    async with StatusApp(status).run_test():
        await _wait_for(status, "down")
        assert status.status == (f"Claude Code -> vllm (down!) · vLLM down: nothing answers at {url}/health "
                                 "(connection refused or host unreachable)")


async def test_the_probe_can_be_switched_off(monkeypatch) -> None:
    monkeypatch.setenv("SPARKADVISOR_PROBE", "off")
    status = ProbeStatus(closed_port_url())
    async with StatusApp(status).run_test() as pilot:
        await pilot.pause()
        assert status.status == "service probe off (SPARKADVISOR_PROBE)"
        assert not status.workers


async def test_a_port_that_is_not_vllm_is_down_in_the_line(settings_file) -> None:
    server = vllm_server(mode="other-json")  # it answers: a patient timeout, so it is not "did not answer"
    status = ProbeStatus(server.url, poll_s=5, timeout_s=3.0, claude_settings=settings_file({}))
    try:
        async with StatusApp(status).run_test():
            await _wait_for(status, "down")
            assert f"vLLM down: {server.url}/v1/models did not return vLLM's model list" in status.status
            assert "so this port may not be vLLM" in status.status
    finally:
        server.close()


async def test_a_web_page_is_named_in_the_line(settings_file) -> None:
    server = vllm_server(mode="web-ui")
    status = ProbeStatus(server.url, poll_s=5, timeout_s=3.0, claude_settings=settings_file({}))
    try:
        async with StatusApp(status).run_test():
            await _wait_for(status, "down")
            assert (f"vLLM down: {server.url} answers with an HTML page titled 'Open WebUI' (HTTP 200), not vLLM's API"
                    in status.status)
    finally:
        server.close()


def test_the_status_line_leads_with_the_probes_findings_most_severe_first() -> None:
    from sparkadvisor.core.metrics import Latency, MetricsWindow
    from sparkadvisor.core.workload import AGENTIC, CHAT

    none = Latency(None, None, None, 0, "none")
    window = MetricsWindow(5.0, 0.12, 0.5, 1000.0, 0.3, 1.0, 0.0, none, none, None, None, None, True)
    up = QuickCheck("http://x", True, None, ServedModel("glm-5.3-flash", None, 32768), None, 0.0, "vllm", True)
    line, severity = status_text(up, window, AGENTIC)
    assert severity == "critical"
    assert line.startswith("max_model_len 33k < 100k! · prefix hits 12% (agent: ~95%) · vLLM up · glm-5.3-flash")
    assert line.count("prefix hits") == 1
    assert status_text(up, window, CHAT)[1] == "ok", "a chat workload needs neither the context nor the reuse"


def _low_hit_rate(rate: float = 0.15):
    from sparkadvisor.core.metrics import Latency, MetricsWindow

    none = Latency(None, None, None, 0, "none")
    return MetricsWindow(5.0, rate, 0.5, 1000.0, 0.3, 1.0, 0.0, none, none, None, None, None, True)


def test_at_80_columns_the_line_keeps_the_most_severe_parts_whole() -> None:
    from sparkadvisor.tui.widgets.probe_status import status_line

    down = QuickCheck("http://127.0.0.1:8000", False, "nothing answers at http://127.0.0.1:8000/health (connection "
                      "refused or host unreachable)", None, None, 0.0, "cloud", None)
    fitted = [words for words, _ in status_line(down, None).fitted(78)]
    assert fitted == ["Claude Code -> cloud!", "vLLM down at http://127.0.0.1:8000"], "the URL once, nothing cut"
    up = QuickCheck("http://x", True, None, ServedModel("RedHatAI/GLM-5.3-Flash-NVFP4", None, 32768), None, 0.0,
                    "cloud", None)
    shown = " · ".join(words for words, _ in status_line(up, _low_hit_rate()).fitted(78))
    assert shown.startswith("Claude Code -> cloud! · max_model_len 33k < 100k! · prefix hits 15%")
    assert shown.endswith(" more") and len(shown) <= 78


async def test_each_part_has_its_own_colour() -> None:
    from rich.color import Color

    status = ProbeStatus(closed_port_url())
    up = QuickCheck("http://x", True, None, ServedModel("glm", None, 262144), None, 0.0, "vllm", True)
    app = StatusApp(status)
    async with app.run_test(size=(120, 3)) as pilot:
        status.post_message(ProbeStatus.Checked(status_line(up, _low_hit_rate())))
        await pilot.pause()
        text = status.render()
        colours = {text.plain[span.start:span.end]: span.style.color for span in text.spans}
        theme = app.current_theme

        def near(colour: Color | None, wanted: str | None) -> bool:
            want = Color.parse(wanted or "").get_truecolor()
            got = colour.get_truecolor() if colour is not None else None
            return got is not None and max(abs(a - b) for a, b in zip(got, want, strict=True)) <= 4

        assert near(colours["prefix hits 15% (agent: ~95%)"], theme.warning)
        assert near(colours["vLLM up"], theme.success) and near(colours["Claude Code -> vllm"], theme.success)
        assert "glm" not in colours, "what vLLM serves is plain text"
        assert status.has_class("-warning")



def test_a_served_name_no_catalog_build_matches_is_said_on_the_line(index) -> None:
    """As probe says "no catalog build matches": the screen has no plan for what runs."""
    from sparkadvisor.core.advisor import evaluate_build
    from sparkadvisor.core.plan import Cluster
    from sparkadvisor.core.workload import AGENTIC
    from sparkadvisor.tui.widgets.probe_status import status_line

    up = QuickCheck("http://x", True, None, ServedModel("me/my-finetune", None, 262144), None, 0.0, "vllm", True)
    window = _low_hit_rate(0.95)
    none = status_line(up, window, planner=lambda served, config: ((), None, None))
    assert "me/my-finetune (no catalog build)" in [p.text for p in none.parts]
    plan = evaluate_build(index, index.builds["glm-5.3-flash-nvfp4-redhat"], Cluster(index.hardware["dgx-spark"], 2),
                          AGENTIC)
    one = status_line(up, window, planner=lambda served, config: ((plan,), None, None))
    assert "me/my-finetune" in [p.text for p in one.parts]
