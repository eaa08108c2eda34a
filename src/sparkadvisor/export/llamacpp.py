"""What a llama.cpp export launches: `llama-server` on the head, `rpc-server` on every other node.

llama.cpp splits a model by layers, and reaches another machine's GPU through its RPC backend: each
other node runs `rpc-server`, which exposes its devices, and the head's `llama-server --rpc
host:port,...` spreads layers and KV cache over its own GPU and theirs (tools/rpc/README.md at
038514c9). The flags below are the ones llama.cpp documents: the server's in tools/server/README.md
at 00dc8057, rpc-server's in tools/rpc/rpc-server.cpp at 075f1e0a (--host, --port, --cache; it binds
127.0.0.1:50052 unless told otherwise). Both run from a local build of llama.cpp, the way its DGX
Spark benchmarks were run (benches/dgx-spark.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Final, Literal

from sparkadvisor.core.plan import Plan
from sparkadvisor.core.speed.chunks import llama_batches
from sparkadvisor.core.units import GiB, fmt_tokens, plural
from sparkadvisor.export.argv import Arg, EnvRef, Option, flatten, max_model_len
from sparkadvisor.export.spec import (
    PLACEHOLDER_HOST,
    ExportError,
    ExportOptions,
    ExportRefused,
    Launch,
    Note,
    caveat_notes,
    check_runs,
    host_name,
    is_placeholder,
    machines,
    ruled_out,
    served_model_name,
    worker_placeholder,
)

ENGINE = "llama.cpp"
RPC_PROGRAM: Final = "ggml-rpc-server"
"""rpc-server's binary as a current llama.cpp builds it (tools/rpc/CMakeLists.txt; rpc-server in older builds,
which the worker's script also finds)."""
RPC_PORT = 50052
"""rpc-server's default port (rpc-server.cpp), written out so the head's --rpc names the same one."""
ALL_LAYERS = "999"
"""--n-gpu-layers past any model's layer count: every layer on the GPU (llama.cpp caps it at the model's)."""
LOAD_MODE = "none"
"""--load-mode: read the weights instead of mapping the file. With every layer on the GPU, mmap only slows the load
(llama.cpp #14396), on a DGX Spark about tenfold (22 s against 224 s, llama.cpp #27742; lmstudio-ai/lms #366), and
llama.cpp's own DGX Spark benchmarks ran with mmap off. --load-mode replaced --no-mmap (server README)."""
SLOTS = 4
"""--parallel at least: llama-server's own default (--parallel auto is 4 slots sharing one KV cache, tools/server/
server.cpp). With --kv-unified the slots share --ctx-size tokens, each request up to all of them (capped at the
model's training context), so a second request (a subagent, any concurrent call) takes a free slot and leaves the
conversation's slot, and its cached prompt, alone; without it llama-server divides --ctx-size among the slots."""
KV_TYPES = {"auto": None, "float16": None, "bfloat16": "bf16"}
"""--kv-cache-dtype as llama.cpp's --cache-type-k/-v: f16 is its default (the 2 bytes a value the plan counts for
auto); llama.cpp has no fp8 or nvfp4 KV cache (its types: f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1)."""
BUILD_COMMANDS = ("git clone https://github.com/ggml-org/llama.cpp && cd llama.cpp",
                  "cmake -B build -DGGML_CUDA=ON -DGGML_RPC=ON && cmake --build build --config Release -j")
"""How llama.cpp's RPC README builds a CUDA binary with the RPC backend (tools/rpc/README.md)."""


@dataclass(frozen=True, slots=True)
class LlamaNode:
    """What runs on one node: llama-server (the head) or rpc-server (every other node)."""

    rank: int
    role: Literal["head", "worker"]
    host_hint: str
    address: EnvRef
    program: Literal["llama-server", "ggml-rpc-server"]
    options: tuple[Option, ...]
    """The program's arguments as [flag, values...] groups."""

    @property
    def argv(self) -> tuple[Arg, ...]:
        """The arguments after the program's name."""
        return flatten(self.options)


