"""`sh` for llama.cpp: one bash script per node, pre-flight checks first, then llama-server or rpc-server.

The head's script checks the GPU, that the llama-server it runs knows every flag it passes and sees a
CUDA device, the swap policy and free memory, and, on more nodes, that each worker's rpc-server answers;
then it execs llama-server with the exact argument list of the JSON plan. A worker's script checks its
GPU, its address and memory, and execs rpc-server bound to that address. Catalog values appear only
shell-quoted.
"""

from __future__ import annotations

from sparkadvisor.core.units import GiB
from sparkadvisor.export.argv import EnvRef, Option, resolve
from sparkadvisor.export.llamacpp import (
    BUILD_COMMANDS,
    RPC_PORT,
    LlamaLaunch,
    LlamaNode,
    launch_batches,
    placeholder_workers,
    untagged_note,
)
from sparkadvisor.export.shell import (
    FUNCTIONS,
    gpu_checks,
    memory_check,
    page_cache_drop,
    plan_summary,
    script_name,
    swap_checks,
)
from sparkadvisor.export.spec import ExportFile, is_placeholder
from sparkadvisor.export.text import comment, one_line, sh_arg, sh_words


def render_llama_sh(launch: LlamaLaunch) -> tuple[ExportFile, ...]:
    """One executable script per node."""
    return tuple(ExportFile(script_name(launch, n), "\n".join(_script(launch, n)) + "\n", True) for n in launch.nodes)


def _script(launch: LlamaLaunch, node: LlamaNode) -> list[str]:
    body = _head_checks(launch, node) if node.role == "head" else _worker_checks()
    return (_header(launch, node) + ["set -euo pipefail", ""] + _settings(launch, node) + [""] + FUNCTIONS + [""]
            + _common_checks(launch, node) + body + [""] + _launch(launch, node))


def _header(launch: LlamaLaunch, node: LlamaNode) -> list[str]:
    plan, n = launch.plan, len(launch.nodes)
    lines = ["#!/usr/bin/env bash"]
    lines += comment(f"sparkadvisor export: {plan.model.name} ({plan.build.repo}) on {plan.cluster.label}, "
                     f"{plan.workload.label} workload, on llama.cpp.")
    if n > 1:
        lines += comment(f"This script: node {node.rank} of {n}, {node.host_hint}. Start every worker's script "
                         "first, then the head's.")
    lines += plan_summary(launch)
    rpc = " and its RPC backend" if n > 1 else ""
    lines += ["#"] + comment(f"llama.cpp runs from a local build with CUDA{rpc}, as its own DGX Spark benchmarks "
                             "were run. Build it once on every node:")
    lines += [f"#   {command}" for command in BUILD_COMMANDS]
    program = "LLAMA_SERVER=~/llama.cpp/build/bin/llama-server" if node.role == "head" else \
        "RPC_SERVER=~/llama.cpp/build/bin/ggml-rpc-server"
    return lines + ["#", f"# Override any setting below from the environment, e.g. {program} "
                         f"./{script_name(launch, node)}", ""]


def _settings(launch: LlamaLaunch, node: LlamaNode) -> list[str]:
    lines = ['IGNORE_CHECKS="${IGNORE_CHECKS:-0}"  # 1: report failed checks and carry on']
    if node.role == "head":
        lines.append('LLAMA_SERVER="${LLAMA_SERVER:-llama-server}"  # the llama-server of your build')
    else:
        lines.append('RPC_SERVER="${RPC_SERVER:-}"  # empty: ggml-rpc-server or rpc-server, whichever is on PATH')
    refs = [a for a in node.argv if isinstance(a, EnvRef)]
    lines += [_setting(launch, r) for r in refs]
    lines += [c for r in refs if _required(launch, r) for c in _require(launch, node, r)]
    name = "LLAMA_ARGS" if node.role == "head" else "RPC_ARGS"
    return lines + [f"{name}=("] + [f"  {c}" for o in node.options for c in _flag_comments(launch, o)] + [")"]


