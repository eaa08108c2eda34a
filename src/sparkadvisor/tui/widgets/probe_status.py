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
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import work
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from sparkadvisor.core.safetext import safe_text
from sparkadvisor.urls import redact_urls

if TYPE_CHECKING:
    from sparkadvisor.core.checkup import Replan, Reutilize, ServedModel
    from sparkadvisor.core.metrics import MetricsWindow, ServedConfig
    from sparkadvisor.core.plan import Plan
    from sparkadvisor.core.workload import Workload
    from sparkadvisor.sources.probe import QuickCheck

PROBE_SWITCH_ENV = "SPARKADVISOR_PROBE"
POLL_SECONDS = 5.0
TIMEOUT_SECONDS = 2.0
SEVERITIES = ("ok", "warning", "critical")
ALERTS = ("warning", "critical")
SEPARATOR = " · "

Planner = Callable[["ServedModel", "ServedConfig"], tuple[Sequence["Plan"], "Replan", "Reutilize | None"]]
"""The plans for the builds a served model may be (the screen's catalog, cluster, workload and settings,
narrowed by how vLLM was started), and how to evaluate one at the measured hit rate and at vLLM's
gpu-memory-utilization: the findings `sparkadvisor probe` holds against its plans."""


@dataclass(frozen=True, slots=True)
class Part:
    """One piece of the status line: its words, how serious it is, and fewer words for a narrow line."""

    text: str
    severity: str = "plain"
    """"plain", "ok", "info", "warning" or "critical"."""
    short: str = ""


@dataclass(frozen=True, slots=True)
class StatusLine:
    """A poll's parts, most severe first; what a narrow line leaves out is at the end."""

    parts: tuple[Part, ...]

    @property
    def text(self) -> str:
        return SEPARATOR.join(p.text for p in self.parts)

    @property
    def severity(self) -> str:
        """The worst of the parts ("ok", "warning" or "critical")."""
        return max((p.severity for p in self.parts if p.severity in ALERTS), key=SEVERITIES.index, default="ok")

    def fitted(self, width: int) -> list[tuple[str, str]]:
        """(words, severity) for a line of `width` cells: each part whole or in its short form, in order,
        until one fits in neither; then "+N more" when it fits. Nothing is cut mid-word."""
        shown: list[tuple[str, str]] = []
        used = 0
        for n, part in enumerate(self.parts):
            gap = len(SEPARATOR) if shown else 0
            left = len(self.parts) - n - 1
            more = len(f"{SEPARATOR}+{left} more") if left else 0
            for words in (part.text, part.short):
                if words and used + gap + cell_len(words) + more <= width:
                    shown.append((words, part.severity))
                    used += gap + cell_len(words)
                    break
            else:
                hidden = len(self.parts) - n
                if used + gap + len(f"+{hidden} more") <= width:
                    shown.append((f"+{hidden} more", "plain"))
                return shown
        return shown


def status_line(check: QuickCheck, since_last: MetricsWindow | None, workload: Workload | None = None,
                planner: Planner | None = None) -> StatusLine:
    """The line for one poll: Claude Code going to the cloud first, then the probe's findings against the
    workload and the screen's plans (core.checkup, the same as `sparkadvisor probe`), most severe first,
    then what vLLM serves."""
    from sparkadvisor.core.checkup import most_severe_first, service_findings
    from sparkadvisor.core.workload import AGENTIC

    claude = _claude_part(check)
    lead, tail = ([claude], []) if claude.severity in ALERTS else ([], [claude])
    if not check.up:
        # The problem names the URL it tried; the short form keeps only the URL.
        down = Part(f"vLLM down: {check.problem}", "critical", f"vLLM down at {check.vllm_url}")
        return StatusLine(tuple(lead + [down] + tail))
    asked = bool(planner and check.served and since_last)
    plans, replan, reutilize = (planner(check.served, since_last.config) if planner and check.served and since_last
                                else ((), None, None))
    findings = [f for f in most_severe_first(service_findings(workload or AGENTIC, check.served, since_last,
                                                              plans, replan, reutilize))
                if f.brief and f.severity in ALERTS]
    lead += [Part(f.brief, f.severity, re.sub(r" \([^)]*\)", "", f.brief)) for f in findings]
    parts = lead + [Part(f"{check.served.server if check.served else 'vLLM'} up", "ok")]
    if check.served:
        # A served name no catalog build matches is said, as probe says it: nothing on screen is its plan.
        parts.append(Part(check.served.id + (" (no catalog build)" if asked and not plans else "")))
        if check.served.max_model_len:
            parts.append(Part(f"{check.served.max_model_len:,} ctx"))
    else:
        parts.append(Part("serving ?"))
    if since_last is not None:
        parts += [p for p in _metrics_parts(since_last) if not any(f.brief.startswith(p.text.split()[0])
                                                                   for f in findings)]
    return StatusLine(tuple(parts + tail))


