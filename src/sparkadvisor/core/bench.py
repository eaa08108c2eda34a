"""What `sparkadvisor bench` runs against a live vLLM, and what its timings mean. Pure.

The schedule follows the article's agentic turn: a prompt of exactly `context_tokens`,
sent once with a prefix nobody sent before (cold: every token is computed), then again
with the same first `shared_tokens` and new ones at the end (warm: what an agent's next
turn costs when prefix caching works). Decode is timed on the warm answers (one stream)
and on groups of concurrent warm requests (aggregate). Figures are medians with their
spread; `sources.bench` does the I/O and `core.benchplan` holds them against the plan.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from typing import Literal

from sparkadvisor.core.metrics import PREFIX_HITS, PREFIX_QUERIES, SPEC_ACCEPTED, SPEC_DRAFTED, Scrape, counter_delta

PREEMPTIONS = "vllm:num_preemptions_total"
CACHE_CONFIG_INFO = "vllm:cache_config_info"
"""A gauge whose labels are vLLM's CacheConfig fields (`vllm/v1/metrics/loggers.py`)."""

StepKind = Literal["cold", "warm", "streams"]


@dataclass(frozen=True, slots=True)
class BenchSpec:
    """What to measure: the workload's turn, how often, and at which concurrency."""

    context_tokens: int
    """Prompt tokens of every request."""
    prefix_reuse: float
    """Share of the prompt a warm request shares with the cold one before it."""
    output_tokens: int
    """Tokens each warm request writes (the decode sample)."""
    repetitions: int = 3
    """Cold/warm pairs."""
    streams: tuple[int, ...] = (1, 4, 8)
    """Concurrency levels for decode; 1 is timed on the warm requests."""

    @property
    def shared_tokens(self) -> int:
        """Prompt tokens a warm request shares with its cold one."""
        return round(self.context_tokens * self.prefix_reuse)

    @property
    def new_tokens(self) -> int:
        """Prompt tokens a warm request adds at the end."""
        return self.context_tokens - self.shared_tokens


@dataclass(frozen=True, slots=True)
class Step:
    """One request, or one group of concurrent requests."""

    kind: StepKind
    repetition: int
    """1-based; 1 for a group of streams."""
    streams: int
    max_tokens: int
    computed_tokens: int
    """Tokens the server computes if the cache works: new prompt tokens plus output, all streams."""

    def label(self, spec: BenchSpec) -> str:
        """What runs, in words, for the progress line."""
        if self.kind == "streams":
            return f"decode at {self.streams} streams"
        return f"{self.kind} first token {self.repetition}/{spec.repetitions}"


def schedule(spec: BenchSpec) -> tuple[Step, ...]:
    """Cold then warm for each repetition, then one group per concurrency level above 1."""
    steps: list[Step] = []
    for rep in range(1, spec.repetitions + 1):
        steps.append(Step("cold", rep, 1, 1, spec.context_tokens + 1))
        steps.append(Step("warm", rep, 1, spec.output_tokens, spec.new_tokens + spec.output_tokens))
    for streams in sorted(set(spec.streams)):
        if streams > 1:
            steps.append(Step("streams", 1, streams, spec.output_tokens,
                              streams * (spec.new_tokens + spec.output_tokens)))
    return tuple(steps)


@dataclass(frozen=True, slots=True)
class Sample:
    """One streamed completion, timed on the client, with the token counts from `usage`."""

    prompt_tokens: int
    completion_tokens: int
    sent_s: float
    """When the request went out (seconds on the bench's clock)."""
    first_s: float
    """When the first token arrived."""
    last_s: float
    """When the last token arrived."""
    cached_tokens: int | None = None
    """Prompt tokens the prefix cache served, as the server reported them for this request (None: not said)."""

    @property
    def ttft_s(self) -> float:
        """Time to the first token."""
        return self.first_s - self.sent_s

    @property
    def decode_tok_s(self) -> float | None:
        """Tokens after the first over the time between the first and the last."""
        span = self.last_s - self.first_s
        return (self.completion_tokens - 1) / span if self.completion_tokens > 1 and span > 0 else None