@dataclass(frozen=True, slots=True)
class LlamaLaunch:
    """A plan on llama.cpp made runnable: the nodes, the slots and the notes."""

    token_variable: ClassVar[str] = "LLAMA_API_KEY"
    """The environment variable llama-server reads its API key from (--api-key's env, server README)."""
    server_name: ClassVar[str] = "llama-server"

    plan: Plan
    options: ExportOptions
    served_name: str
    head: EnvRef
    nodes: tuple[LlamaNode, ...]
    notes: tuple[Note, ...]
    streams: int
    """Sequences the KV cache holds at the plan's context at once (--streams): --ctx-size is streams x that."""
    slots: int
    """--parallel: the streams, and never fewer than llama-server's own default (`SLOTS`); they share the KV cache."""
    request_tokens: int | None
    """The plan's context, the longest request; None when the model's context is unknown (no --ctx-size)."""
    kv_bytes_per_node: float | None
    """What the KV cache takes on each node, by the plan's KV arithmetic; None when unknown."""

    @property
    def workers(self) -> tuple[LlamaNode, ...]:
        """The rpc-server nodes, rank 1 first."""
        return self.nodes[1:]


AnyLaunch = Launch | LlamaLaunch
"""A vLLM or a llama.cpp launch, for what renders either (Claude Code's settings, the report, shared checks)."""


def is_llamacpp(plan: Plan) -> bool:
    """The plan runs on llama.cpp: its recipe's engine, else the engine it is costed on."""
    return (plan.recipe.engine if plan.recipe else plan.constants.engine) == ENGINE


def hf_repo_arg(plan: Plan) -> str:
    """--hf-repo's value: the repo and, for a GGUF quant the format names, its tag (gguf-ud-q4_k_xl is
    UD-Q4_K_XL: llama-server takes the first GGUF whose path holds the tag followed by '.' or '-', common/
    download.cpp); without a tag it takes the repo's Q4_K_M file (Q8_0 next, in current builds), else its first."""
    fmt = plan.build.format
    return f"{plan.build.repo}:{fmt.removeprefix('gguf-').upper()}" if fmt.startswith("gguf-") else plan.build.repo


def untagged_note(plan: Plan) -> str | None:
    """What --hf-repo picks when the build's format names no GGUF quant tag; None when it names one."""
    if plan.build.format.startswith("gguf-"):
        return None
    return (f"{plan.build.format} names no GGUF quant tag: llama-server takes the repo's Q4_K_M file (or Q8_0), "
            "else its first one; check that is the file the catalog sized")


def build_llama_launch(plan: Plan, options: ExportOptions) -> LlamaLaunch:
    """The llama.cpp launch for a plan, or ExportError (ExportRefused when the plan cannot run)."""
    if options.launcher != "native" and machines(plan) > 1:
        raise ExportError("llama.cpp reaches the other nodes through its RPC backend, not Ray: export it with "
                          "--launcher native (the default)")
    check_runs(plan, options)
    if ENGINE not in plan.build.engines:
        how = ": export it with --engine vllm" if "vllm" in plan.build.engines else \
            ", so there is nothing to launch for it"
        raise ExportRefused(f"llama.cpp does not load {plan.build.id} (the catalog lists "
                            f"{', '.join(plan.build.engines)}){how}")
    if not plan.build.format.startswith("gguf-") and "vllm" in plan.build.engines:
        raise ExportRefused(f"llama.cpp loads GGUF files, and {plan.build.repo} holds {plan.build.format} weights "
                            "for vLLM: export it with --engine vllm, or choose a GGUF build of "
                            f"{plan.model.name}")
    if any(":" in address for address in options.worker_addrs):
        raise ExportError("llama.cpp's --rpc names each worker as host:port: give the workers' IPv4 addresses or "
                          "host names")
    streams, request_tokens = _streams(plan)
    slots = max(streams, SLOTS)
    head = EnvRef("HEAD_ADDR", options.head_addr or PLACEHOLDER_HOST)
    workers = tuple(_worker(plan, options, rank) for rank in range(1, machines(plan)))
    served = served_model_name(plan).replace(",", "-")  # --alias takes a comma-separated list of names
    nodes = (LlamaNode(0, "head", _head_hint(plan, options), head, "llama-server",
                       _server_options(plan, options, served, streams, slots, request_tokens, workers)),
             *workers)
    _check_values(nodes)
    return LlamaLaunch(plan, options, served, head, nodes, _notes(plan, options, streams, request_tokens), streams,
                       slots, request_tokens, _kv_bytes(plan, streams, request_tokens))