def _required(launch: LlamaLaunch, ref: EnvRef) -> bool:
    """An address nobody gave (a named placeholder): the script must not run until it is set."""
    return placeholder_workers(launch) if ref.name == "RPC_SERVERS" else is_placeholder(ref.default)


def _setting(launch: LlamaLaunch, ref: EnvRef) -> str:
    if _required(launch, ref):
        return f'{ref.name}="${{{ref.name}:-}}"  # required: no address was exported for it'
    return f'{ref.name}="${{{ref.name}:-{ref.default}}}"'


def _require(launch: LlamaLaunch, node: LlamaNode, ref: EnvRef) -> list[str]:
    """Stop before anything runs while a required address is unset (IGNORE_CHECKS does not skip this)."""
    script = script_name(launch, node)
    if ref.name == "RPC_SERVERS":
        example = ",".join(f"ADDR{w.rank}:{RPC_PORT}" for w in launch.workers)
        message = (f"RPC_SERVERS is not set: run RPC_SERVERS={example} ./{script} with each worker's "
                   "address, rank 1 first, or export again with --worker-addrs ADDR,...")
    else:
        message = (f"NODE_ADDR is not set: run NODE_ADDR=ADDR ./{script} with this node's own address on the link "
                   "to the head (rpc-server listens there only), or export again with --worker-addrs ADDR,...")
    return [f'if [ -z "${ref.name}" ]; then printf \'%s\\n\' {sh_arg(message)} >&2; exit 2; fi']


def _flag_comments(launch: LlamaLaunch, option: Option) -> list[str]:
    """The option's line in the argument array, under a comment where the value needs one."""
    flag, why = resolve(option[0]), ""
    if flag == "--hf-repo":
        why = untagged_note(launch.plan) or ""
    elif flag == "--ctx-size":
        why = (f"--ctx-size: {launch.streams} x {launch.request_tokens:,} tokens, one KV cache the --parallel slots "
               "share (--kv-unified); each request may use all of it, up to the model's training context.")
    elif flag == "--parallel":
        why = (f"--parallel {launch.slots}: llama-server's own default is 4 slots; a second request (a subagent, a "
               "concurrent call) takes a free slot, so the conversation's slot keeps its cached prompt.")
    elif flag == "--n-gpu-layers":
        why = "--n-gpu-layers: every layer on the GPU (a number past any model's layer count)."
    elif flag == "--load-mode":
        why = ("--load-mode none: read the weights rather than map the file; on a DGX Spark mmap loads about ten "
               "times slower (llama.cpp #27742).")
    elif flag == "--batch-size" and (batches := launch_batches(launch.plan))[0] > batches[1]:
        why = (f"--batch-size: {batches[0] // batches[1]} ubatches a batch, which llama.cpp pipelines across the "
               "devices' layers; with one ubatch a batch the devices would take turns.")
    elif flag == "--ubatch-size" and not launch.plan.pool.inputs.batched_set:
        why = "--ubatch-size: the batch llama.cpp's DGX Spark benchmarks ran with (its default is 512)."
    elif flag == "--no-mmproj":
        why = "--no-mmproj: the plan counts the text model only; drop this to load the vision projector too."
    elif flag == "--metrics":
        why = "--metrics: the Prometheus counters `sparkadvisor probe` reads (llama-server leaves them off)."
    elif flag == "--rpc":
        why = "--rpc: each worker's rpc-server, rank 1 first; the layers are split over every node's GPU."
    return [*comment(why), sh_words(option)] if why else [sh_words(option)]


def _common_checks(launch: LlamaLaunch, node: LlamaNode) -> list[str]:
    lines = [f"say {sh_arg(f'== pre-flight checks: node {node.rank} of {len(launch.nodes)} ({node.role})')}"]
    lines += [f"warn {sh_arg(one_line(n.text))}" for n in launch.notes if n.loud]
    lines += gpu_checks(launch)
    return lines + swap_checks(launch) + page_cache_drop(launch) + _memory(launch, node)