@dataclass(frozen=True, slots=True)
class Counters:
    """What vLLM's counters moved by over one step (None: not exposed)."""

    queried_tokens: float | None = None
    hit_tokens: float | None = None
    preemptions: float | None = None
    drafted_tokens: float | None = None
    accepted_tokens: float | None = None

    @property
    def hit_share(self) -> float | None:
        """Share of the queried prompt tokens the prefix cache served."""
        if self.queried_tokens is None or self.hit_tokens is None or self.queried_tokens <= 0:
            return None
        return self.hit_tokens / self.queried_tokens


@dataclass(frozen=True, slots=True)
class StepResult:
    """A step that ran to the end."""

    step: Step
    samples: tuple[Sample, ...]
    counters: Counters

    @property
    def aggregate_tok_s(self) -> float | None:
        """All streams' tokens after their first over the span from the earliest first token to
        the latest last one: a conservative aggregate (streams that start late count against it)."""
        tokens = sum(s.completion_tokens - 1 for s in self.samples)
        span = max(s.last_s for s in self.samples) - min(s.first_s for s in self.samples)
        return tokens / span if tokens > 0 and span > 0 else None


@dataclass(frozen=True, slots=True)
class Figure:
    """One measured figure over its repetitions."""

    key: str
    """cold_ttft_s, warm_ttft_s, ratio, prefill_tok_s, decode_tok_s or aggregate_tok_s."""
    label: str
    unit: str
    values: tuple[float, ...]
    streams: int = 1
    hit_share: float | None = None
    """What the prefix-cache counters said over the requests behind it."""
    hit_tokens: float | None = None
    """Prompt tokens per request the counters say came from the cache."""
    acceptance: float | None = None
    """Share of drafted tokens vLLM accepted over the steps behind it (decode figures of a server that
    speculates)."""

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    @property
    def spread(self) -> float | None:
        """Sample standard deviation (one sigma), with two or more values."""
        return statistics.stdev(self.values) if len(self.values) > 1 else None


@dataclass(slots=True)
class Collected:
    """What has been measured so far; shared with the runner so an interrupt keeps it."""

    spec: BenchSpec
    results: list[StepResult] = field(default_factory=list)
    stopped: str | None = None
    """Why the run ended before its schedule did (time limit, token budget), in words."""

    def of(self, kind: StepKind) -> list[StepResult]:
        return [r for r in self.results if r.step.kind == kind]

    @property
    def computed_tokens(self) -> int:
        """Tokens the finished steps asked the server to compute (new prompt tokens and output)."""
        return sum(r.step.computed_tokens for r in self.results)


def figures(collected: Collected) -> list[Figure]:
    """The figures the finished steps support, in the order they are shown."""
    spec, found = collected.spec, []
    cold, warm = collected.of("cold"), collected.of("warm")
    if cold:
        found.append(_ttft("cold_ttft_s", "cold first token", cold))
        found.append(Figure("prefill_tok_s", "prefill (cold)", "tok/s",
                            tuple(spec.context_tokens / s.ttft_s for r in cold for s in r.samples),
                            hit_share=found[-1].hit_share))
    if warm:
        found.append(_ttft("warm_ttft_s", "warm first token", warm))
    pairs = [(c.samples[0].ttft_s, w.samples[0].ttft_s) for c, w in zip(cold, warm, strict=False)]
    if pairs:
        found.append(Figure("ratio", "cold / warm", "x", tuple(c / w for c, w in pairs)))
    decode = [v for r in warm for s in r.samples if (v := s.decode_tok_s) is not None]
    if decode:
        found.append(Figure("decode_tok_s", "decode, 1 stream", "tok/s", tuple(decode),
                            acceptance=accepted_share(warm)))
    for result in collected.of("streams"):
        if (value := result.aggregate_tok_s) is not None:
            found.append(Figure("aggregate_tok_s", f"decode, {result.step.streams} streams", "tok/s", (value,),
                                streams=result.step.streams, hit_share=result.counters.hit_share,
                                acceptance=accepted_share([result])))
    return found