def _check_values(nodes: tuple[LlamaNode, ...]) -> None:
    """Catalog values that would change a command's meaning are refused, not quoted."""
    for node in nodes:
        for option in node.options:
            for value in option[1:]:
                if isinstance(value, str) and ("\0" in value or value.startswith("-")):
                    raise ExportError(f"the catalog value {value!r} for {option[0]} cannot be passed (it starts with "
                                      "'-', which llama-server would read as an option, or holds a NUL)")


def _head_hint(plan: Plan, options: ExportOptions) -> str:
    at = f"{options.head_addr}:{options.port}" if options.head_addr else f"port {options.port}"
    return f"{host_name(plan, 0)} (head: llama-server serves the API at {at})"


def _worker(plan: Plan, options: ExportOptions, rank: int) -> LlamaNode:
    given = options.worker_addrs[rank - 1] if len(options.worker_addrs) >= rank else None
    address = EnvRef("NODE_ADDR", given or worker_placeholder(rank))
    own = address.default if given else "at $NODE_ADDR, the address you set"
    return LlamaNode(rank, "worker", f"{host_name(plan, rank)} (rpc-server {rank}, {own})", address, RPC_PROGRAM,
                     (("--host", address), ("--port", str(RPC_PORT)), ("--cache",)))


def _streams(plan: Plan) -> tuple[int, int | None]:
    """(streams, the plan's context): the KV cache holds that many requests of that length; refused when they
    outgrow the KV pool."""
    streams, tokens = max(1, plan.workload.streams), max_model_len(plan)[0]
    pool = plan.kv_pool_tokens
    if tokens is not None and pool is not None and streams * tokens > pool:
        raise ExportError(f"{plural(streams, 'stream')} of {tokens:,} tokens need {streams * tokens:,} tokens of "
                          f"KV cache, more than the {fmt_tokens(pool)}-token pool this plan leaves; export it with "
                          f"fewer --streams or a --max-model-len of {int(pool) // streams // 1024 * 1024:,} or less")
    return streams, tokens


def _kv_type(plan: Plan) -> str | None:
    dtype = plan.kv_cache_dtype
    if dtype not in KV_TYPES:
        raise ExportError(f"llama.cpp has no {dtype} KV cache (its types are f16, bf16, q8_0 and other "
                          "block quants): export it with --kv-cache-dtype auto or bfloat16")
    return KV_TYPES[dtype]


def launch_batches(plan: Plan) -> tuple[int, int]:
    """(--batch-size, --ubatch-size): the ones the plan's prefill is costed for (`chunks.llama_batches`), from the
    user's --max-num-batched-tokens."""
    inputs = plan.pool.inputs
    return llama_batches(inputs.batched_tokens if inputs.batched_set else None, plan.pp)


def batch_args(plan: Plan) -> tuple[str, ...]:
    """--batch-size and --ubatch-size as the export passes them, which the plan's prefill is costed for."""
    batch, ubatch = launch_batches(plan)
    return ("--batch-size", str(batch), "--ubatch-size", str(ubatch))


