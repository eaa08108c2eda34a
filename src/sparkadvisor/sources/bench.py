"""Run the bench against a live vLLM or llama-server: every request, timing and counter read is here.

Prompts are token ids, so each is exactly `context_tokens` long: a filler text and a
salt per request are cut into ids once with the server's own `/tokenize` (no special tokens;
vLLM's body and llama-server's differ), and `/v1/completions` takes the ids as they are. Each
request streams with a usage chunk; the first and last token are timed on this side of the
wire. A step's prefix-cache hits are the requests' own `usage.prompt_tokens_details.cached_tokens`
where the server reports them (llama-server always; vLLM with --enable-prompt-tokens-details),
else what `/metrics` counted between before and after the step. Every failure becomes one
`BenchError` subclass with one sentence; the token for `--api-key` is never in one.
httpx is imported only when a run starts.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sparkadvisor.core.bench import (
    BenchSpec,
    Collected,
    Sample,
    Step,
    StepResult,
    cache_settings,
    counters_between,
    with_request_hits,
)

if TYPE_CHECKING:
    import httpx

    from sparkadvisor.core.checkup import ServedModel
    from sparkadvisor.core.metrics import Scrape, ServedConfig

FILLER = (
    "The agent reads the repository, lists the files that changed, runs the tests, reads the "
    "failure, edits the function that raised it, and runs the tests again. Each turn resends "
    "the system prompt, the tool descriptions and the whole history before the new request. "
)
"""Ordinary prose for the body of every prompt (what it says does not matter, its length does)."""


class BenchError(Exception):
    """The bench cannot go on; the message is one sentence a person can act on."""


class ServerDown(BenchError):
    """Nothing usable answers at the URL."""


class WrongModel(BenchError):
    """The server does not serve the model asked for."""


class ContextTooLong(BenchError):
    """The prompt and answer do not fit the served max_model_len."""


class Stalled(BenchError):
    """The server stopped sending in the middle of a request."""


class Refused(BenchError):
    """The server answered a request with an error."""


@dataclass(frozen=True, slots=True)
class BenchConfig:
    """Where the server is and how long silence may last."""

    vllm_url: str
    model: str | None = None
    """Served model name; None takes the one vLLM serves."""
    timeout_s: float = 60.0
    """Longest silence allowed beyond the time a request is expected to take."""
    token: str | None = field(default=None, repr=False)
    """Bearer token for vLLM's --api-key; never printed."""


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What the server said about itself before the run."""

    url: str
    version: str | None
    served: ServedModel
    config: ServedConfig
    """How the engine was started, from vllm:cache_config_info and the speculation counters."""
    labels: dict[str, str]
    """vllm:cache_config_info's labels as the server wrote them, for the record's source note."""


async def connect(config: BenchConfig) -> ServerInfo:
    """/health, /version and /v1/models through the probe, then /metrics for the settings."""
    from sparkadvisor.core.metrics import ServedConfig, served_config
    from sparkadvisor.sources.probe import ProbeConfig, probe_vllm

    state = await probe_vllm(ProbeConfig(config.vllm_url, interval_s=0.0, timeout_s=min(config.timeout_s, 10.0),
                                         token=config.token))
    if not state.up or not state.models:
        problems = [f.text for f in state.findings if f.severity == "critical"]
        raise ServerDown(_scrub(problems[0] if problems else f"vLLM at {state.url} is not up", config.token))
    served = _chosen(state.models, config.model, state.url)
    async with _client(config) as client:
        scrape = await _scrape(client, state.url, config.timeout_s)
        engine = served_config(scrape) if scrape is not None else ServedConfig()
        if served.engine == "llama.cpp" and engine.speculating is None:
            engine = replace(engine, speculating=await _llama_drafts(client, state.url, config.timeout_s))
    return ServerInfo(state.url, state.version, served, engine, cache_settings(scrape))


async def _llama_drafts(client: httpx.AsyncClient, base: str, timeout_s: float) -> bool | None:
    """Whether llama-server drafts tokens: each of its /slots says "speculative" (its speculation counters are
    there whether it drafts or not); None where /slots is off (--no-slots) or says nothing of it."""
    from sparkadvisor.sources.probe import _json, fetch

    answer = await fetch(client, "GET", f"{base}/slots", timeout_s)
    slots = _json(answer) if answer.ok else None
    said = {slot.get("speculative") for slot in slots if isinstance(slot, dict)} if isinstance(slots, list) else set()
    return said.pop() if len(said) == 1 and said <= {True, False} else None


def _chosen(models: tuple[ServedModel, ...], wanted: str | None, url: str) -> ServedModel:
    if wanted is None:
        return models[0]
    for model in models:
        if model.id == wanted:
            return model
    names = ", ".join(m.id for m in models)
    raise WrongModel(f"{models[0].server} at {url} serves {names}, not {wanted!r}; pass --model with the served "
                     "name")


def check_fits(info: ServerInfo, spec: BenchSpec) -> None:
    """Refuse a prompt and answer longer than the served max_model_len before sending one."""
    served = info.served
    limit = served.max_model_len
    needed = spec.context_tokens + spec.output_tokens
    if limit is not None and needed > limit:
        llama = served.engine == "llama.cpp"
        length = served.length_text if llama else f"max_model_len of {limit:,}"
        restart = ("restart llama-server with a larger --ctx-size (without --kv-unified it divides that among its "
                   "--parallel slots)" if llama else "restart vLLM with a larger --max-model-len")
        raise ContextTooLong(
            f"a {spec.context_tokens:,}-token prompt plus {spec.output_tokens:,} output tokens exceeds the "
            f"{length} that {served.server} serves {served.id} with; pass --context "
            f"{limit - spec.output_tokens} or less, or {restart}")


Progress = Callable[[Step | None], None]
"""Told the step that runs, when it starts and about twice a second after; None at the end."""


@dataclass(frozen=True, slots=True)
class Limits:
    """When to stop early with what was measured."""

    deadline: float | None = None
    """time.monotonic() after which no step starts and a running one is cut."""
    token_budget: int | None = None
    """Most tokens the server may be asked to compute (new prompt tokens and output)."""
    expected_s: Callable[[Step], float | None] = lambda step: None
    """How long a step should take (sizes the silence allowed and the time check)."""


async def run(config: BenchConfig, info: ServerInfo, steps: tuple[Step, ...], collected: Collected,
              limits: Limits, progress: Progress) -> Collected:
    """Run `steps` in order into `collected`, stopping early at a limit; raise BenchError on failure."""
    current: list[Step | None] = [None]
    async with _client(config) as client:
        prompts = await Prompts.make(client, info, config)
        ticker = asyncio.create_task(_tick(progress, current))
        try:
            for step in steps:
                if (why := _limit_reached(step, collected, limits)) is not None:
                    collected.stopped = why
                    break
                current[0] = step
                progress(step)
                try:
                    async with asyncio.timeout_at(_loop_time(limits.deadline)):
                        collected.results.append(await _step(client, info, config, prompts, collected, step,
                                                             limits.expected_s(step)))
                except TimeoutError:
                    collected.stopped = f"the time limit cut {step.label(collected.spec)} short"
                    break
        finally:
            ticker.cancel()
    progress(None)
    return collected


def _loop_time(deadline: float | None) -> float | None:
    """A time.monotonic() deadline on the event loop's clock."""
    if deadline is None:
        return None
    return asyncio.get_running_loop().time() + (deadline - time.monotonic())


