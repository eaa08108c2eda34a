"""`sh`: one bash script per node, pre-flight checks first, then the container that serves.

Each script checks what the plan needs of the machine (GPU, swap policy, page cache,
free memory, both ConnectX-7 RoCE devices, the model on disk at its expected size),
then runs vLLM in the recipe's container with the exact argument list of the JSON plan.
Catalog values appear only shell-quoted; caveats appear as comments where they matter.
"""

from __future__ import annotations

from sparkadvisor.core.explain import explain
from sparkadvisor.core.kv import VLLM_BATCHED_TOKENS
from sparkadvisor.core.stages.recipe import recipe_batched_tokens
from sparkadvisor.core.units import GiB
from sparkadvisor.export.argv import EnvRef, Option, max_model_len, resolve
from sparkadvisor.export.llamacpp import AnyLaunch, LlamaNode
from sparkadvisor.export.spec import (
    CONTAINER_HF_HOME,
    CONTAINER_VLLM_CACHE,
    ExportFile,
    Launch,
    NodeLaunch,
    Note,
    PatchUse,
    is_placeholder,
)
from sparkadvisor.export.text import comment, one_line, sh_arg, sh_words

SIZE_TOLERANCE = 0.10
"""Sources disagree on sizes by a few percent (Qwen3.8: 133 GB in the article, 124 GB on disk)."""
FUNCTIONS = [
    "say() { printf '%s\\n' \"$*\"; }",
    "warn() { printf 'WARNING: %s\\n' \"$*\" >&2; }",
    "fail() {",
    "  printf 'PRE-FLIGHT FAILED: %s\\n' \"$*\" >&2",
    "  if [ \"$IGNORE_CHECKS\" != 1 ]; then exit 1; fi",
    "}",
]


def script_name(launch: AnyLaunch, node: NodeLaunch | LlamaNode) -> str:
    """serve.sh on one machine; node0-head.sh, node1-worker.sh, ... on more (vLLM's and llama.cpp's alike)."""
    return "serve.sh" if len(launch.nodes) == 1 else f"node{node.rank}-{node.role}.sh"


def render_sh(launch: Launch) -> tuple[ExportFile, ...]:
    """One executable script per node."""
    return tuple(ExportFile(script_name(launch, n), "\n".join(_script(launch, n)) + "\n", True) for n in launch.nodes)


GENERAL_KINDS = ("quality-loss", "slow-cold-load", "memory-utilization-limit", "spec-decode-cache-miss",
                 "tool-calls-disputed", "output-garbled", "server-crash", "slow-engine", "slow-decode",
                 "prefix-caching-unreliable")
"""Caveat kinds listed in a script's header: nothing in the script acts on them."""


def notes_of(launch: AnyLaunch, *kinds: str) -> list[Note]:
    """The launch's notes of these kinds."""
    return [n for n in launch.notes if n.kind in kinds]


def _script(launch: Launch, node: NodeLaunch) -> list[str]:
    return (_header(launch, node) + ["set -euo pipefail", ""] + _settings(launch, node) + [""] + FUNCTIONS + [""]
            + _preflight(launch, node) + _docker_args(launch, node) + _launch(launch, node))


def _header(launch: Launch, node: NodeLaunch) -> list[str]:
    plan, n = launch.plan, len(launch.nodes)
    lines = ["#!/usr/bin/env bash"]
    lines += comment(f"sparkadvisor export: {plan.model.name} ({plan.build.repo}) on {plan.cluster.label}, "
                     f"{plan.workload.label} workload.")
    if n > 1:
        lines += comment(f"This script: node {node.rank} of {n}, {node.host_hint}. Run each node's script on its "
                         f"own Spark; launcher: {launch.options.launcher}.")
    lines += plan_summary(launch)
    example = f"HF_HOME=/data/hf ./{script_name(launch, node)}"
    return lines + ["#", f"# Override any setting below from the environment, e.g. {example}", ""]


