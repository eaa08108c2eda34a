"""vLLM's Prometheus metrics, read from the text format and compared between two scrapes.

Pure: text in, figures out. Metric names are vLLM v1's (`vllm/v1/metrics/loggers.py`):
counters carry `_total`, histograms `_bucket`/`_sum`/`_count`, and series are labelled by
`model_name` and `engine`; a figure sums (counters) or takes the worst (gauges) over them.
Rates are over the probe's own interval, never the lifetime since the server started.
llama-server's counters (`llamacpp:`, with --metrics) are read under the vLLM names of what
they count (`from_llamacpp`).
"""

from __future__ import annotations

import math
import re
from dataclasses import field

from sparkadvisor.core.records import record

PREFIX_HITS = "vllm:prefix_cache_hits_total"
PREFIX_QUERIES = "vllm:prefix_cache_queries_total"
KV_USAGE = "vllm:kv_cache_usage_perc"
RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
GENERATION_TOKENS = "vllm:generation_tokens_total"
PROMPT_TOKENS = "vllm:prompt_tokens_total"
TTFT = "vllm:time_to_first_token_seconds"
ITL = "vllm:inter_token_latency_seconds"
SPEC_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
SPEC_DRAFTED = "vllm:spec_decode_num_draft_tokens_total"
SPEC_DRAFTS = "vllm:spec_decode_num_drafts_total"
SPEC_PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
CACHE_CONFIG = "vllm:cache_config_info"
"""An info gauge whose labels are CacheConfig.metrics_info(): str() of every field (`vllm/config/cache.py`)."""

LLAMACPP_NAMES = {
    "llamacpp:tokens_predicted_total": GENERATION_TOKENS,
    "llamacpp:requests_processing": RUNNING,
    "llamacpp:requests_deferred": WAITING,
    "llamacpp:prompt_tokens_cached_total": PREFIX_HITS,
    "llamacpp:spec_decode_num_draft_tokens_total": SPEC_DRAFTED,
    "llamacpp:spec_decode_num_accepted_tokens_total": SPEC_ACCEPTED,
    "llamacpp:spec_decode_num_drafts_total": SPEC_DRAFTS,
}
"""llama-server's counters and gauges (its /metrics, as a build of October 2026 writes them) by the vLLM name of
what each counts. Its prompt_tokens_total leaves out the tokens reused from the cache, so vLLM's prompt and
prefix-query counts are it plus prompt_tokens_cached_total."""
LLAMACPP_PROMPT = "llamacpp:prompt_tokens_total"

_SAMPLE = re.compile(
    r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+-?\d+)?\s*$")
_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


class MetricsFormatError(ValueError):
    """The text is not Prometheus exposition format, or holds no vLLM metric."""


@record(kw_only=False)
class Scrape:
    """One read of /metrics: every sample as (name, labels, value)."""

    samples: tuple[tuple[str, tuple[tuple[str, str], ...], float], ...]
    engine: str = "vllm"
    """Whose metrics these are: "vllm", or "llama.cpp" once `from_llamacpp` renamed them."""

    def total(self, name: str) -> float | None:
        """The sum over every series of `name` (counters, running/waiting), None when absent."""
        values = [v for n, _, v in self.samples if n == name and not math.isnan(v)]
        return sum(values) if values else None

    def highest(self, name: str) -> float | None:
        """The largest value over every series of `name` (the fullest engine's KV cache)."""
        values = [v for n, _, v in self.samples if n == name and not math.isnan(v)]
        return max(values) if values else None

    def buckets(self, histogram: str) -> dict[float, float]:
        """Cumulative counts of a histogram by upper bound `le`, summed over series."""
        found: dict[float, float] = {}
        for name, labels, value in self.samples:
            le = dict(labels).get("le")
            if name == f"{histogram}_bucket" and le is not None:
                bound = _number(le)
                found[bound] = found.get(bound, 0.0) + value
        return found

    @property
    def has_vllm(self) -> bool:
        """True when at least one metric is named `vllm:...`."""
        return any(n.startswith("vllm:") for n, _, _ in self.samples)

    @property
    def has_llamacpp(self) -> bool:
        """True when at least one metric is named `llamacpp:...` (llama-server started with --metrics)."""
        return any(n.startswith("llamacpp:") for n, _, _ in self.samples)


def from_llamacpp(scrape: Scrape) -> Scrape:
    """llama-server's metrics under the vLLM names of what they count (`LLAMACPP_NAMES`)."""
    samples = [(LLAMACPP_NAMES[n], labels, v) for n, labels, v in scrape.samples if n in LLAMACPP_NAMES]
    processed = scrape.total(LLAMACPP_PROMPT)
    if processed is not None:
        prompt = processed + (scrape.total("llamacpp:prompt_tokens_cached_total") or 0.0)
        samples += [(PROMPT_TOKENS, (), prompt), (PREFIX_QUERIES, (), prompt)]
    return Scrape(tuple(samples), "llama.cpp")