def _limit_reached(step: Step, collected: Collected, limits: Limits) -> str | None:
    label = step.label(collected.spec)
    if limits.token_budget is not None and collected.computed_tokens + step.computed_tokens > limits.token_budget:
        return f"the token budget of {limits.token_budget:,} leaves too little for {label} ({step.computed_tokens:,})"
    if limits.deadline is not None:
        left = limits.deadline - time.monotonic()
        expected = limits.expected_s(step)
        if left <= 0 or (expected is not None and expected > left):
            return f"the time limit leaves {max(left, 0):.0f} s, too little for {label}"
    return None


async def _tick(progress: Progress, current: list[Step | None]) -> None:
    """Redraw about twice a second while a long request runs."""
    while True:
        await asyncio.sleep(0.5)
        if current[0] is not None:
            progress(current[0])


# --- prompts -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Prompts:
    """Token-id prompts of an exact length: a salt unique to the run and request, then filler."""

    filler: tuple[int, ...]
    run_id: str
    salts: dict[str, tuple[int, ...]]

    @classmethod
    async def make(cls, client: httpx.AsyncClient, info: ServerInfo, config: BenchConfig) -> Prompts:
        filler = await tokenize(client, info, config, FILLER * 4)
        if not filler:
            raise Refused(f"{info.served.server} at {info.url} cut the filler text into no tokens, so its tokenizer "
                          "may not be loaded")
        return cls(tuple(filler), uuid.uuid4().hex[:12], {})

    async def ids(self, client: httpx.AsyncClient, info: ServerInfo, config: BenchConfig, tag: str,
                  length: int) -> list[int]:
        """`length` token ids starting with a salt no earlier request had."""
        if tag not in self.salts:
            self.salts[tag] = tuple(await tokenize(client, info, config, f"Run {self.run_id}, request {tag}. "))
        ids = list(self.salts[tag])
        while len(ids) < length:
            ids.extend(self.filler)
        return ids[:length]