def _memory(launch: LlamaLaunch, node: LlamaNode) -> list[str]:
    plan, kv = launch.plan, launch.kv_bytes_per_node
    weights = plan.weights_per_node
    what = f"{'llama.cpp loads' if node.role == 'head' else 'rpc-server holds'} {weights / GiB:.1f} GiB of weights"
    what += f" and {kv / GiB:.1f} GiB of KV cache" if kv is not None else " (its KV cache is unknown)"
    what += " on this node; its compute buffers come on top"
    return memory_check(launch, weights + (kv or 0.0), what)


def _head_checks(launch: LlamaLaunch, node: LlamaNode) -> list[str]:
    flags = " ".join(dict.fromkeys(resolve(o[0]) for o in node.options))
    missing = (f"no llama-server at $LLAMA_SERVER: build llama.cpp ({'; '.join(BUILD_COMMANDS)}) and run with "
               "LLAMA_SERVER=build/bin/llama-server")
    lines = ["", 'if ! command -v "$LLAMA_SERVER" >/dev/null; then', f'  fail "{missing}"', "fi",
             'help="$("$LLAMA_SERVER" --help 2>&1 || true)"',
             f"for flag in {flags}; do",
             '  if ! grep -qF -- "$flag" <<<"$help"; then fail "this llama-server does not know $flag: build a newer '
             'llama.cpp"; fi',
             "done",
             'if ! "$LLAMA_SERVER" --list-devices 2>&1 | grep -q CUDA; then',
             "  fail 'this llama-server lists no CUDA device: build llama.cpp with -DGGML_CUDA=ON'",
             "fi"]
    if launch.workers:
        lines += ["", "# Each worker's rpc-server must be up before llama-server spreads the layers over it.",
                  'IFS=, read -r -a rpc_servers <<<"$RPC_SERVERS"', 'for server in "${rpc_servers[@]}"; do',
                  "  # shellcheck disable=SC2016  # the inner bash expands $1: the address reaches it as an argument",
                  '  if ! timeout 5 bash -c \'exec 3<>"/dev/tcp/${1%:*}/${1##*:}"\' _ "$server" 2>/dev/null; then',
                  '    fail "no rpc-server answers at $server: start that worker\'s script first"',
                  "  fi", "done"]
    return lines


def _worker_checks() -> list[str]:
    return ["", 'if [ -z "$RPC_SERVER" ]; then',
            '  RPC_SERVER="$(command -v ggml-rpc-server || command -v rpc-server || true)"', "fi",
            'if [ -z "$RPC_SERVER" ]; then',
            "  fail 'no rpc-server on PATH: build llama.cpp with -DGGML_CUDA=ON -DGGML_RPC=ON and run with "
            "RPC_SERVER=build/bin/ggml-rpc-server (rpc-server in older builds)'", "fi",
            'if ! ip -o addr show | grep -qF " $NODE_ADDR/"; then fail "no interface here has $NODE_ADDR: set '
            'NODE_ADDR to this node\'s own address on the link to the head"; fi']


def _launch(launch: LlamaLaunch, node: LlamaNode) -> list[str]:
    if node.role == "worker":
        return comment("rpc-server keeps this node's share of the weights in its cache (--cache, under "
                       "$LLAMA_CACHE or ~/.cache/llama.cpp/rpc), so a restart need not send them again.") + \
            ['exec "$RPC_SERVER" "${RPC_ARGS[@]}"']
    port, size = launch.options.port, launch.plan.weights.total_bytes / 1e9
    lines = comment(f"The first start downloads the model ({size:.1f} GB) into llama.cpp's cache (export HF_TOKEN "
                    "first for a gated repo). LLAMA_API_KEY passes by name: set it to require a token; no token "
                    "is written here.")
    return lines + [f'say "when it has loaded: curl -fsS http://localhost:{port}/health"',
                    'exec "$LLAMA_SERVER" "${LLAMA_ARGS[@]}"']
