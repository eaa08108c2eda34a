"""`sparkadvisor bench`: measure the served build on your own cluster, cold and warm first
token and decode, beside the plan's predictions; `--record` adds the results to your catalog.

Exit 0 when it ran (to the end or to a limit), 1 when the server or catalog stopped it,
2 for bad options, 130 on Ctrl-C (what was measured is shown; nothing is recorded).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from sparkadvisor.commands.common import (
    UsageError,
    add_scenario_options,
    find_build_id,
    load,
    number_above_zero,
    positive_int,
    print_json,
    scenario,
)
from sparkadvisor.commands.probe import _token
from sparkadvisor.inputs import MAX_STREAMS
from sparkadvisor.urls import url_option

if TYPE_CHECKING:
    from sparkadvisor.benchsession import BenchOptions, BenchSession, Progress
    from sparkadvisor.usercatalog import Recorded

MIN_CONTEXT = 64
"""Shortest prompt: room for the salt that makes every cold prompt unique."""


def streams_list(text: str) -> tuple[int, ...]:
    """An argparse type: concurrency levels such as 1,4,8."""
    try:
        values = tuple(sorted({positive_int(part.strip()) for part in text.split(",") if part.strip()}))
    except argparse.ArgumentTypeError:
        values = ()
    if not values or values[-1] > MAX_STREAMS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of stream counts from 1 to {MAX_STREAMS} "
                                         "such as 1,4,8")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vllm", metavar="URL", type=url_option,
                        help="vLLM (or llama-server) base URL (default: $SPARKADVISOR_VLLM_URL or "
                             "http://127.0.0.1:8000)")
    parser.add_argument("--token-env", metavar="NAME", help="environment variable holding the server's "
                        "--api-key (sent as a Bearer token, never printed)")
    parser.add_argument("--model", metavar="NAME", help="served model name (default: the one the server serves)")
    parser.add_argument("--build", metavar="ID", help="the catalog build being served (default: matched from "
                        "what the server loaded)")
    parser.add_argument("--repetitions", type=positive_int, default=3, metavar="N",
                        help="cold/warm pairs (default: 3)")
    parser.add_argument("--streams", type=streams_list, default=(1, 4, 8), metavar="LIST",
                        help="concurrent requests to time decode at (default: 1,4,8)")
    parser.add_argument("--max-seconds", type=number_above_zero(86_400, "seconds"), metavar="SECONDS",
                        help="stop starting new requests after this long, keeping what was measured")
    parser.add_argument("--max-tokens", type=positive_int, metavar="N",
                        help="token budget: most tokens the server is asked to compute (new prompt tokens "
                             "and output)")
    parser.add_argument("--timeout", type=number_above_zero(3600, "seconds"), default=60.0, metavar="SECONDS",
                        help="silence allowed beyond a request's expected time before it counts as stalled "
                             "(default: 60)")
    parser.add_argument("--record", action="store_true", help="add the results to your catalog as measurements "
                        "of this build on this cluster (a second run adds, never replaces)")
    add_scenario_options(parser, streams=False)  # the bench's own --streams lists the concurrencies it runs


def run(args: argparse.Namespace) -> int:
    import asyncio

    from sparkadvisor.benchsession import BenchSession
    from sparkadvisor.core.catalog import CatalogError
    from sparkadvisor.sources.bench import BenchError
    from sparkadvisor.usercatalog import UserCatalogError

    index = load(args)
    session = BenchSession(index, _options(args, index))
    bar = ProgressBar(enabled=sys.stderr.isatty())
    try:
        asyncio.run(session.run(lambda step: bar.show(session.progress(step)) if step else bar.clear()))
        recorded = session.record() if args.record else None
    except (BenchError, UserCatalogError) as error:
        bar.clear()
        # A refusal of the user catalog says itself that nothing was changed.
        tail = "nothing was recorded" if args.record and not isinstance(error, UserCatalogError) else None
        print(f"sparkadvisor: {_joined(_safe(str(error)), tail)}", file=sys.stderr)
        return 1
    except CatalogError:
        bar.clear()
        raise
    except KeyboardInterrupt:
        bar.clear()
        _report(session, args, interrupted=True)
        print(f"sparkadvisor: interrupted after {len(session.collected.results)} of {len(session.steps)} steps; "
              "nothing was recorded", file=sys.stderr)
        return 130
    _report(session, args, recorded=recorded)
    return 0


def _joined(sentence: str, tail: str | None) -> str:
    """`tail` added to `sentence` as its last clause (a server's message may end in its own full stop)."""
    if tail is None:
        return sentence
    body = sentence.rstrip().rstrip(".;:,")
    return f"{body} ({tail})" if body.endswith(("?", "!")) else f"{body}; {tail}"


def _options(args: argparse.Namespace, index: Any) -> BenchOptions:
    from sparkadvisor.benchsession import BenchOptions
    from sparkadvisor.core.bench import BenchSpec
    from sparkadvisor.sources import default_vllm_url
    from sparkadvisor.sources.bench import BenchConfig
    from sparkadvisor.urls import UrlError

    token = _token(args.token_env)
    cluster, workload, settings = scenario(args, index)
    if workload.context_tokens < MIN_CONTEXT:
        raise UsageError(f"--context {workload.context_tokens} is too short to bench; use {MIN_CONTEXT} or more")
    build_id = find_build_id(index, args.build) if args.build else None
    spec = BenchSpec(workload.context_tokens, workload.prefix_reuse, workload.output_tokens, args.repetitions,
                     args.streams)
    try:
        vllm_url = args.vllm or default_vllm_url()
    except UrlError as error:
        raise UsageError(str(error)) from None
    return BenchOptions(BenchConfig(vllm_url, args.model, args.timeout, token), spec, cluster, workload, settings,
                        build_id, args.max_seconds, args.max_tokens)


def _report(session: BenchSession, args: argparse.Namespace, interrupted: bool = False,
            recorded: Recorded | None = None) -> None:
    """JSON; on a terminal lines styled and wrapped as `show` does them; in a pipe or a file one
    plain line per figure."""
    from rich.console import Console
    from rich.text import Text

    from sparkadvisor.benchtext import as_json, report
    from sparkadvisor.render import BASIS_STYLE
    from sparkadvisor.urls import redacted

    if args.json:
        print_json(redacted(as_json(session, interrupted, recorded, args.record)))
        return
    lines = report(session, interrupted, recorded, args.record)
    if not sys.stdout.isatty():  # a pipe or a file: one line per figure, never wrapped (as `show` does)
        sys.stdout.write("".join(_safe(text if basis is None else f"{title} [{basis}] {text}") + "\n"
                                 for title, basis, text in lines))
        return
    console = Console()
    for title, basis, text in lines:
        if basis is None:
            console.print(Text(_safe(text)), highlight=False)
            continue
        body = Text(_safe(f" {text}"))
        body.highlight_words(["OUTSIDE"], "bold red")
        console.print(Text.assemble((_safe(title), "bold"), " ", (f"[{basis}]", BASIS_STYLE[basis]), body),
                      highlight=False)


def _safe(text: str) -> str:
    """Server text made safe for a terminal, with any credentials in URLs redacted."""
    from sparkadvisor.core.safetext import safe_text
    from sparkadvisor.urls import redact_urls

    return safe_text(redact_urls(text))


class ProgressBar:
    """One line on stderr, redrawn in place: the step that runs, steps done, and the time left.
    Only on a terminal, so pipes and files get the report alone."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.label = ""
        self.started = 0.0
        self.shown = False

    def show(self, progress: Progress) -> None:
        import shutil
        import time

        if not self.enabled:
            return
        if progress.label != self.label:
            self.label, self.started = progress.label, time.monotonic()
        elapsed = time.monotonic() - self.started
        left = None if progress.step_s is None or progress.after_s is None else \
            max(progress.step_s - elapsed, 0.0) + progress.after_s
        width = shutil.get_terminal_size((80, 24)).columns
        text = _bar_text(progress.label, progress.done, progress.total, elapsed, left, width)
        sys.stderr.write("\r" + text.ljust(width - 1)[:width - 1])
        sys.stderr.flush()
        self.shown = True

    def clear(self) -> None:
        if self.enabled and self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self.shown = False


def _bar_text(label: str, done: int, total: int, elapsed: float, left: float | None, width: int) -> str:
    from sparkadvisor.core.units import fmt_seconds

    remaining = "time left unknown" if left is None else f"about {fmt_seconds(left)} left"
    tail = f" {done}/{total} {label} · {fmt_seconds(elapsed)} · {remaining}"
    cells = max(min(30, width - len(tail) - 3), 5)
    filled = round(cells * done / total) if total else 0
    return f"[{'#' * filled}{'.' * (cells - filled)}]{tail}"
