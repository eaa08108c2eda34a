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
from sparkadvisor.commands.probe import _token, base_url

if TYPE_CHECKING:
    from sparkadvisor.core.bench import BenchSpec, Collected, Figure, Step
    from sparkadvisor.core.benchplan import Prediction
    from sparkadvisor.core.checkup import BuildMatch
    from sparkadvisor.core.plan import Plan
    from sparkadvisor.sources.bench import ServerInfo
    from sparkadvisor.usercatalog import Recorded

NAME = "bench"
HELP = ("measure the served build on your cluster (cold and warm first token, decode) beside the plan's "
        "predictions; --record adds the results to your catalog")

MIN_CONTEXT = 64
"""Shortest prompt: room for the salt that makes every cold prompt unique."""


def streams_list(text: str) -> tuple[int, ...]:
    """An argparse type: concurrency levels such as 1,4,8."""
    try:
        values = tuple(sorted({positive_int(part.strip()) for part in text.split(",") if part.strip()}))
    except argparse.ArgumentTypeError:
        values = ()
    if not values or values[-1] > 256:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of stream counts from 1 to 256 such as 1,4,8")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vllm", metavar="URL", type=base_url,
                        help="vLLM base URL (default: $SPARKADVISOR_VLLM_URL or http://127.0.0.1:8000)")
    parser.add_argument("--token-env", metavar="NAME", help="environment variable holding vLLM's --api-key "
                        "(sent as a Bearer token, never printed)")
    parser.add_argument("--model", metavar="NAME", help="served model name (default: the one vLLM serves)")
    parser.add_argument("--build", metavar="ID", help="the catalog build being served (default: matched from "
                        "what vLLM loaded)")
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
    add_scenario_options(parser)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from sparkadvisor.core.bench import BenchSpec, Collected
    from sparkadvisor.sources import default_vllm_url
    from sparkadvisor.sources.bench import BenchConfig, BenchError

    token = _token(args.token_env)
    index = load(args)
    cluster, workload, settings = scenario(args, index)
    if workload.context_tokens < MIN_CONTEXT:
        raise UsageError(f"--context {workload.context_tokens} is too short to bench; use {MIN_CONTEXT} or more")
    build_id = find_build_id(index, args.build) if args.build else None
    spec = BenchSpec(workload.context_tokens, workload.prefix_reuse, workload.output_tokens, args.repetitions,
                     args.streams)
    config = BenchConfig(args.vllm or default_vllm_url(), args.model, args.timeout, token)
    collected = Collected(spec)
    session = Session(args, index, cluster, workload, settings, build_id, config, collected)
    try:
        asyncio.run(session.run())
    except BenchError as error:
        session.bar.clear()
        tail = "; nothing was recorded" if args.record else ""
        print(f"sparkadvisor: {error}{tail}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        session.bar.clear()
        session.report(interrupted=True)
        done = len(collected.results)
        print(f"sparkadvisor: interrupted after {done} of {len(session.steps)} steps; nothing was recorded",
              file=sys.stderr)
        return 130
    return session.finish()


class Session:
    """One bench run: the server, the plan it is held against, and the progress shown."""

    def __init__(self, args: argparse.Namespace, index: Any, cluster: Any, workload: Any, settings: Any,
                 build_id: str | None, config: Any, collected: Collected):
        from sparkadvisor.core.bench import schedule

        self.args, self.index, self.cluster, self.workload, self.settings = args, index, cluster, workload, settings
        self.build_id, self.config, self.collected = build_id, config, collected
        self.steps: tuple[Step, ...] = schedule(collected.spec)
        self.info: ServerInfo | None = None
        self.match: BuildMatch | None = None
        self.plan: Plan | None = None
        self.predictions: dict[str, Prediction] = {}
        self.bar = ProgressBar(enabled=sys.stderr.isatty())

    async def run(self) -> None:
        import time

        from sparkadvisor.core.benchplan import predict, predicted_rates
        from sparkadvisor.sources.bench import Limits, check_fits, connect, run

        self.info = await connect(self.config)
        check_fits(self.info, self.collected.spec)
        self.match, self.plan = self._plan(self.info)
        self.predictions = predict(self.plan, self.collected.spec) if self.plan else {}
        self.predicted = predicted_rates(self.predictions, self.collected.spec)
        self._check_budget()
        args = self.args
        deadline = time.monotonic() + args.max_seconds if args.max_seconds else None
        limits = Limits(deadline, args.max_tokens, self._expected_s)
        self.bar.start(len(self.steps))
        await run(self.config, self.info, self.steps, self.collected, limits, self._progress)
        self.bar.clear()

    def _plan(self, info: ServerInfo) -> tuple[BuildMatch, Plan | None]:
        from sparkadvisor.core.advisor import evaluate_build
        from sparkadvisor.core.checkup import BuildMatch, match_build

        if self.build_id is not None:
            match = BuildMatch(self.index.builds[self.build_id], f"--build {self.build_id}", info.served)
        else:
            match = match_build(self.index, (info.served,))
        if match.build is None:
            return match, None
        return match, evaluate_build(self.index, match.build, self.cluster, self.workload, self.settings)

    def _check_budget(self) -> None:
        from sparkadvisor.sources.bench import BenchError

        first = self.steps[0]
        if self.args.max_tokens is not None and first.computed_tokens > self.args.max_tokens:
            raise BenchError(f"the token budget of {self.args.max_tokens:,} is less than the first cold request's "
                             f"{first.computed_tokens:,} tokens; raise --max-tokens or lower --context")

    def _rates(self) -> Any:
        from sparkadvisor.core.benchplan import measured_rates

        return measured_rates(self.collected, self.predicted)

    def _expected_s(self, step: Step) -> float | None:
        return self._rates().seconds(step, self.collected.spec)

    def _progress(self, step: Step | None) -> None:
        from sparkadvisor.core.benchplan import time_left

        if step is None:
            self.bar.clear()
            return
        rates = self._rates()
        after = time_left(self.steps[len(self.collected.results) + 1:], self.collected.spec, rates)
        self.bar.show(step, step.label(self.collected.spec), len(self.collected.results),
                      rates.seconds(step, self.collected.spec), after)

    def finish(self) -> int:
        recorded = self._record() if self.args.record else None
        self.report(recorded=recorded)
        return 0

    def _record(self) -> Recorded | None:
        from sparkadvisor.core.bench import figures
        from sparkadvisor.sources.bench import BenchError
        from sparkadvisor.usercatalog import record_bench

        found = figures(self.collected)
        if not found:
            return None
        if self.match is None or self.match.build is None:
            raise BenchError(f"{self.match.how if self.match else 'no build'}; --record needs the catalog build, "
                             "so pass --build ID")
        assert self.info is not None
        return record_bench(self.index, self.match.build, self.cluster, self.info, self.collected,
                            self.plan.recipe if self.plan else None)

    def report(self, interrupted: bool = False, recorded: Recorded | None = None) -> None:
        from sparkadvisor.commands.benchtext import as_json, lines

        if self.args.json:
            print_json(as_json(self, interrupted, recorded))
            return
        for line in lines(self, interrupted, recorded):
            print(line)


class ProgressBar:
    """One line on stderr, redrawn in place: the step that runs, steps done, and the time left.
    Only on a terminal, so pipes and files get the report alone."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.total = 0
        self.step: Step | None = None
        self.started = 0.0
        self.shown = False

    def start(self, total: int) -> None:
        self.total = total

    def show(self, step: Step, label: str, done: int, step_s: float | None, after_s: float | None) -> None:
        import shutil
        import time

        if not self.enabled:
            return
        if step is not self.step:
            self.step, self.started = step, time.monotonic()
        elapsed = time.monotonic() - self.started
        left = None if step_s is None or after_s is None else max(step_s - elapsed, 0.0) + after_s
        width = shutil.get_terminal_size((80, 24)).columns
        text = _bar_text(label, done, self.total, elapsed, left, width)
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


def figure_rows(session: Session) -> list[tuple[Figure, Prediction | None]]:
    """Each measured figure with the prediction it is held against."""
    from sparkadvisor.core.bench import figures
    from sparkadvisor.core.benchplan import prediction_for

    return [(f, prediction_for(f, session.predictions)) for f in figures(session.collected)]


def spec_text(spec: BenchSpec) -> str:
    """The prompt the bench sends, in words."""
    return (f"prompts of exactly {spec.context_tokens:,} tokens (token ids from vLLM's /tokenize); a warm one "
            f"shares its first {spec.shared_tokens:,} with the cold one before it and adds {spec.new_tokens:,}; "
            f"{spec.output_tokens} output tokens; {spec.repetitions} repetition{'s' * (spec.repetitions > 1)}")