def parse_prometheus(text: str) -> Scrape:
    """Samples of a Prometheus text exposition; lines that do not parse are skipped, but
    text with no sample at all (an HTML page, JSON) is a MetricsFormatError."""
    samples, content_lines = [], 0
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        content_lines += 1
        sample = _parse_line(line)
        if sample is not None:
            samples.append(sample)
    if not samples:
        what = "is empty" if content_lines == 0 else "holds no line in Prometheus text format"
        raise MetricsFormatError(f"the /metrics answer {what}")
    return Scrape(tuple(samples))


def _parse_line(line: str) -> tuple[str, tuple[tuple[str, str], ...], float] | None:
    match = _SAMPLE.match(line)
    if match is None:
        return None
    try:
        value = _number(match.group("value"))
    except ValueError:
        return None
    labels = tuple(_LABEL.findall(match.group("labels") or ""))
    return match.group("name"), labels, value


def _number(text: str) -> float:
    """A Prometheus number: decimals, NaN, +Inf and -Inf."""
    return float({"+Inf": "inf", "-Inf": "-inf", "Inf": "inf"}.get(text, text))


def histogram_quantile(quantile: float, buckets: dict[float, float]) -> float | None:
    """The `quantile` of a cumulative histogram, interpolated linearly inside its bucket as
    Prometheus' histogram_quantile does; the highest finite bound when it falls in +Inf."""
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return None
    rank = quantile * buckets[bounds[-1]]
    lower, below = 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank and count > 0:
            if math.isinf(bound):
                return lower
            share = (rank - below) / (count - below) if count > below else 1.0
            return lower + (bound - lower) * share
        lower, below = bound, count
    return lower


def counter_delta(before: float | None, after: float | None) -> float | None:
    """How far a counter moved; a counter that went down restarted from zero (vLLM restarted)."""
    if before is None or after is None:
        return None
    return after if after < before else after - before


def bucket_delta(before: dict[float, float], after: dict[float, float]) -> dict[float, float]:
    """The histogram of the observations made between two scrapes."""
    if any(after.get(b, 0.0) < v for b, v in before.items()):
        return dict(after)
    return {b: v - before.get(b, 0.0) for b, v in after.items()}


@record(kw_only=False)
class Latency:
    """Percentiles of one latency histogram, in seconds."""

    p50_s: float | None
    p90_s: float | None
    p99_s: float | None
    observations: float
    """How many observations the percentiles rest on."""
    basis: str
    """"interval" (observed between the two scrapes), "since start" or "none"."""


@record(kw_only=False)
class ServedConfig:
    """How the engine was started, as its metrics tell it: what identifies a build beyond its name."""

    block_size: int | None = None
    block_size_chosen: bool | None = None
    """True when --block-size was given (vLLM's user_specified_block_size); vLLM may pick its own otherwise."""
    kv_cache_dtype: str | None = None
    prefix_caching: bool | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_memory_bytes: int | None = None
    speculating: bool | None = None
    """Speculative decoding on: vLLM registers the spec_decode counters only when it is configured."""
    speculative_tokens: int | None = None
    """Tokens proposed per pass: the positions of the per-position counter, else drafted / drafts."""
    num_gpu_blocks: int | None = None
    """Block ids vLLM's KV cache holds per rank, as its profile run sized it (`KvShape.block_id_bytes` each)."""


def served_config(scrape: Scrape) -> ServedConfig:
    """The engine's settings from `vllm:cache_config_info` and the speculative-decoding counters."""
    labels = next((dict(lb) for name, lb, _ in scrape.samples if name == CACHE_CONFIG), {})
    positions = {dict(lb).get("position") for name, lb, _ in scrape.samples if name == SPEC_PER_POSITION}
    drafts, drafted = scrape.total(SPEC_DRAFTS), scrape.total(SPEC_DRAFTED)
    tokens = len(positions - {None}) or (round(drafted / drafts) if drafts and drafted else None)
    spec: bool | None = any(name.startswith("vllm:spec_decode_") for name, _, _ in scrape.samples)
    if scrape.engine != "vllm":  # llama-server keeps its speculation counters whether it drafts or not
        spec = True if drafts else None
    return ServedConfig(
        block_size=_label_int(labels.get("block_size")), block_size_chosen=_label_bool(labels.get(
            "user_specified_block_size")), kv_cache_dtype=labels.get("cache_dtype"),
        prefix_caching=_label_bool(labels.get("enable_prefix_caching")),
        gpu_memory_utilization=_label_float(labels.get("gpu_memory_utilization")),
        kv_cache_memory_bytes=_label_int(labels.get("kv_cache_memory_bytes")),
        num_gpu_blocks=_label_int(labels.get("num_gpu_blocks")),
        speculating=spec if scrape.has_vllm else None, speculative_tokens=tokens)


def _label_bool(text: str | None) -> bool | None:
    return {"True": True, "False": False}.get(text or "")