def _server_options(plan: Plan, options: ExportOptions, served: str, streams: int, slots: int,
                    request_tokens: int | None, workers: tuple[LlamaNode, ...]) -> tuple[Option, ...]:
    groups: list[Option] = [("--hf-repo", hf_repo_arg(plan)), ("--no-mmproj",), ("--alias", served),
                            ("--host", "0.0.0.0"), ("--port", str(options.port))]
    if request_tokens is not None:
        groups.append(("--ctx-size", str(streams * request_tokens)))
    batch, ubatch = launch_batches(plan)
    groups += [("--parallel", str(slots)), ("--kv-unified",), ("--n-gpu-layers", ALL_LAYERS),
               ("--load-mode", LOAD_MODE), ("--batch-size", str(batch)), ("--ubatch-size", str(ubatch))]
    if (kv_type := _kv_type(plan)) is not None:
        groups += [("--cache-type-k", kv_type), ("--cache-type-v", kv_type)]
    groups += [("--jinja",), ("--metrics",)]
    if workers:
        rpc = ",".join(f"{w.address.default}:{RPC_PORT}" for w in workers)
        groups.append(("--rpc", EnvRef("RPC_SERVERS", rpc)))
    return tuple(groups)


def _kv_bytes(plan: Plan, streams: int, request_tokens: int | None) -> float | None:
    """The KV cache on each node: `streams` requests by vLLM's per-request arithmetic for the plan's shape (a
    window keeps a batch beside it), split over the nodes' layers."""
    shape = plan.pool.shape
    if shape is None or request_tokens is None:
        return None
    return streams * shape.request_bytes(request_tokens, None, launch_batches(plan)[1])


def _notes(plan: Plan, options: ExportOptions, streams: int, request_tokens: int | None) -> tuple[Note, ...]:
    notes = caveat_notes(plan) + ruled_out(plan)
    if (untagged := untagged_note(plan)) is not None:
        notes.append(Note(untagged, False, "export"))
    if request_tokens is None:
        notes.append(Note("the model's context window is unknown: no --ctx-size is written, so llama-server "
                          "takes the context from the GGUF", False, "export"))
    elif streams > 1:
        notes.append(Note(f"a KV cache of {streams} x {request_tokens:,} tokens, shared by the slots (--kv-unified): "
                          f"{streams} requests of the full context at once", False, "export"))
    if machines(plan) > 1:
        notes.append(Note("llama.cpp's RPC backend is a proof of concept, fragile and insecure (its README): "
                          "rpc-server listens on each node's own address only; never expose it on an open "
                          "network", True, "export"))
        if options.nic:
            notes.append(Note(f"--nic {options.nic} is for vLLM's NCCL: llama.cpp's RPC goes to the addresses "
                              "in --rpc", False, "export"))
    if plan.fit_by_recipe:
        notes.append(Note("the arithmetic says the build does not fit; it runs only as the recipe runs it",
                          True, "export"))
    return tuple(notes)


def llama_json(launch: LlamaLaunch) -> dict[str, object]:
    """The plan for automation: {"engine", "build", "nodes": [{"role", "program", "argv"}]}."""
    from sparkadvisor.export.argv import resolve

    nodes = [{"role": n.role, "rank": n.rank, "host_hint": n.host_hint, "program": n.program,
              "argv": [resolve(a) for a in n.argv]} for n in launch.nodes]
    return {"engine": ENGINE, "build": launch.plan.build.id,
            "recipe": launch.plan.recipe.id if launch.plan.recipe else None, "served_model_name": launch.served_name,
            "streams": launch.streams, "slots": launch.slots, "request_tokens": launch.request_tokens,
            "kv_gib_per_node": None if launch.kv_bytes_per_node is None else round(launch.kv_bytes_per_node / GiB, 2),
            "nodes": nodes, "notes": [n.text for n in launch.notes]}


def placeholder_workers(launch: LlamaLaunch) -> bool:
    """No worker address was given: the head's --rpc and each rpc-server's --host name placeholders."""
    return any(is_placeholder(w.address.default) for w in launch.workers)
