"""A stand-in vLLM with a prefix cache, for `sparkadvisor bench`: stdlib HTTP on 127.0.0.1.

What it models, at a scale fast enough for tests:
- the prefix cache: prompts are cut into blocks of `block_size` tokens, each block's hash
  chained to the one before (as vLLM hashes them); a request reuses the longest run of
  blocks already seen, and `vllm:prefix_cache_queries_total` / `_hits_total` move by the
  prompt tokens and the reused ones;
- the first token: `overhead_s + uncached tokens / prefill_tok_s`, computing one prompt at a time;
- decode: each stream at `decode_tok_s / (1 + batch_cost x (other streams))`;
- the endpoints `bench` uses: /health, /version, /v1/models (with max_model_len), /metrics,
  /tokenize and streamed /v1/completions with a usage chunk, and vLLM's error bodies.
`truth_ratio` and `truth_aggregate` give the figures a perfect measurement would find.

With `engine="llama.cpp"` it answers as llama-server does (recorded from a build of October 2026 serving a
tiny GGUF): no /version, /v1/models owned_by "llamacpp" with each slot's context as meta.n_ctx, /tokenize
taking {"content", "add_special"}, a prefix cache reused token by token, usage in the last chunk (beside its
finish_reason) with prompt_tokens_details.cached_tokens, and `llamacpp:` metrics (501 without --metrics).
"""

from __future__ import annotations

import json
import re
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

from probe_fakes import Server, _Handler

FILLER_TOKENS = re.compile(r"\S+")


@dataclass
class BenchState:
    """What the stand-in serves and how fast; tests change fields to make it misbehave."""

    served: str = "RedHatAI/GLM-5.3-Flash-NVFP4"
    engine: str = "vllm"
    """"vllm", or "llama.cpp" to answer as llama-server."""
    metrics: bool = True
    """llama-server's /metrics needs --metrics; without it the endpoint answers 501."""
    max_model_len: int = 262_144
    version: str = "0.33.0"
    block_size: int = 16
    prefix_caching: bool = True
    num_gpu_blocks: int = 233
    """The KV cache vLLM sized: 233 block ids of GLM-5.3-Flash on a rank of two, without speculation, hold 5.5 GiB."""
    overhead_s: float = 0.08
    prefill_tok_s: float = 50_000.0
    decode_tok_s: float = 50.0
    """Per stream, alone: near what two Sparks decode GLM-5.3-Flash at (bench refuses to record a stream faster than
    the served build's weights can be read)."""
    batch_cost: float = 0.25
    """Each further running stream slows every stream's step by this share."""
    stall_after_tokens: int | None = None
    """Stop sending after this many tokens of a completion (0: before the first token)."""
    spec: bool = False
    """Speculative decoding on: two tokens drafted for each token sent, `acceptance` of them accepted."""
    acceptance: float = 0.75
    acceptance_drop: float = 0.0
    """Each further running stream lowers the acceptance by this much (real drafters accept less in a batch)."""
    drafted: float = 0.0
    accepted: float = 0.0
    blocks: set[int] = field(default_factory=set)
    queries: float = 0.0
    hits: float = 0.0
    prompt_tokens: float = 0.0
    generation_tokens: float = 0.0
    running: int = 0
    completions: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    prefill_lock: threading.Lock = field(default_factory=threading.Lock)
    release: threading.Event = field(default_factory=threading.Event)
    prefill_free_at: float = 0.0

    def truth_ttft(self, uncached: int) -> float:
        """The first token the stand-in takes for `uncached` new tokens."""
        return self.overhead_s + uncached / self.prefill_tok_s

    def truth_ratio(self, context: int, reuse: float) -> float:
        """Cold over warm first token at `context` tokens with `reuse` of them cached."""
        cached = (round(context * reuse) // self.block_size) * self.block_size
        return self.truth_ttft(context) / self.truth_ttft(context - cached)

    def stream_rate(self, streams: int) -> float:
        """Tokens per second of each of `streams` streams decoding together."""
        return self.decode_tok_s / (1 + self.batch_cost * (streams - 1))

    def admit(self, prompt: list[int]) -> int:
        """Look the prompt up in the cache, count the query, and return the uncached tokens."""
        hashes, parent = [], 0
        for start in range(0, len(prompt) - self.block_size + 1, self.block_size):
            parent = hash((parent, tuple(prompt[start:start + self.block_size])))
            hashes.append(parent)
        with self.lock:
            hit_blocks = 0
            if self.prefix_caching:
                while hit_blocks < len(hashes) and hashes[hit_blocks] in self.blocks:
                    hit_blocks += 1
                self.blocks.update(hashes)
            # vLLM always computes the last prompt token itself.
            cached = min(hit_blocks * self.block_size, (len(prompt) - 1) // self.block_size * self.block_size)
            self.queries += len(prompt) if self.prefix_caching else 0
            self.hits += cached
            self.prompt_tokens += len(prompt)
            self.completions += 1
        return len(prompt) - cached

    @property
    def llama(self) -> bool:
        return self.engine == "llama.cpp"

    def llama_metrics_text(self) -> str:
        return "\n".join([
            "# TYPE llamacpp:prompt_tokens_total counter",
            f"llamacpp:prompt_tokens_total {self.prompt_tokens - self.hits}",  # cached tokens left out
            f"llamacpp:prompt_tokens_cached_total {self.hits}",
            f"llamacpp:tokens_predicted_total {self.generation_tokens}",
            "llamacpp:spec_decode_num_draft_tokens_total 0", "llamacpp:spec_decode_num_accepted_tokens_total 0",
            "llamacpp:spec_decode_num_drafts_total 0", f"llamacpp:requests_processing {self.running}",
            "llamacpp:requests_deferred 0"]) + "\n"

    def metrics_text(self) -> str:
        label = f'engine="0",model_name="{self.served}"'
        info = (f'block_size="{self.block_size}",cache_dtype="fp8_e4m3",enable_prefix_caching="{self.prefix_caching}",'
                f'gpu_memory_utilization="0.85",num_gpu_blocks="{self.num_gpu_blocks}",kv_cache_memory_bytes="None"')
        lines = [
            f"vllm:cache_config_info{{{info}}} 1.0",
            "# TYPE vllm:prefix_cache_queries_total counter",
            f"vllm:prefix_cache_queries_total{{{label}}} {self.queries}",
            f"vllm:prefix_cache_hits_total{{{label}}} {self.hits}",
            f"vllm:prompt_tokens_total{{{label}}} {self.prompt_tokens}",
            f"vllm:generation_tokens_total{{{label}}} {self.generation_tokens}",
            f"vllm:num_requests_running{{{label}}} {self.running}",
            f"vllm:num_requests_waiting{{{label}}} 0.0",
            f"vllm:num_preemptions_total{{{label}}} 0.0",
        ]
        if self.spec:
            lines += [f"vllm:spec_decode_num_draft_tokens_total{{{label}}} {self.drafted}",
                      f"vllm:spec_decode_num_accepted_tokens_total{{{label}}} {self.accepted}"]
        return "\n".join(lines) + "\n"


def _sleep_until(when: float) -> None:
    time.sleep(max(0.0, when - time.monotonic()))


def tokenize(text: str) -> list[int]:
    """A deterministic stand-in tokenizer: one id per whitespace-separated word."""
    return [1000 + zlib.crc32(word.encode()) % 30_000 for word in FILLER_TOKENS.findall(text)]


def _error(message: str, kind: str, code: int) -> str:
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}})


