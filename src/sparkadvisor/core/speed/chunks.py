"""How a launch cuts a prompt: the tokens one forward pass computes (the prefill chunk, llama.cpp's ubatch),
the tokens one call takes (llama.cpp's batch), and how many of them a pipeline's stages work on together.
Read from a recipe's launch flags, else from each engine's defaults, else, for a llama.cpp plan without a
recipe, from the launch the export writes.
"""

from __future__ import annotations

import math

GGML_ENGINES = frozenset({"llama.cpp", "ollama"})
"""Engines whose GEMMs are ggml's CUDA kernels (Ollama runs ggml too)."""

PREFILL_CHUNK_TOKENS = {"llama.cpp": 512, "ollama": 512, "vllm": 8192}
"""Prompt tokens an engine computes per forward pass unless told otherwise; each pass reads every
weight once. llama.cpp: n_ubatch 512 (common/common.h); Ollama: num_batch 512 (api/types.go,
DefaultOptions); vLLM: max_num_batched_tokens 8192 for `vllm serve` on a GPU with >= 70 GiB
(engine/arg_utils.py, get_batch_defaults). Others unknown."""

CHUNK_FLAGS = ("--max-num-batched-tokens", "--chunked-prefill-size", "--ubatch-size", "-ub")
"""Launch flags that set the prefill chunk (vLLM, SGLang, llama.cpp)."""

LLAMA_UBATCH_TOKENS = 2048
"""The physical batch (--ubatch-size) a llama.cpp plan without a recipe is launched with, the export's: llama.cpp's
DGX Spark benchmarks ran at -ub 2048, which its prefill rates are fitted to (llama-server's own default is 512)."""
LLAMA_BATCH_TOKENS = 2048
"""llama.cpp's logical batch (n_batch, common/common.h) unless --batch-size sets it: the tokens one llama_decode call
takes, cut into ubatches of the prefill chunk."""
BATCH_FLAGS = ("--batch-size", "-b")
PIPELINE_UBATCHES = 4
"""Ubatches per --batch-size the export gives a layer split: ggml's scheduler keeps 4 copies of a graph's inputs in
flight when it pipelines (GGML_SCHED_MAX_COPIES, ggml-backend.cpp), and both published two-Spark measurements of
the pipeline ran 4 (-b 2048 -ub 512: tetherto/qvac-fabric-llm.cpp #202, pp2048 +47% with it; unslothai/llama.cpp
#181, "multi-node prefill roughly doubles")."""


def prefill_chunk(engine: str, extra_args: tuple[str, ...], prompt_tokens: float | None,
                  stated: int | None = None) -> int | None:
    """Prompt tokens per forward pass: as stated, else as the launch flags set it, else the engine's
    default (PREFILL_CHUNK_TOKENS); never more than the prompt. None when unknown."""
    chunk = stated or _flag_value(extra_args, CHUNK_FLAGS) or PREFILL_CHUNK_TOKENS.get(engine)
    if chunk is None:
        return None
    return max(1, round(min(chunk, prompt_tokens))) if prompt_tokens else chunk


def llama_batches(batched: int | None, stages: int) -> tuple[int, int]:
    """(--batch-size, --ubatch-size) of the llama.cpp launch the export writes and a llama.cpp plan is costed for:
    a ubatch of the user's --max-num-batched-tokens (`batched`), else `LLAMA_UBATCH_TOKENS`; a batch of one
    ubatch, or `PIPELINE_UBATCHES` of them across pipeline `stages`, so that the stages overlap."""
    ubatch = batched or LLAMA_UBATCH_TOKENS
    return (ubatch * PIPELINE_UBATCHES if stages > 1 else ubatch), ubatch


def pipeline_ubatches(engine: str, stages: int, extra_args: tuple[str, ...], prompt_tokens: float | None,
                      ubatch: int | None, batch: int | None = None) -> int:
    """Ubatches of one prompt that pass `stages` pipeline stages together (0: one stage, nothing to pipeline).

    ggml's scheduler pipelines the ubatches of one llama_decode call across devices (llama-context.cpp,
    pipeline_parallel; RPC devices since llama.cpp #18626 gave them async compute and events), so a batch of M
    ubatches over P stages takes M + P - 1 stage times, not M x P. llama.cpp's batch is `batch` where the launch is
    known (`llama_batches`), else --batch-size, never more ubatches than the prompt fills; Ollama's runner hands
    llama_decode one num_batch of a sequence, which is also its ubatch (llama/llama.go), so its stages take turns.
    vLLM's scheduler counts a chunk computed when it schedules it, so every chunk of a prompt (of
    --max-num-batched-tokens) flows through the stages like a micro-batch (chunked pipeline parallelism, vllm
    #38726). SGLang's and TensorRT-LLM's pipelines are not known here: their stages are counted as overlapping."""
    if stages <= 1 or (engine not in GGML_ENGINES and engine != "vllm"):
        return 0
    if engine == "vllm" and ubatch and prompt_tokens:
        return max(1, math.ceil(prompt_tokens / ubatch))
    if engine != "llama.cpp" or not ubatch:
        return 1
    batch = batch or _flag_value(extra_args, BATCH_FLAGS) or LLAMA_BATCH_TOKENS
    per_call = max(1, batch // ubatch)
    return min(per_call, math.ceil(prompt_tokens / ubatch)) if prompt_tokens else per_call


def _flag_value(args: tuple[str, ...], names: tuple[str, ...]) -> int | None:
    value = launch_flag(args, names)
    return int(value) if value and value.isdecimal() else None


def launch_flag(args: tuple[str, ...], names: tuple[str, ...]) -> str | None:
    """The value launch arguments give the first of `names` they set (`--flag v` or `--flag=v`; a
    long flag's dashes and underscores alike, as vLLM reads them), or None."""
    if not args:
        return None  # most builds have no recipe, so no arguments: skip spelling out the names
    wanted = {_flag_name(name) for name in names}
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if _flag_name(name) in wanted:
            return value if eq else (args[i + 1] if i + 1 < len(args) else None)
    return None


def _flag_name(name: str) -> str:
    return "--" + name[2:].replace("_", "-") if name.startswith("--") else name