def status_text(check: QuickCheck, since_last: MetricsWindow | None,
                workload: Workload | None = None) -> tuple[str, str]:
    """The whole line and its worst severity ("ok", "warning" or "critical")."""
    line = status_line(check, since_last, workload)
    return line.text, line.severity


def _metrics_parts(m: MetricsWindow) -> list[Part]:
    rate = m.prefix_cache_hit_rate
    parts = [Part(f"prefix hits {rate:.0%}" if rate is not None else "prefix hits - (idle)")]
    if m.kv_cache_usage is not None:
        parts.append(Part(f"KV {m.kv_cache_usage:.0%}"))
    parts.append(Part(f"{m.requests_running or 0:.0f} running, {m.requests_waiting or 0:.0f} waiting"))
    return parts


def _claude_part(check: QuickCheck) -> Part:
    if check.claude_target == "cloud":
        return Part("Claude Code -> cloud!", "critical")
    if check.claude_target_up is False:
        return Part(f"Claude Code -> {check.claude_target} (down!)", "critical", f"Claude -> {check.claude_target}!")
    return Part(f"Claude Code -> {check.claude_target}", "ok")


def _import_quick_check():
    """The probe, imported off the event loop (httpx takes ~150 ms to import)."""
    from sparkadvisor.sources.probe import quick_check

    return quick_check


FIRST_POLL_SECONDS = 0.5
"""The first poll waits until the table is on screen."""


class ProbeStatus(Widget):
    """The service's status in one line, refreshed every few seconds without blocking the screen.
    Each part has its severity's colour; a narrow line keeps the most severe parts (whole)."""

    DEFAULT_CSS = """
    ProbeStatus { height: 1; width: 1fr; padding: 0 1; color: $text-muted; }
    ProbeStatus > .probe-status--ok { color: $success; }
    ProbeStatus > .probe-status--info { color: $text-muted; }
    ProbeStatus > .probe-status--warning { color: $warning; text-style: bold; }
    ProbeStatus > .probe-status--critical { color: $error; text-style: bold; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"probe-status--ok", "probe-status--info", "probe-status--warning",
                                             "probe-status--critical"}

    status: reactive[str] = reactive("probing vLLM...")
    """The whole line (a narrow screen shows the parts that fit; the tooltip has it all)."""

    class Checked(Message):
        """A poll finished: the line to show."""

        def __init__(self, line: StatusLine) -> None:
            self.line = line
            super().__init__()

    def __init__(self, url: str | None = None, poll_s: float = POLL_SECONDS, timeout_s: float = TIMEOUT_SECONDS,
                 claude_settings: Path | None = None, *, id: str | None = None, classes: str | None = None) -> None:
        from sparkadvisor.sources import default_vllm_url
        from sparkadvisor.urls import UrlError

        super().__init__(id=id, classes=classes)
        try:
            self.url, self.url_problem = url or default_vllm_url(), None
        except UrlError as error:
            self.url, self.url_problem = "", str(error)
        self.poll_s = poll_s
        self.timeout_s = timeout_s
        self.claude_settings = claude_settings
        self.workload: Workload | None = None
        """The workload the findings are judged against (the screen's; agentic until it says)."""
        self.planner: Planner | None = None
        """The screen's plans for a served model (adds the first-token cost to a low hit rate)."""
        self.line = StatusLine((Part("probing vLLM..."),))
        self._last: QuickCheck | None = None

    def on_mount(self) -> None:
        if os.environ.get(PROBE_SWITCH_ENV, "").lower() in ("off", "0", "no"):
            self._show(StatusLine((Part(f"service probe off ({PROBE_SWITCH_ENV})"),)))
            return
        if self.url_problem:
            self.post_message(self.Checked(StatusLine((Part(self.url_problem, "critical"),))))
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
        self.post_message(self.Checked(status_line(check, since_last, self.workload, self.planner)))

    def on_probe_status_checked(self, message: ProbeStatus.Checked) -> None:
        message.stop()
        self._show(message.line)

    def _show(self, line: StatusLine) -> None:
        self.line = line
        self.status = line.text
        for severity in SEVERITIES:
            self.set_class(severity == line.severity, f"-{severity}")
        self.tooltip = Content(safe_text(redact_urls(line.text)))  # a str tooltip is markup: a served name may hold [/]
        self.refresh()

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        for n, (words, severity) in enumerate(self.line.fitted(self.content_size.width)):
            if n:
                text.append(SEPARATOR)
            style = self.get_component_rich_style(f"probe-status--{severity}", partial=True) \
                if severity in ("ok", "info", "warning", "critical") else ""
            text.append(safe_text(redact_urls(words)), style)
        return text