async def tokenize(client: httpx.AsyncClient, info: ServerInfo, config: BenchConfig, text: str) -> list[int]:
    """The server's /tokenize without special tokens (the prompt goes in as ids, so nothing is added): vLLM
    takes {"prompt", "add_special_tokens"}, llama-server {"content", "add_special"} (tools/server/README.md)."""
    body: dict[str, Any] = {"content": text, "add_special": False} if info.served.engine == "llama.cpp" else \
        {"model": info.served.id, "prompt": text, "add_special_tokens": False}
    response = await _post(client, f"{info.url}/tokenize", body, config.timeout_s, config, "/tokenize")
    tokens = response.get("tokens") if isinstance(response, dict) else None
    if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
        raise Refused(f"{info.url}/tokenize did not return token ids, so this port may not be {info.served.server}")
    return tokens


# --- requests --------------------------------------------------------------------


async def _step(client: httpx.AsyncClient, info: ServerInfo, config: BenchConfig, prompts: Prompts,
                collected: Collected, step: Step, expected_s: float | None) -> StepResult:
    spec = collected.spec
    silence = config.timeout_s + 3 * (expected_s or 0.0)
    label = step.label(spec)
    bodies = [await _prompt(client, info, config, prompts, collected, step, i) for i in range(step.streams)]
    before = await _scrape(client, info.url, config.timeout_s)
    samples = await asyncio.gather(*(_complete(client, info, config, ids, step.max_tokens, silence, label)
                                     for ids in bodies))
    after = await _scrape(client, info.url, config.timeout_s)
    return StepResult(step, tuple(samples), with_request_hits(counters_between(before, after), samples))


async def _prompt(client: httpx.AsyncClient, info: ServerInfo, config: BenchConfig, prompts: Prompts,
                  collected: Collected, step: Step, stream: int) -> list[int]:
    """Cold: a fresh salt. Warm and streams: the last cold prompt's shared part, then a fresh tail."""
    spec = collected.spec
    if step.kind == "cold":
        return await prompts.ids(client, info, config, f"cold-{step.repetition}", spec.context_tokens)
    cold = await prompts.ids(client, info, config, f"cold-{_last_cold(collected, step)}", spec.context_tokens)
    tail = await prompts.ids(client, info, config, f"{step.kind}-{step.repetition}-{step.streams}-{stream}",
                             spec.new_tokens)
    return cold[:spec.shared_tokens] + tail


def _last_cold(collected: Collected, step: Step) -> int:
    if step.kind == "warm":
        return step.repetition
    colds = collected.of("cold")
    return colds[-1].step.repetition if colds else 1


async def _complete(client: httpx.AsyncClient, info: ServerInfo, config: BenchConfig, ids: list[int],
                    max_tokens: int, silence_s: float, label: str) -> Sample:
    """One streamed completion of exactly `max_tokens` (EOS ignored), timed token by token."""
    import httpx

    body = {"model": info.served.id, "prompt": ids, "max_tokens": max_tokens, "ignore_eos": True,
            "temperature": 0.0, "stream": True, "stream_options": {"include_usage": True}}
    # Encoded before the clock starts: 100,000 ids take a while to turn into JSON.
    content = json.dumps(body).encode()
    timeout = httpx.Timeout(config.timeout_s, read=silence_s)
    url = f"{info.url}/v1/completions"
    sent = time.monotonic()
    try:
        async with client.stream("POST", url, content=content, headers={"Content-Type": "application/json"},
                                 timeout=timeout) as response:
            if response.status_code != 200:
                await response.aread()
                raise _refusal(response.status_code, response.text, url, info.served.id, config)
            return await _read_stream(response, url, sent, len(ids))
    except httpx.TimeoutException:
        raise Stalled(f"{info.served.server} at {info.url} sent nothing for {silence_s:.3g} s during {label}: the "
                      "engine is stalled or overloaded") from None
    except httpx.HTTPError as error:
        raise ServerDown(f"{info.served.server} at {info.url} broke off {label} ({type(error).__name__}); check that "
                         "it is still running") from None