def plan_summary(launch: AnyLaunch) -> list[str]:
    """A script header's comments on the plan: its recipe, the steps sparkadvisor showed, its general caveats."""
    plan, recipe = launch.plan, launch.plan.recipe
    lines = comment(f"Recipe: {recipe.title} [{recipe.id}]." if recipe else
                    "No community recipe: every flag below comes from sparkadvisor's plan alone.")
    lines += ["#", "# The plan (the numbers sparkadvisor showed):"]
    steps = explain(plan)
    for key in ("parallelism", "budget", "pool", "measured", "ttft", "turn"):
        lines += [c for step in steps if step.key == key for c in comment(step.text, "#   ")]
    general = [x for x in launch.notes if x.kind in GENERAL_KINDS]
    if general:
        lines += ["#", "# Caveats:"] + [c for x in general for c in comment(x.text, "#   ")]
    return lines


def _settings(launch: Launch, node: NodeLaunch) -> list[str]:
    refs: dict[str, EnvRef] = {}
    addresses = (launch.head, node.address) if len(launch.nodes) > 1 else ()
    for arg in (*[v for _, v in node.env], *node.vllm_argv, *node.ray_argv, *addresses):
        if isinstance(arg, EnvRef):
            refs.setdefault(arg.name, arg)
    order = sorted(refs.values(), key=lambda r: (r.shell_default is not None, r.name != "HEAD_ADDR", r.name))
    lines = [_setting(r) for r in order]
    lines += [c for r in order if _required(r) for c in _require(launch, node, r)]
    lines += ['HF_CACHE="${HF_HOME:-$HOME/.cache/huggingface}"',
              'VLLM_CACHE="${VLLM_CACHE_ROOT:-$HOME/.cache/vllm}"',
              'IGNORE_CHECKS="${IGNORE_CHECKS:-0}"  # 1: report failed checks and carry on',
              f"CONTAINER=sparkadvisor-vllm-node{node.rank}", f"IMAGE={sh_arg(launch.image)}",
              f"MODEL={sh_arg(launch.downloads[0])}"]
    lines += [f"DRAFT={sh_arg(d)}" for d in launch.downloads[1:2]]
    lines += [f'{var}="${{{var}:-}}"  # a checkout of the recipe repository (its patches mount from it)'
              for var in dict.fromkeys(u.checkout_var for u in launch.patches)]
    if node.vllm_options:
        lines += _array("VLLM_ARGS", launch, node.vllm_options)
    if node.ray_argv:
        lines += [f"RAY_ARGS=({sh_words(node.ray_argv)})"]
    return lines


def _required(ref: EnvRef) -> bool:
    """An address nobody gave (a named placeholder): the script must not run until it is set."""
    return ref.shell_default is None and is_placeholder(ref.default)


def _setting(ref: EnvRef) -> str:
    if _required(ref):
        return f'{ref.name}="${{{ref.name}:-}}"  # required: no address was exported for it'
    return f'{ref.name}="${{{ref.name}:-{ref.shell_default or ref.default}}}"'


def _require(launch: Launch, node: NodeLaunch, ref: EnvRef) -> list[str]:
    """Stop before anything runs while a required address is unset (IGNORE_CHECKS does not skip this)."""
    script = script_name(launch, node)
    if ref.name == "HEAD_ADDR":
        what, option = "the head node's ConnectX-7 address", "--head-addr ADDR"
    else:
        what, option = f"this node's own ConnectX-7 address (worker {node.rank})", "--worker-addrs ADDR,..."
    message = (f"{ref.name} is not set: run {ref.name}=ADDR ./{script} with {what}, or export again with {option}")
    return [f'if [ -z "${ref.name}" ]; then printf \'%s\\n\' {sh_arg(message)} >&2; exit 2; fi']


def _array(name: str, launch: Launch, options: tuple[Option, ...]) -> list[str]:
    lines = [f"{name}=("]
    for option in options:
        lines += [f"  {c}" for c in _flag_comments(launch, resolve(option[0]))]
        lines.append("  " + sh_words(option))
    return lines + [")"]


