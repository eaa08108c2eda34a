"""`ProbeStatus`: one line saying whether vLLM is up, what it serves, how its prefix cache
does since the last poll, and where Claude Code points.

A worker polls every few seconds with async httpx (timeouts on every call) and posts the
result; the screen never waits for the network. The vLLM URL comes from
$SPARKADVISOR_VLLM_URL (default http://127.0.0.1:8000), so the widget needs no arguments;
SPARKADVISOR_PROBE=off stops the polling (snapshot tests, machines without a server).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from sparkadvisor.core.safetext import safe_text
from sparkadvisor.urls import redact_urls

if TYPE_CHECKING:
    from sparkadvisor.core.metrics import MetricsWindow
    from sparkadvisor.core.workload import Workload
    from sparkadvisor.sources.probe import QuickCheck

PROBE_SWITCH_ENV = "SPARKADVISOR_PROBE"
POLL_SECONDS = 5.0
TIMEOUT_SECONDS = 2.0
SEVERITIES = ("ok", "warning", "critical")


def status_text(check: QuickCheck, since_last: MetricsWindow | None,
                workload: Workload | None = None) -> tuple[str, str]:
    """The line and its severity ("ok", "warning" or "critical") for one poll: the probe's findings
    against the workload (core.checkup, the same as `sparkadvisor probe`) first, most severe first."""
    from sparkadvisor.core.checkup import most_severe_first, workload_findings, worst
    from sparkadvisor.core.workload import AGENTIC

    claude, claude_severity = _claude_part(check)
    if not check.up:
        return f"vLLM down at {check.vllm_url}: {check.problem} · {claude}", "critical"
    findings = [f for f in most_severe_first(workload_findings(workload or AGENTIC, check.served, since_last))
                if f.brief and f.severity in ("warning", "critical")]
    parts = [f.brief for f in findings]
    parts.append(f"vLLM up · {check.served.id if check.served else 'serving ?'}")
    if check.served and check.served.max_model_len:
        parts.append(f"{check.served.max_model_len:,} ctx")
    if since_last is not None:
        parts += [p for p in _metrics_parts(since_last) if not any(f.brief.startswith(p.split()[0]) for f in findings)]
    parts.append(claude)
    severity = max(worst(findings), claude_severity, key=SEVERITIES.index)
    return " · ".join(parts), severity


def _metrics_parts(m: MetricsWindow) -> list[str]:
    rate = m.prefix_cache_hit_rate
    parts = [f"prefix hits {rate:.0%}" if rate is not None else "prefix hits - (idle)"]
    if m.kv_cache_usage is not None:
        parts.append(f"KV {m.kv_cache_usage:.0%}")
    parts.append(f"{m.requests_running or 0:.0f} running, {m.requests_waiting or 0:.0f} waiting")
    return parts


def _claude_part(check: QuickCheck) -> tuple[str, str]:
    if check.claude_target == "cloud":
        return "Claude Code -> cloud!", "critical"
    if check.claude_target_up is False:
        return f"Claude Code -> {check.claude_target} (down!)", "critical"
    return f"Claude Code -> {check.claude_target}", "ok"


def _import_quick_check():
    """The probe, imported off the event loop (httpx takes ~150 ms to import)."""
    from sparkadvisor.sources.probe import quick_check

    return quick_check


FIRST_POLL_SECONDS = 0.5
"""The first poll waits until the table is on screen."""


class ProbeStatus(Static):
    """The service's status in one line, refreshed every few seconds without blocking the screen."""

    DEFAULT_CSS = """
    ProbeStatus { height: 1; width: 1fr; padding: 0 1; color: $text-muted; }
    ProbeStatus.-ok { color: $success; }
    ProbeStatus.-warning { color: $warning; }
    ProbeStatus.-critical { color: $error; }
    """

    status: reactive[str] = reactive("probing vLLM...")
    """The line shown."""

    class Checked(Message):
        """A poll finished: the line to show and how serious it is."""

        def __init__(self, text: str, severity: str) -> None:
            self.text = text
            self.severity = severity
            super().__init__()

    def __init__(self, url: str | None = None, poll_s: float = POLL_SECONDS, timeout_s: float = TIMEOUT_SECONDS,
                 claude_settings: Path | None = None, *, id: str | None = None, classes: str | None = None) -> None:
        from sparkadvisor.sources import default_vllm_url
        from sparkadvisor.urls import UrlError

        super().__init__("probing vLLM...", markup=False, id=id, classes=classes)
        try:
            self.url, self.url_problem = url or default_vllm_url(), None
        except UrlError as error:
            self.url, self.url_problem = "", str(error)
        self.poll_s = poll_s
        self.timeout_s = timeout_s
        self.claude_settings = claude_settings
        self.workload: Workload | None = None
        """The workload the findings are judged against (the screen's; agentic until it says)."""
        self._last: QuickCheck | None = None

    def on_mount(self) -> None:
        if os.environ.get(PROBE_SWITCH_ENV, "").lower() in ("off", "0", "no"):
            self.status = f"service probe off ({PROBE_SWITCH_ENV})"
            return
        if self.url_problem:
            self.post_message(self.Checked(self.url_problem, "critical"))
            return
        # The first poll waits for the first frame: importing httpx must not delay the table.
        self.set_timer(FIRST_POLL_SECONDS, self.poll)
        self.set_interval(self.poll_s, self.poll)

    @work(exclusive=True, group="probe-status")
    async def poll(self) -> None:
        """One quick check; a new poll cancels one still waiting."""
        from sparkadvisor.core.metrics import window

        quick_check = await asyncio.to_thread(_import_quick_check)

        check = await quick_check(self.url, self.timeout_s, self.claude_settings)
        last, self._last = self._last, check
        since_last = None
        if last is not None and last.scrape is not None and check.scrape is not None:
            since_last = window(last.scrape, check.scrape, round(check.scraped_at - last.scraped_at, 1))
        self.post_message(self.Checked(*status_text(check, since_last, self.workload)))

    def on_probe_status_checked(self, message: ProbeStatus.Checked) -> None:
        message.stop()
        self.status = message.text
        for severity in SEVERITIES:
            self.set_class(severity == message.severity, f"-{severity}")

    def watch_status(self, text: str) -> None:
        self.update(safe_text(redact_urls(text)))