async def _read_stream(response: httpx.Response, url: str, sent: float, prompt_len: int) -> Sample:
    first = last = None
    usage: dict[str, Any] = {}
    async for line in response.aiter_lines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        chunk = _loads(data)
        now = time.monotonic()
        if chunk.get("choices"):
            first = first if first is not None else now
            last = now
        if isinstance(chunk.get("usage"), dict):
            usage = chunk["usage"]
    if first is None or last is None:
        raise Refused(f"{url} streamed no token, so this port may not be vLLM's OpenAI-compatible server")
    completion = usage.get("completion_tokens")
    if not isinstance(completion, int):
        raise Refused(f"{url} sent no usage chunk (stream_options.include_usage); vLLM 0.5 or newer sends one")
    prompt = usage.get("prompt_tokens")
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Sample(prompt if isinstance(prompt, int) else prompt_len, completion, sent, first, last,
                  cached if isinstance(cached, int) and not isinstance(cached, bool) else None)


def _loads(data: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _refusal(status: int, text: str, url: str, model: str, config: BenchConfig) -> BenchError:
    """vLLM's error body in one sentence: a wrong name and a too-long prompt get their own kind."""
    message = _scrub(_error_message(text), config.token)
    if status in (401, 403):
        fix = ("the token was refused; check the variable --token-env names" if config.token else
               "vLLM was started with --api-key; pass --token-env NAME naming the variable that holds the key")
        return Refused(f"{url} answered HTTP {status}: {fix}")
    if status == 404 and "model" in message.lower():
        return WrongModel(f"{url} does not know the model {model!r} ({message}); pass --model with the served name")
    if status == 400 and "context length" in message.lower():
        return ContextTooLong(f"vLLM refused the prompt as too long ({message})")
    return Refused(f"{url} answered HTTP {status}: {message}")


def _error_message(text: str) -> str:
    data = _loads(text)
    error = data.get("error")
    message = error.get("message") if isinstance(error, dict) else data.get("detail") or data.get("message")
    flat = " ".join(str(message or text).split())
    return flat[:200] + ("..." if len(flat) > 200 else "")


async def _post(client: httpx.AsyncClient, url: str, body: dict[str, Any], timeout_s: float,
                config: BenchConfig, what: str) -> Any:
    from sparkadvisor.sources.probe import fetch

    answer = await fetch(client, "POST", url, timeout_s, json=body)
    if not answer.reached:
        raise ServerDown(_scrub(f"vLLM {what}: {answer.problem}", config.token))
    if answer.status == 404 and what == "/tokenize" and "model" not in answer.text.lower():
        raise Refused(f"{url} is not there although vLLM's OpenAI-compatible server has it, so this port may be "
                      "a gateway")
    if not answer.ok:
        raise _refusal(answer.status or 0, answer.text, url, str(body.get("model")), config)
    return _loads(answer.text)


async def _scrape(client: httpx.AsyncClient, base: str, timeout_s: float) -> Scrape | None:
    from sparkadvisor.sources.probe import scrape

    found = await scrape(client, base, timeout_s)
    return found if not hasattr(found, "severity") else None


def _client(config: BenchConfig) -> httpx.AsyncClient:
    """No proxies from the environment; the token, when given, on every request."""
    import httpx

    headers = {"Authorization": f"Bearer {config.token}"} if config.token else {}
    return httpx.AsyncClient(timeout=httpx.Timeout(config.timeout_s), headers=headers, trust_env=False)


def _scrub(text: str, token: str | None) -> str:
    return text.replace(token, "***") if token else text