def _flag_comments(launch: Launch, flag: str) -> list[str]:
    plan = launch.plan
    if flag == "--max-model-len":
        return comment(f"--max-model-len: {max_model_len(plan)[1]}.")
    if flag == "--max-num-batched-tokens" and plan.pool.inputs.batched_set:  # else the recipe's own copy
        own = recipe_batched_tokens(plan.recipe)
        instead = f"the recipe's {own:,}" if own else f"vLLM's default {VLLM_BATCHED_TOKENS:,}"
        return comment(f"--max-num-batched-tokens: as set, not {instead}: the prefill chunk, and what a "
                       "sliding-window layer keeps beside its window.")
    if flag == "--disable-prefix-caching":
        return [c for n in notes_of(launch, "prefix-caching-disabled") if n.loud for c in comment(n.text)]
    if flag == "--enforce-eager":
        return [c for n in notes_of(launch, "eager-only") for c in comment(n.text)]
    if flag == "--kv-cache-memory-bytes" and plan.budget.kv_pinned_bytes is not None:
        return comment(f"the KV cache pinned at {plan.budget.kv_pinned_bytes / GiB:g} GiB per node (G = 2^30 bytes).")
    return []


def _preflight(launch: Launch, node: NodeLaunch) -> list[str]:
    lines = [f"say {sh_arg(f'== pre-flight checks: node {node.rank} of {len(launch.nodes)} ({node.role})')}"]
    lines += [f"warn {sh_arg(one_line(n.text))}" for n in launch.notes if n.loud and n.kind != "patch"]
    lines += gpu_checks(launch) + _container_check()
    return (lines + _patches(launch) + swap_checks(launch) + page_cache_drop(launch) + _memory(launch)
            + _links(launch) + _model(launch) + [""])


def _container_check() -> list[str]:
    """An earlier run's container (a Ray head outlives its vLLM; a server may still run) fails the script before
    it drops caches or weighs memory the old one holds."""
    return ["", "if docker ps -a --format '{{.Names}}' | grep -qx \"$CONTAINER\"; then fail \"a container named "
                "$CONTAINER is still there (an earlier run of this script?): stop it with docker rm -f $CONTAINER, "
                "then run this again\"; fi"]


def gpu_checks(launch: AnyLaunch) -> list[str]:
    """nvidia-smi lists a GPU, and, where one machine runs every GPU of the plan (`spec.machines`), all of them."""
    lines = ["", "if ! nvidia-smi --query-gpu=name --format=csv,noheader; then fail 'nvidia-smi finds no GPU'; fi"]
    gpus = launch.plan.cluster.nodes // len(launch.nodes)
    if gpus > 1:
        lines += [f"if [ \"$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)\" -lt {gpus} ]; then fail "
                  f"'the plan spreads the model over {gpus} GPUs of this machine, and nvidia-smi lists fewer'; fi"]
    return lines


def swap_checks(launch: AnyLaunch) -> list[str]:
    plan = launch.plan
    needed = bool(plan.recipe and plan.recipe.requires.swap) or bool(notes_of(launch, "swap-required"))
    swap_on = '"$(swapon --show --noheadings)"'
    if not needed and not plan.cluster.hardware.unified_memory:
        return []  # a discrete GPU's memory is its own: an overrun is a CUDA OOM, swap or not
    if not needed:
        return ["", f"if [ -n {swap_on} ]; then warn 'swap is on: an overrun will page for hours instead of "
                    "failing with an honest CUDA OOM'; fi"]
    lines = [""] + [c for n in notes_of(launch, "swap-required") for c in comment(n.text)]
    return lines + [f"if [ -z {swap_on} ]; then fail 'this build needs swap on (with vm.swappiness=0) to survive "
                    "the loading peak: a machine-wide policy change, decide it before you run this'; fi",
                    "if [ \"$(sysctl -n vm.swappiness)\" != 0 ]; then fail 'vm.swappiness must be 0: "
                    "sudo sysctl -w vm.swappiness=0'; fi"]


def page_cache_drop(launch: AnyLaunch) -> list[str]:
    plan = launch.plan
    if not (plan.recipe and plan.recipe.requires.drop_page_cache) and not notes_of(launch, "page-cache-drop"):
        return []
    lines = [""] + [c for n in notes_of(launch, "page-cache-drop") for c in comment(n.text)]
    return lines + ["say 'dropping the page cache so the loader gets the memory'", "sync",
                    "sudo sysctl -q -w vm.drop_caches=3"]


def _memory(launch: Launch) -> list[str]:
    b = launch.plan.budget
    what = (f"vLLM takes {b.utilization:g} x {b.usable_bytes / GiB:g} GiB = {b.engine_bytes / GiB:.1f} GiB "
            "at start")
    return memory_check(launch, b.engine_bytes, what)