def _label_int(text: str | None) -> int | None:
    return int(text) if text and text.isdecimal() else None


def _label_float(text: str | None) -> float | None:
    try:
        value = float(text) if text else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


@record(kw_only=False)
class MetricsWindow:
    """What vLLM's metrics say over the probe's interval (two scrapes `interval_s` apart)."""

    interval_s: float
    prefix_cache_hit_rate: float | None
    """Hits / queries of the prefix cache between the scrapes; None without prompts then."""
    prefix_cache_hit_rate_lifetime: float | None
    """The same since vLLM started: shown for context, never judged."""
    prefix_cache_queries: float | None
    """Prompt tokens looked up in the prefix cache during the interval."""
    kv_cache_usage: float | None
    """Share of the KV cache in use at the second scrape (1 = full)."""
    requests_running: float | None
    requests_waiting: float | None
    ttft: Latency
    inter_token: Latency
    spec_acceptance: float | None
    """Accepted / drafted speculative tokens (interval, else lifetime); None without speculation."""
    generation_tokens: float | None
    """Tokens generated during the interval."""
    generation_tok_s: float | None
    """Tokens per second per running request over the interval; None when nothing ran throughout."""
    single_stream: bool
    """Exactly one request ran at both scrapes and none waited: comparable with a single-stream figure."""
    notes: tuple[str, ...] = field(default=())
    """Sentences about figures the window could not give."""
    config: ServedConfig = field(default=ServedConfig())
    """How the engine was started, from the second scrape."""


def window(before: Scrape, after: Scrape, interval_s: float) -> MetricsWindow:
    """The figures between two scrapes."""
    hits = counter_delta(before.total(PREFIX_HITS), after.total(PREFIX_HITS))
    queries = counter_delta(before.total(PREFIX_QUERIES), after.total(PREFIX_QUERIES))
    running = (before.total(RUNNING), after.total(RUNNING))
    generated = counter_delta(before.total(GENERATION_TOKENS), after.total(GENERATION_TOKENS))
    single = running == (1.0, 1.0) and not after.total(WAITING)
    return MetricsWindow(
        interval_s=interval_s,
        prefix_cache_hit_rate=_ratio(hits, queries),
        prefix_cache_hit_rate_lifetime=_ratio(after.total(PREFIX_HITS), after.total(PREFIX_QUERIES)),
        prefix_cache_queries=queries,
        kv_cache_usage=after.highest(KV_USAGE),
        requests_running=running[1], requests_waiting=after.total(WAITING),
        ttft=latency(before, after, TTFT), inter_token=latency(before, after, ITL),
        spec_acceptance=_acceptance(before, after),
        generation_tokens=generated,
        generation_tok_s=_per_stream_rate(generated, running, interval_s),
        single_stream=single,
        notes=_notes(after, queries),
        config=served_config(after),
    )


def _ratio(part: float | None, whole: float | None) -> float | None:
    if part is None or not whole:
        return None
    return min(1.0, max(0.0, part / whole))


def latency(before: Scrape, after: Scrape, histogram: str) -> Latency:
    """Percentiles of what was observed between the scrapes, or since start when nothing was."""
    recent = bucket_delta(before.buckets(histogram), after.buckets(histogram))
    for basis, buckets in (("interval", recent), ("since start", after.buckets(histogram))):
        count = buckets.get(math.inf, max(buckets.values(), default=0.0))
        if count > 0:
            return Latency(histogram_quantile(0.5, buckets), histogram_quantile(0.9, buckets),
                           histogram_quantile(0.99, buckets), count, basis)
    return Latency(None, None, None, 0.0, "none")


def _acceptance(before: Scrape, after: Scrape) -> float | None:
    accepted = counter_delta(before.total(SPEC_ACCEPTED), after.total(SPEC_ACCEPTED))
    drafted = counter_delta(before.total(SPEC_DRAFTED), after.total(SPEC_DRAFTED))
    if drafted:
        return _ratio(accepted, drafted)
    return _ratio(after.total(SPEC_ACCEPTED), after.total(SPEC_DRAFTED))


def _per_stream_rate(generated: float | None, running: tuple[float | None, float | None],
                     interval_s: float) -> float | None:
    """Generated tokens per second per request, when requests ran at both scrapes."""
    if not generated or interval_s <= 0 or not running[0] or not running[1]:
        return None
    return generated / interval_s / ((running[0] + running[1]) / 2)


def _notes(after: Scrape, queries: float | None) -> tuple[str, ...]:
    notes = []
    if after.total(PREFIX_QUERIES) is None:
        notes.append(f"vLLM exposes no {PREFIX_QUERIES}: prefix caching is off or this vLLM is too old to count it")
    elif not queries:
        server = "llama-server" if after.engine == "llama.cpp" else "vLLM"
        notes.append(f"no prompt reached {server} during the interval, so its prefix-cache hit rate is unknown; "
                     "probe again while an agent is working, or with a longer --interval")
    return tuple(notes)