class _BenchHandler(_Handler):
    state: BenchState
    protocol_version = "HTTP/1.1"
    """Keep-alive, as vLLM's server does: no new connection (and thread) per request."""

    def handle(self) -> None:
        try:
            super().handle()
        except (ConnectionResetError, BrokenPipeError):
            pass  # the client hung up (a timeout, Ctrl-C): nothing to answer

    def do_POST(self) -> None:
        self.arrived = time.monotonic()
        length = int(self.headers.get("Content-Length") or 0)
        try:
            self.body: Any = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self.body = None
        self._answer()

    def _answer(self) -> None:
        s = self.state
        if s.llama:
            return self._answer_llama(s)
        if self.path == "/health":
            return self._send(200, "")
        if self.path == "/version":
            return self._send(200, json.dumps({"version": s.version}))
        if self.path == "/v1/models":
            card = {"id": s.served, "object": "model", "root": s.served, "max_model_len": s.max_model_len}
            return self._send(200, json.dumps({"object": "list", "data": [card]}))
        if self.path == "/metrics":
            return self._send(200, s.metrics_text(), "text/plain; version=0.0.4")
        if self.path == "/tokenize":
            return self._tokenize(s)
        if self.path == "/v1/completions":
            return self._complete(s)
        self._send(404, json.dumps({"detail": "Not Found"}))

    def _answer_llama(self, s: BenchState) -> None:
        if self.path == "/health":
            return self._send(200, json.dumps({"status": "ok"}))
        if self.path == "/v1/models":
            card = {"id": s.served, "aliases": [s.served], "object": "model", "owned_by": "llamacpp",
                    "meta": {"vocab_type": 1, "n_ctx": s.max_model_len, "n_ctx_train": s.max_model_len}}
            return self._send(200, json.dumps({"object": "list", "data": [card]}))
        if self.path == "/metrics" and s.metrics:
            return self._send(200, s.llama_metrics_text(), "text/plain; version=0.0.4")
        if self.path == "/metrics":
            return self._send(501, json.dumps({"error": {"code": 501, "message": "This server does not support "
                                                         "metrics endpoint. Start it with `--metrics`",
                                                         "type": "not_supported_error"}}))
        if self.path == "/slots":  # each slot says whether it drafts, as llama-server b11434 answers
            slot = {"n_ctx": s.max_model_len, "speculative": s.spec, "is_processing": False}
            return self._send(200, json.dumps([{"id": i, **slot} for i in range(4)]))
        if self.path == "/tokenize":  # no "content": no tokens, as llama-server answers vLLM's body
            return self._send(200, json.dumps({"tokens": tokenize(self.body.get("content", ""))}))
        if self.path == "/v1/completions":
            return self._complete(s)
        self._send(404, json.dumps({"error": {"message": "File Not Found", "type": "not_found_error", "code": 404}}))

    def _model_ok(self, s: BenchState) -> bool:
        name = self.body.get("model")
        if name not in (None, s.served):
            self._send(404, _error(f"The model `{name}` does not exist.", "NotFoundError", 404))
            return False
        return True

    def _tokenize(self, s: BenchState) -> None:
        if not self._model_ok(s):
            return
        tokens = tokenize(self.body.get("prompt", ""))
        if self.body.get("add_special_tokens", True):
            tokens = [1, *tokens]
        self._send(200, json.dumps({"count": len(tokens), "max_model_len": s.max_model_len, "tokens": tokens}))

    def _complete(self, s: BenchState) -> None:
        if not s.llama and not self._model_ok(s):  # llama-server serves its one model whatever the name
            return
        prompt = self.body.get("prompt")
        prompt = tokenize(prompt) if isinstance(prompt, str) else list(prompt)
        wanted = int(self.body.get("max_tokens", 16))
        if len(prompt) + wanted > s.max_model_len:
            return self._send(400, _error(
                f"This model's maximum context length is {s.max_model_len} tokens. However, you requested "
                f"{len(prompt) + wanted} tokens ({len(prompt)} in the messages, {wanted} in the completion).",
                "BadRequestError", 400))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        uncached = s.admit(prompt)
        self.cached = len(prompt) - uncached
        # Timed from the request's arrival, so the stand-in's own parsing does not count: the fixed
        # overhead runs alongside other requests, the computation of new tokens one request at a time.
        _sleep_until(self.arrived + s.overhead_s)
        with s.prefill_lock:
            _sleep_until(max(self.arrived + s.overhead_s, s.prefill_free_at) + uncached / s.prefill_tok_s)
            s.prefill_free_at = time.monotonic()
        with s.lock:
            s.running += 1
        try:
            self._stream(s, wanted, len(prompt))
        finally:
            with s.lock:
                s.running -= 1

    def _stream(self, s: BenchState, wanted: int, prompt_tokens: int) -> None:
        due = time.monotonic()
        for sent in range(wanted):
            if s.stall_after_tokens is not None and sent >= s.stall_after_tokens:
                s.release.wait(30)
                self.close_connection = True
                return
            if sent:
                due += 1 / s.stream_rate(max(s.running, 1))
                _sleep_until(due)
            self._event({"object": "text_completion", "model": s.served,
                         "choices": [{"index": 0, "text": " tok", "finish_reason": None}]})
            with s.lock:
                s.generation_tokens += 1
                s.drafted += 2
                s.accepted += 2 * (s.acceptance - s.acceptance_drop * (max(s.running, 1) - 1))
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": wanted, "total_tokens": prompt_tokens + wanted}
        if s.llama:  # the usage rides on the last chunk, with its finish_reason, whatever stream_options says
            self._event({"object": "text_completion", "model": s.served,
                         "choices": [{"text": "", "index": 0, "logprobs": None, "finish_reason": "length"}],
                         "usage": {**usage, "prompt_tokens_details": {"cached_tokens": self.cached}},
                         "timings": {"cache_n": self.cached, "prompt_n": prompt_tokens - self.cached}})
        elif (self.body.get("stream_options") or {}).get("include_usage"):
            self._event({"object": "text_completion", "model": s.served, "choices": [], "usage": usage})
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _event(self, data: dict[str, Any]) -> None:
        self._chunk(f"data: {json.dumps(data)}\n\n".encode())

    def _chunk(self, data: bytes) -> None:
        """One piece of a chunked body (an empty one ends it)."""
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def bench_server(**changes: Any) -> Server:
    """A stand-in vLLM with a prefix cache on a free port."""
    return Server(_BenchHandler, BenchState(**changes))