def memory_check(launch: AnyLaunch, need_bytes: float, what: str) -> list[str]:
    """Stop before the engine starts when what it takes is not free: on unified memory the host's available memory,
    which the GPU allocates from; on a discrete GPU its own free memory (the fullest GPU's: each holds a node's
    share), since the host's says nothing of it."""
    if launch.plan.cluster.hardware.unified_memory:
        need_kib = int(need_bytes // 1024) + 1
        return ["", f"need_kib={need_kib}  # {what}",
                "avail_kib=\"$(free -k | awk '/^Mem:/ {print $7}')\"",
                f"if [ \"${{avail_kib:-0}}\" -lt \"$need_kib\" ]; then fail \"only $((${{avail_kib:-0}} / 1048576)) "
                f"GiB available; {what}\"; fi"]
    need_mib = int(need_bytes // 2**20) + 1
    return ["", f"need_mib={need_mib}  # {what}",
            "avail_mib=\"$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | sort -n | head -n 1)\"",
            'case "$avail_mib" in',
            "  ''|*[!0-9]*) warn \"nvidia-smi gives no free-memory figure ($avail_mib): free GPU memory not "
            "checked\" ;;",
            f"  *) if [ \"$avail_mib\" -lt \"$need_mib\" ]; then fail \"only $((avail_mib / 1024)) GiB free on the "
            f"fullest GPU; {what}\"; fi ;;",
            "esac"]


def _links(launch: Launch) -> list[str]:
    if len(launch.nodes) == 1:
        return []
    return ["", "# Both ConnectX-7 RoCE devices must be up: NCCL over one PCIe x4 twin tops out at 13.9 GB/s.",
            "links=\"$(ibdev2netdev)\"", 'IFS=, read -r -a hcas <<<"$NCCL_IB_HCA"', 'for dev in "${hcas[@]}"; do',
            '  if ! grep -q "^$dev .*(Up)" <<<"$links"; then fail "RoCE device $dev is not up (ibdev2netdev)"; fi',
            "done",
            'if ! ip -o addr show | grep -qF " $NODE_ADDR/"; then fail "no interface here has $NODE_ADDR: '
            'set NODE_ADDR to this node\'s ConnectX-7 address"; fi']


def _model(launch: Launch) -> list[str]:
    w = launch.plan.weights
    low, high = int(w.total_bytes * (1 - SIZE_TOLERANCE)), int(w.total_bytes * (1 + SIZE_TOLERANCE))
    expected = f"{w.total_bytes / 1e9:.1f} GB"
    lines = ["", "# hf download fetches only what is missing (export HF_TOKEN first for a gated repo). vLLM loads the",
             "# files at the top of the repo, so sub-folders (original/ or metal/ copies of the weights) are left out.",
             'model_path="$(hf download "$MODEL" --exclude \'*/*\' --quiet)"',
             'model_bytes="$(find -L "$model_path" -maxdepth 1 -type f -printf \'%s\\n\' '
             '| awk \'{s += $1} END {print s + 0}\')"',
             f'if [ "$model_bytes" -lt {low} ] || [ "$model_bytes" -gt {high} ]; then',
             f'  warn "the model is $((model_bytes / 1000000000)) GB on disk; the plan expects {expected}"', "fi"]
    if len(launch.downloads) > 1:
        lines.append('hf download "$DRAFT" --quiet >/dev/null')
    return lines


def _patches(launch: Launch) -> list[str]:
    """Each patch's files checked in its checkout and mounted; a missing one the plan needs fails."""
    lines = ["", "PATCH_ARGS=()"] if launch.patches else []
    for use in launch.patches:
        lines += _patch_check(use)
    return lines


def _patch_check(use: PatchUse) -> list[str]:
    patch, var = use.patch, use.checkout_var
    dest = f"~/sparkadvisor-recipes/{patch.repo.rsplit('/', 1)[-1]}"
    lines = [""] + comment(f"Patch {patch.id}: {patch.title} ({'needed' if use.needed else 'optional'}: {use.why}).")
    lines += comment(f"Without it {patch.breaks}.") + [f"# Get it (then run with {var}=DIR):"]
    lines += [f"#   {command}" for command in use.clone_command(dest).split(" && ")]
    files = [f'"${var}"/{sh_arg(f.path)}' for f in patch.files]
    present = " && ".join(f"[ -f {path} ]" for path in files)
    mounts = " ".join(f'-v "${var}"/{sh_arg(f"{f.path}:{f.target}:ro")}' for f in patch.files)
    envs = " ".join(f"-e {sh_arg(f'{k}={v}')}" for k, v in patch.env.items())
    missing = (f"patch {patch.id} ({patch.title}) is missing: {var} must name a checkout of {patch.repo}. "
               f"Without it {patch.breaks}. Get it: {use.clone_command(dest)}; then run this script with "
               f"{var}={dest}")
    lines += [f'if [ -n "${var}" ] && {present}; then', f"  PATCH_ARGS+=({mounts}{' ' + envs if envs else ''})"]
    if patch.commit:
        lines += [f'  if [ "$(git -C "${var}" rev-parse HEAD 2>/dev/null)" != {patch.commit} ]; then',
                  f'    warn "${var} is not at commit {patch.commit}, where the catalog read patch {patch.id}"',
                  "  fi"]
    return lines + ["else", f"  {'fail' if use.needed else 'warn'} {sh_arg(missing)}", "fi"]


def _docker_args(launch: Launch, node: NodeLaunch) -> list[str]:
    lines = [c for n in notes_of(launch, "custom-image", "patch-required") for c in comment(n.text)]
    lines += ['if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then docker pull "$IMAGE"; fi', "",
              "# vLLM's compile cache stays on the host, so only the first start compiles: a cold compile takes",
              "# minutes, and vLLM counts its temporary memory against the KV cache (vllm #54122).",
              'mkdir -p "$VLLM_CACHE"', "",
              "# VLLM_API_KEY passes by name: set it in your shell to require a token; no token is written here.",
              "DOCKER_ARGS=(", '  --name "$CONTAINER" --network host --ipc host --gpus all --shm-size 10.24g',
              f'  -v "$HF_CACHE:{CONTAINER_HF_HOME}" -v "$VLLM_CACHE:{CONTAINER_VLLM_CACHE}"', "  -e VLLM_API_KEY"]
    lines += [f"  -e {_env_word(k, v)}" for k, v in node.env]
    lines += ['  "${PATCH_ARGS[@]}"'] if launch.patches else []
    return lines + [")", ""]


def _env_word(key: str, value: object) -> str:
    if isinstance(value, EnvRef):
        return f'"{key}=${value.name}"'
    return sh_arg(f"{key}={value}")


def _launch(launch: Launch, node: NodeLaunch) -> list[str]:
    port = launch.options.port
    lines = [c for n in notes_of(launch, "slow-cold-load") for c in comment(n.text)]
    if node.rank == 0:
        host = "$HEAD_ADDR" if len(launch.nodes) > 1 else "localhost"
        lines.append(f'say "when it has loaded: curl -fsS http://{host}:{port}/health"')
    if not node.ray_argv:
        return lines + ['exec docker run --rm "${DOCKER_ARGS[@]}" --entrypoint vllm "$IMAGE" serve "${VLLM_ARGS[@]}"']
    lines += ['if ! docker run --rm --entrypoint ray "$IMAGE" --version >/dev/null; then',
              "  fail 'the image has no Ray: use --launcher native, or an image with ray[default] installed'", "fi"]
    if node.rank > 0:
        return lines + ['exec docker run --rm "${DOCKER_ARGS[@]}" --entrypoint ray "$IMAGE" "${RAY_ARGS[@]}"']
    count = ("import ray; ray.init(address=\"auto\", logging_level=\"ERROR\"); "
             "print(sum(1 for n in ray.nodes() if n[\"Alive\"]))")
    return lines + ['docker run -d --rm "${DOCKER_ARGS[@]}" --entrypoint ray "$IMAGE" "${RAY_ARGS[@]}" >/dev/null',
                    f"say 'waiting for {len(launch.nodes)} Ray nodes (start the workers now)'",
                    f'until [ "$(docker exec "$CONTAINER" python3 -c {sh_arg(count)} 2>/dev/null || echo 0)" '
                    f"-ge {len(launch.nodes)} ]; do sleep 5; done",
                    'exec docker exec "$CONTAINER" vllm serve "${VLLM_ARGS[@]}"']
