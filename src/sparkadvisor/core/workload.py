"""Workloads: what a turn looks like, and what a person will put up with.

Agentic defaults follow the article: Claude Code resends the system prompt with ~150
tools and the whole history every turn, ~100k tokens of which ~95% match the previous
request, and writes ~200 tokens per turn. Chat is a short context with little reuse and
longer answers. The latency targets are this project's assumptions, shown as such and
editable: the article's gateway logs put a cached first token at 4.3 s and an uncached
one at 73.2 s, and call a minute before every reply unusable for an agent.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from sparkadvisor.core.records import record

WorkloadKind = Literal["agentic", "chat"]


@record(kw_only=False)
class Workload:
    """One kind of use, with its assumptions and latency targets."""

    kind: WorkloadKind
    """agentic or chat."""
    context_tokens: int
    """Prompt tokens per turn (system prompt, tools and history)."""
    prefix_reuse: float
    """Share of the prompt that matches the previous request (0..1)."""
    output_tokens: int
    """Tokens written per turn."""
    tool_calls_required: bool
    """Tool calls must survive intact (a corrupted tool call disqualifies a build)."""
    first_token_target_s: float
    """Longest acceptable wait for the first token."""
    turn_target_s: float
    """Longest acceptable turn (first token plus the answer)."""
    decode_target_tok_s: float
    """Slowest acceptable decode."""
    streams: int = 1
    """Sequences decoding at once (concurrent agents or users); each sees its share of the aggregate."""

    @property
    def label(self) -> str:
        """Name for headers."""
        return "Agentic (Claude Code)" if self.kind == "agentic" else "Chat"

    def changed(self, **changes: float | int | bool) -> Workload:
        """A copy with some assumptions changed."""
        return replace(self, **changes)  # type: ignore[arg-type]


AGENTIC = Workload("agentic", 100_000, 0.95, 200, True, 20.0, 45.0, 10.0)
CHAT = Workload("chat", 8_000, 0.25, 800, False, 5.0, 90.0, 15.0)
WORKLOADS: dict[str, Workload] = {"agentic": AGENTIC, "chat": CHAT}


ENGINES = ("vllm", "llama.cpp", "sglang", "ollama", "trt-llm")
"""Engines a build without a recipe can be costed on (`Settings.engine`); recipes may name more (atlas, ...)."""


@record(kw_only=False)
class Settings:
    """Cluster-wide settings a user may override (None keeps the recipe's or the default)."""

    gpu_memory_utilization: float | None = None
    """--gpu-memory-utilization for every build."""
    kv_cache_dtype: str | None = None
    """--kv-cache-dtype for every build."""
    engine: str | None = None
    """The serving engine a build without a recipe is costed on (a recipe brings its own); None: vLLM,
    or the build's own engine when vLLM cannot serve it (a GGUF file on llama.cpp) or cannot run on the
    hardware."""
    enforce_eager: bool | None = None
    """Costs every build without CUDA graphs (True) or with them (False); None keeps the recipe's."""
    recipe: str | None = None
    """A recipe the user named (export --recipe): on its own build and node count it is followed instead
    of the one the advisor would pick (the newest own bench, else the best-measured published one)."""
    speculation: bool | None = None
    """False: every recipe runs without its drafter (no --speculative-config); None keeps each recipe's."""
    speculative_tokens: int | None = None
    """Tokens a recipe's drafter proposes a pass where a served vLLM's differ from the recipe's (bench, probe
    and the status line read them off its counters); None keeps each recipe's."""
    max_model_len: int | None = None
    """--max-model-len for every build, as a ceiling: each serves the smaller of it and the longest context
    it can (the recipe's --max-model-len or the model's native context, whichever is longer); None keeps
    the recipe's, else the native context."""
    batched_tokens: int | None = None
    """--max-num-batched-tokens for every vLLM build: the tokens one step computes, so the prefill chunk, what
    a sliding-window layer keeps per request beside its window, and what the profile run sizes activations
    for; None keeps the recipe's, else vLLM's API-server default."""


def batch_room(batched: int | None, streams: int) -> str | None:
    """Why `batched` tokens a step cannot run `streams` sequences at once (vLLM caps its --max-num-seqs
    default at --max-num-batched-tokens, and refuses fewer batched tokens than sequences), or None."""
    if batched is None or batched >= streams:
        return None
    return (f"{batched:,} batched tokens are fewer than the {streams} streams: vLLM runs at most that many "
            "sequences a step")


DEFAULT_SETTINGS = Settings()
"""No overrides: every recipe's own values, else the hardware's defaults."""