def _ttft(key: str, label: str, results: list[StepResult]) -> Figure:
    hits = [r.counters.hit_tokens for r in results]
    queried = [r.counters.queried_tokens for r in results]
    share = per_request = None
    if None not in hits and None not in queried and sum(queried) > 0:  # type: ignore[arg-type]
        share = sum(hits) / sum(queried)  # type: ignore[arg-type]
        per_request = statistics.median(hits)  # type: ignore[type-var]
    return Figure(key, label, "s", tuple(s.ttft_s for r in results for s in r.samples),
                  hit_share=share, hit_tokens=per_request)


@dataclass(frozen=True, slots=True)
class Rates:
    """The speeds a step's duration is estimated from: predicted first, measured once known."""

    prefill_tok_s: float | None = None
    decode_tok_s: dict[int, float] = field(default_factory=dict)
    """Per-stream decode speed by number of streams."""

    def seconds(self, step: Step, spec: BenchSpec) -> float | None:
        """How long `step` should take at these rates (None when a rate is unknown)."""
        if not self.prefill_tok_s:
            return None
        if step.kind == "cold":
            return spec.context_tokens / self.prefill_tok_s
        decode = self.decode_tok_s.get(step.streams) or self.decode_tok_s.get(1)
        if not decode:
            return None
        return step.streams * spec.new_tokens / self.prefill_tok_s + step.max_tokens / decode


def counters_between(before: Scrape | None, after: Scrape | None) -> Counters:
    """How far vLLM's prefix-cache, preemption and speculation counters moved (server-wide)."""
    if before is None or after is None:
        return Counters()

    def moved(name: str) -> float | None:
        return counter_delta(before.total(name), after.total(name))

    return Counters(moved(PREFIX_QUERIES), moved(PREFIX_HITS), moved(PREEMPTIONS), moved(SPEC_DRAFTED),
                    moved(SPEC_ACCEPTED))


def with_request_hits(counters: Counters, samples: tuple[Sample, ...] | list[Sample]) -> Counters:
    """The step's prefix-cache hits from its requests' own usage when each reported them (exact, and the only
    count where /metrics has none), else the server-wide counters as they moved."""
    cached = [s.cached_tokens for s in samples]
    if not samples or any(c is None for c in cached):
        return counters
    return replace(counters, queried_tokens=float(sum(s.prompt_tokens for s in samples)),
                   hit_tokens=float(sum(c for c in cached if c is not None)))


def cache_settings(scrape: Scrape | None) -> dict[str, str]:
    """vLLM's cache configuration as it labels `vllm:cache_config_info` (block_size,
    cache_dtype, enable_prefix_caching, gpu_memory_utilization, num_gpu_blocks, ...)."""
    if scrape is None:
        return {}
    return next((dict(labels) for name, labels, _ in scrape.samples if name == CACHE_CONFIG_INFO), {})


def acceptance(collected: Collected) -> float | None:
    """Share of drafted tokens accepted over the decoding steps, from the speculation counters."""
    return accepted_share([r for r in collected.results if r.step.kind != "cold"])


def accepted_share(results: list[StepResult]) -> float | None:
    """Share of drafted tokens vLLM accepted over `results`, from the speculation counters (None when they
    drafted nothing, or the counters say a share outside 0-1, as a restarted server's would)."""
    drafted = accepted = 0.0
    for c in (r.counters for r in results):
        if c.drafted_tokens and c.accepted_tokens is not None:
            drafted, accepted = drafted + c.drafted_tokens, accepted + c.accepted_tokens
    share = accepted / drafted if drafted else None
    return share if share is not None and 0 < share < 1 else None
