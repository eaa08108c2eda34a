"""Bench the served build from the app: the same run as `sparkadvisor bench`, on the
cluster and workload on screen, with a progress bar; Record adds it to the user's catalog.

The run is an async worker on the app's loop (httpx is async); it only posts messages and
the screen updates its widgets from them. Esc stops it; nothing is recorded unless asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Label, ProgressBar, Static

from sparkadvisor.core.safetext import safe_text
from sparkadvisor.sources import VLLM_URL_ENV
from sparkadvisor.tui.widgets.footer import KeyFooter

if TYPE_CHECKING:
    from sparkadvisor.benchsession import BenchOptions, BenchSession, Progress
    from sparkadvisor.core.catalog import CatalogIndex


class BenchScreen(ModalScreen[str | None]):
    """Dismissed with the build id when a run was recorded (the app then reloads), else None."""

    CSS_PATH = "bench.tcss"
    BINDINGS = [
        ("escape", "close", "Close"),
        # The report scrolls with the keys whichever button has focus (a button takes none of them).
        Binding("up", "scroll('scroll_up')", "Scroll up", show=False),
        Binding("down", "scroll('scroll_down')", "Scroll down", show=False),
        Binding("pageup", "scroll('scroll_page_up')", "Page up", show=False),
        Binding("pagedown", "scroll('scroll_page_down')", "Page down", show=False),
        Binding("home", "scroll('scroll_home')", "Top", show=False),
        Binding("end", "scroll('scroll_end')", "Bottom", show=False),
    ]

    @dataclass
    class Moved(Message):
        """The run reached `progress`."""

        progress: Progress

    @dataclass
    class Finished(Message):
        """The run ended: the report's lines, or the sentence that stopped it."""

        lines: list[str]
        error: str | None = None

    def __init__(self, index: CatalogIndex, options: BenchOptions):
        super().__init__()
        self.index, self.options = index, options
        self.session: BenchSession | None = None

    def compose(self) -> ComposeResult:
        from sparkadvisor.benchsession import spec_text

        o = self.options
        what = (f"server at {o.config.vllm_url} on {o.cluster.label}, {o.workload.label}: "
                f"{spec_text(o.spec)}; decode at {', '.join(map(str, o.spec.streams))} streams.")
        with Vertical(id="bench"):
            yield Label("Bench the served build", id="bench-title")
            yield Static(_shown(what), id="bench-what", markup=False)
            yield ProgressBar(total=1, id="bench-progress", show_eta=False)  # still at 0% until Run (None pulses)
            yield Static("Run to measure; Esc to close.", id="bench-status", markup=False)
            with VerticalScroll(id="bench-scroll"):
                yield Static("", id="bench-results", markup=False)
            with Horizontal(id="bench-buttons"):
                # Compact (one line each): at 80x24 the report keeps the rows tall buttons would take.
                yield Button("Run", variant="primary", id="bench-run", compact=True)
                yield Button("Record", id="bench-record", disabled=True, compact=True)
                yield Button("Close", id="bench-close", compact=True)
        yield KeyFooter()  # the dialog's own keys, not the main screen's (which do nothing here)

    def on_mount(self) -> None:
        self.query_one("#bench-run", Button).focus()

    def action_scroll(self, how: str) -> None:
        """Scroll the report without taking the focus from the buttons."""
        getattr(self.query_one("#bench-scroll", VerticalScroll), how)(animate=False)

    @on(Button.Pressed, "#bench-run")
    def start(self) -> None:
        """Measure in the background."""
        from sparkadvisor.benchsession import BenchSession

        self.query_one("#bench-run", Button).disabled = True
        self.query_one("#bench-record", Button).disabled = True
        self.session = BenchSession(self.index, self.options)
        self.query_one(ProgressBar).update(total=None, progress=0)  # pulses until the first step is known
        self._status("Connecting...")
        self.run_bench(self.session)

    @work(exclusive=True, group="bench")
    async def run_bench(self, session: BenchSession) -> None:
        """Every outcome leaves as a Finished message."""
        from sparkadvisor.benchsession import PlanDoesNotFit
        from sparkadvisor.benchtext import lines
        from sparkadvisor.sources.bench import BenchError

        def moved(step: object) -> None:
            if step is not None:
                self.post_message(self.Moved(session.progress(step)))  # type: ignore[arg-type]

        try:
            await session.run(moved)
        except PlanDoesNotFit as error:
            self.post_message(self.Finished([], error.sentence("close this and pick the cluster it runs on "
                                                               "(1-8 nodes, h hardware)")))
            return
        except BenchError as error:
            self.post_message(self.Finished([], in_the_app(str(error))))
            return
        report = lines(session, False, None, False)[:-1]
        self.post_message(self.Finished([line for line in report if not line.startswith("prompts of exactly")]))

    def on_bench_screen_moved(self, message: Moved) -> None:
        from sparkadvisor.core.units import fmt_seconds

        p = message.progress
        self.query_one(ProgressBar).update(total=p.total, progress=p.done)
        left = "time left unknown" if p.step_s is None or p.after_s is None else \
            f"about {fmt_seconds(p.step_s + p.after_s)} left"
        self._status(f"{p.done}/{p.total} {p.label} · {left}")

    def on_bench_screen_finished(self, message: Finished) -> None:
        run = self.query_one("#bench-run", Button)
        run.disabled = False
        bar = self.query_one(ProgressBar)
        if message.error is not None:
            if bar.total is None:  # stopped before the first step: the bar stops pulsing
                bar.update(total=1, progress=0)
            self._status(message.error, error=True)
            run.focus()
            return
        bar.update(total=bar.total or 1, progress=bar.total or 1)
        self.query_one("#bench-results", Static).update(_shown("\n".join(message.lines)))
        measured = self.session is not None and bool(self.session.rows())
        record = self.query_one("#bench-record", Button)
        record.disabled = not measured
        (record if measured else self.query_one("#bench-run", Button)).focus()
        self._status("Done: Record adds these to your catalog." if measured else "Nothing was measured.")

    @on(Button.Pressed, "#bench-record")
    def record(self) -> None:
        """Add the run to the user's catalog and close, so the app re-ranks with it."""
        from sparkadvisor.core.catalog import CatalogError
        from sparkadvisor.sources.bench import BenchError
        from sparkadvisor.usercatalog import UserCatalogError

        if self.session is None:
            return
        try:
            recorded = self.session.record()
        except (BenchError, UserCatalogError) as error:
            self._status(in_the_app(str(error)), error=True)
            return
        except CatalogError as error:
            self._status(f"Not recorded: {error.problems[0]}", error=True)
            return
        build = self.session.match.build if self.session.match else None
        if recorded is not None and build is not None:
            self.notify(safe_text(f"Recorded {recorded.count} measurements as {recorded.recipe_id}."), markup=False)
            self.dismiss(build.id)

    @on(Button.Pressed, "#bench-close")
    def action_close(self) -> None:
        """Stop a run (nothing is recorded) and close."""
        self.workers.cancel_group(self, "bench")
        self.dismiss(None)

    def _status(self, text: str, error: bool = False) -> None:
        status = self.query_one("#bench-status", Static)
        status.update(_shown(text))
        status.set_class(error, "error")


CLI_ADVICE = (("pass --vllm URL", f"set {VLLM_URL_ENV} to its address and start sparkadvisor again"),
              ("pass --build", "run `sparkadvisor bench --build` in a shell"))
"""What the bench's sentences tell a shell user, and what the app's user can do instead (the dialog takes the
server's address from the environment and matches the build from what it serves)."""


def in_the_app(text: str) -> str:
    """A bench sentence with its command-line advice said for the app."""
    for cli, app in CLI_ADVICE:
        text = text.replace(cli, app)
    return text


def _shown(text: str) -> str:
    """Server and catalog text made safe for the screen, with the credentials of any URL in it redacted
    (SPARKADVISOR_VLLM_URL may carry them)."""
    from sparkadvisor.urls import redact_urls

    return safe_text(redact_urls(text), keep_newlines=True)
