"""What an export launches, node by node, built once from a core Plan.

Every format (sh, yaml, compose, claude, md, json) renders this one description, so
the argument list in a script, a config file and the JSON plan is the same list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from sparkadvisor.core.plan import Plan, default_engine
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.core.schema import Patch
from sparkadvisor.core.stages.recipe import engine_arg
from sparkadvisor.core.units import fmt_seconds, fmt_tokens, plural
from sparkadvisor.export import addresses
from sparkadvisor.export.argv import (
    Arg,
    EnvRef,
    Option,
    extra_args,
    flatten,
    is_option,
    launcher_options,
    max_model_len,
    model_options,
)
from sparkadvisor.export.flags import vllm_version

Launcher = Literal["native", "ray"]
LAUNCHERS: tuple[Launcher, ...] = ("native", "ray")
"""native (the default): vLLM's own --nnodes/--node-rank/--headless, nothing else to install.
ray: NVIDIA's playbook; Ray ships neither with vLLM 0.33 nor in NGC 26.05 (research/ecosystem.md)."""
DEFAULT_IMAGE = f"vllm/vllm-openai:v{vllm_version()}"
"""Used when no recipe names an image: the vLLM whose flag list every export is checked against."""
PLACEHOLDER_HOST = "head-address-placeholder.invalid"
"""Stands in for the head's address when none was given: the name says what it is, and the
reserved .invalid domain (RFC 2606) never resolves, so what uses it fails loudly instead of
reaching some other machine. The scripts refuse to run until HEAD_ADDR is set."""


def worker_placeholder(rank: int) -> str:
    """What stands in for worker `rank`'s address when --worker-addrs was not given."""
    return f"worker-{rank}-address-placeholder.invalid"


def is_placeholder(address: str) -> bool:
    """True for a stand-in address (PLACEHOLDER_HOST, worker_placeholder), also with a port or in a list of them
    (RPC_SERVERS), never for a real one."""
    return "-address-placeholder.invalid" in address
CX7_NETDEV = "enp1s0f1np1"
"""The first ConnectX-7 netdev (pick the "(Up)" one from ibdev2netdev); NVIDIA's playbook default."""
ROCE_DEVICES = "rocep1s0f1,roceP2p1s0f1"
"""Both RoCE devices of the card: NCCL uses one PCIe x4 twin (13.9 GB/s) unless NCCL_IB_HCA lists both (~19 GB/s)."""
RAY_PORT = 6379
CONTAINER_HF_HOME = "/root/.cache/huggingface"
CONTAINER_VLLM_CACHE = "/root/.cache/vllm"
"""vLLM's cache root in the container (VLLM_CACHE_ROOT: torch.compile's AOT and Inductor caches), mounted from
the host so that only the first start compiles: a cold compile takes minutes and, charged to the profile run,
sizes the KV cache smaller until a start finds the cache filled (vllm #54122). A new --max-model-len is a new
cache key, so the first start after changing it compiles cold again."""


class ExportError(ValueError):
    """A plan that cannot be exported as asked, said in one sentence (a usage error)."""


class ExportRefused(ExportError):
    """The plan itself cannot run (it does not fit): nothing to launch, whatever the options."""

    def __init__(self, message: str, nodes_needed: int | None = None):
        super().__init__(message)
        self.nodes_needed = nodes_needed
        """The cluster size it would fit on, when there is one (each shell says how to choose it)."""


@dataclass(frozen=True, slots=True)
class ExportOptions:
    """Choices the plan does not make: how to launch, the addresses and NIC, where Claude Code connects."""

    launcher: Launcher = "native"
    """native or ray."""
    gateway_url: str | None = None
    """A gateway Claude Code talks to instead of vLLM itself."""
    port: int = 8000
    """The API port on the head node."""
    head_addr: str | None = None
    """The head node's address as Claude Code and the workers reach it; None: a named placeholder."""
    worker_addrs: tuple[str, ...] = ()
    """Each worker's ConnectX-7 address, rank 1 first; empty: named placeholders."""
    nic: str | None = None
    """The ConnectX-7 netdev NCCL and Gloo use; None keeps NVIDIA's playbook default."""

    @property
    def placeholder_head(self) -> bool:
        """True when no head address was given and PLACEHOLDER_HOST stands in."""
        return self.head_addr is None


DEFAULT_OPTIONS = ExportOptions()
"""The native launcher, vLLM itself as Claude Code's endpoint, port 8000."""


@dataclass(frozen=True, slots=True)
class Note:
    """A caveat or warning an export carries; loud ones become pre-flight warnings."""

    text: str
    loud: bool = False
    kind: str = "other"
    """A caveat kind, or "export" for the exporter's own notes; places the note in a script."""
    from_caveat: bool = False
    """True when the note is one of the plan's caveats, word for word."""


@dataclass(frozen=True, slots=True)
class NodeLaunch:
    """What runs on one node."""

    rank: int
    role: Literal["head", "worker"]
    host_hint: str
    address: EnvRef
    env: tuple[tuple[str, Arg], ...]
    """Environment of the vLLM (and Ray) processes."""
    vllm_options: tuple[Option, ...]
    """`vllm serve`'s arguments as [flag, values...] groups, the model first; empty on a Ray worker."""
    ray_argv: tuple[Arg, ...]
    """Arguments after `ray` (Ray launcher only)."""

    @property
    def vllm_argv(self) -> tuple[Arg, ...]:
        """The arguments after `vllm serve`, model first."""
        return flatten(self.vllm_options)


@dataclass(frozen=True, slots=True)
class PatchUse:
    """A recipe patch as this plan needs it: mounted from a checkout of its repository."""

    patch: Patch
    needed: bool
    """The plan breaks without it, so a missing file fails the pre-flight."""
    why: str
    """Why it is needed or optional, in a sentence."""
    checkout_var: str
    """The environment variable naming the local checkout (RECIPE_DIR for the first repository)."""

    def clone_command(self, dest: str) -> str:
        """The commands that make the checkout in `dest` (the checkout only when a commit is pinned)."""
        clone = f"git clone {self.patch.repo} {dest}"
        if self.patch.commit is None:
            return f"{clone} (no commit is pinned: check the files against the recipe's README)"
        return f"{clone} && git -C {dest} checkout {self.patch.commit}"


@dataclass(frozen=True, slots=True)
class Launch:
    """A plan made runnable: the image, the served name, the nodes and the notes."""

    token_variable: ClassVar[str] = "VLLM_API_KEY"
    """The environment variable vLLM reads its API key from; Claude Code's apiKeyHelper prints it."""
    server_name: ClassVar[str] = "vLLM"

    plan: Plan
    options: ExportOptions
    image: str
    served_name: str
    head: EnvRef
    nodes: tuple[NodeLaunch, ...]
    notes: tuple[Note, ...]
    downloads: tuple[str, ...]
    """Repos every node downloads before loading: the model, then any draft model."""
    patches: tuple[PatchUse, ...] = ()
    """The recipe's patches, each mounted from a checkout of its repository."""


def served_model_name(plan: Plan) -> str:
    """The build id with '/' replaced: Claude Code breaks on served names containing '/'."""
    return plan.build.id.replace("/", "-")


def machines(plan: Plan) -> int:
    """Machines an export launches on: each unified-memory node is a machine of its own (a DGX Spark, cabled to
    the next); discrete GPUs are costed as one host's, joined by its NVLink or PCIe, so one launch spans them."""
    return plan.cluster.nodes if plan.cluster.hardware.unified_memory else 1


def build_launch(plan: Plan, options: ExportOptions = DEFAULT_OPTIONS) -> Launch:
    """The launch for a plan, or ExportError when the plan cannot run as computed."""
    _check(plan, options)
    nodes = machines(plan)
    head = EnvRef("HEAD_ADDR", options.head_addr or PLACEHOLDER_HOST)
    served = served_model_name(plan)
    common = model_options(plan, served)
    extra, dropped, forked = extra_args(plan, common)
    launches = tuple(_node(plan, options, nodes, rank, head, common + extra) for rank in range(nodes))
    spec = plan.recipe.speculative if plan.recipe else None
    downloads = (plan.build.repo,) + ((spec.draft_repo,) if spec and spec.draft_repo else ())
    image = plan.recipe.image if plan.recipe and plan.recipe.image else DEFAULT_IMAGE
    _check_values([image, *downloads], launches)
    patches = patch_uses(plan)
    return Launch(plan, options, image, served, head, launches, _notes(plan, dropped, image, patches, forked),
                  downloads, patches)


def patch_uses(plan: Plan) -> tuple[PatchUse, ...]:
    """The recipe's patches, each with whether this plan needs it and the checkout variable it is read from."""
    patches = plan.recipe.requires.patches if plan.recipe else []
    repos = list(dict.fromkeys(p.repo for p in patches))
    uses = []
    for patch in patches:
        number = repos.index(patch.repo) + 1
        var = "RECIPE_DIR" if number == 1 else f"RECIPE_DIR_{number}"
        uses.append(PatchUse(patch, *_needed(plan, patch), var))
    return tuple(uses)


def _needed(plan: Plan, patch: Patch) -> tuple[bool, str]:
    if patch.fit_depends:
        return True, f"the plan fits {plan.cluster.label} only with it"
    limit, served = patch.fails_past_context_tokens, max_model_len(plan)[0]
    if limit is not None and served is None:
        return True, f"no --max-model-len is written, so vLLM may serve past the ~{limit:,} tokens stock vLLM survives"
    if limit is not None and served is not None and served > limit:
        return True, f"--max-model-len {served:,} is past the ~{limit:,} tokens stock vLLM survives"
    if limit is not None:
        return False, f"--max-model-len {served:,} stays within the ~{limit:,} tokens stock vLLM survives"
    return False, "the recipe applies it; this plan does not depend on it"


def _utilization_origin(plan: Plan) -> str:
    """"recipe X sets gpu-memory-utilization" when the value is the recipe's, else the setting's words."""
    recipe = plan.recipe
    if recipe is not None and recipe.gpu_memory_utilization == plan.budget.utilization:
        return f"recipe {recipe.id} sets gpu-memory-utilization"
    return "gpu-memory-utilization is"


def _other_engine(plan: Plan) -> str | None:
    """Why the exporter writes no launch for the plan's engine (neither vLLM nor llama.cpp, or vLLM for a build
    vLLM does not load), in a sentence, or None."""
    engine, engines = plan.recipe.engine if plan.recipe else plan.constants.engine, plan.build.engines
    how = ("; llama.cpp serves it: export it with --engine llama.cpp" if "llama.cpp" in engines
           else ", so there is nothing to launch for this plan")
    if engine == "vllm" and plan.recipe is None and engines and "vllm" not in engines:
        listed = ", ".join(engines)
        return f"{plan.build.id} is planned on vLLM, which does not load it (the catalog lists {listed}){how}"
    if engine in ("vllm", "llama.cpp"):
        return None
    if plan.recipe is not None:
        why = f"recipe {plan.recipe.id} runs it on {engine}"
    elif engine != default_engine(plan.build, plan.cluster.hardware):
        why = "the engine asked for"
    else:
        why = f"vLLM does not load it; the catalog lists {', '.join(engines)}"
    return f"{plan.build.id} is planned on {engine} ({why}): export writes vLLM and llama.cpp launches only{how}"


def check_runs(plan: Plan, options: ExportOptions) -> None:
    """What every launch needs of a plan: an NVIDIA GPU, a fit, one GPU a node, and options that check out."""
    hw = plan.cluster.hardware
    if not hw.cuda:
        raise ExportRefused(f"{safe_text(hw.name)} is not an NVIDIA GPU: export writes vLLM and llama.cpp "
                            f"launches for CUDA only, so there is nothing to launch for {plan.build.id} here")
    if not plan.fits:
        hint = f"; it needs {plural(plan.nodes_needed, 'node')}" if plan.nodes_needed else ""
        raise ExportRefused(f"{plan.build.id} does not fit on {plan.cluster.label}: there is nothing to launch{hint}",
                            plan.nodes_needed)
    if plan.tp * plan.pp != plan.cluster.nodes:
        raise ExportError(f"TP={plan.tp} x PP={plan.pp} does not match {plural(plan.cluster.nodes, 'node')} of one "
                          "GPU each")
    if options.launcher not in LAUNCHERS:
        raise ExportError(f"unknown launcher {options.launcher!r}; valid: {', '.join(LAUNCHERS)}")
    _check_options(options, machines(plan))


def _check(plan: Plan, options: ExportOptions) -> None:
    hw = plan.cluster.hardware
    if hw.cuda and (why := _other_engine(plan)) is not None:
        raise ExportRefused(why)
    check_runs(plan, options)
    if plan.budget.utilization > hw.max_gpu_memory_utilization:
        # The recipe's own setting is a refusal (exit 1: nothing the user gave was wrong); the user's, a usage error.
        recipes = plan.recipe is not None and plan.recipe.gpu_memory_utilization == plan.budget.utilization
        raise (ExportRefused if recipes else ExportError)(
            f"{_utilization_origin(plan)} {plan.budget.utilization:g}, above the "
            f"{hw.max_gpu_memory_utilization:g} that is safe on {hw.name}; export it with a "
            f"gpu-memory-utilization of {hw.max_gpu_memory_utilization:g} or less "
            "(--gpu-memory-utilization, or a in the app)")
    usable = plan.usable_context
    if not usable.starts:
        whose = "--max-model-len" if usable.basis == "setting" else "the recipe's --max-model-len"
        raise ExportError(f"{whose} {usable.tokens:,} is more than one request of the "
                          f"{fmt_tokens(plan.kv_pool_tokens)}-token KV pool this plan leaves, and vLLM refuses to "
                          f"start past it; export it with a --max-model-len of {usable.pool_cap:,} or less "
                          "(or a in the app)")
    inputs, seqs = plan.pool.inputs, engine_arg(plan.recipe, "--max-num-seqs")
    if inputs.batched_set and seqs and seqs.isdecimal() and int(seqs) > inputs.batched_tokens:
        raise ExportError(f"--max-num-batched-tokens {inputs.batched_tokens:,} is fewer than the recipe's "
                          f"--max-num-seqs {int(seqs):,}, and vLLM refuses to start with fewer batched tokens than "
                          f"sequences; export it with --max-num-batched-tokens {int(seqs):,} or more")


def _check_options(options: ExportOptions, nodes: int) -> None:
    """Addresses, NIC and gateway through the same checks as the CLI's; one sentence for the first bad one."""
    if options.worker_addrs and nodes == 1:
        raise ExportError("--worker-addrs names other machines, and this plan runs on one: export it without "
                          "--worker-addrs")
    if options.worker_addrs and len(options.worker_addrs) != nodes - 1:
        raise ExportError(f"{plural(len(options.worker_addrs), 'worker address', 'worker addresses')} for "
                          f"{plural(nodes - 1, 'worker')}; give one "
                          "per worker, rank 1 first")
    try:
        for value in (options.head_addr, *options.worker_addrs):
            if value is not None:
                addresses.address(value)
        if options.nic is not None:
            addresses.netdev(options.nic)
        if options.gateway_url is not None:
            addresses.gateway_url(options.gateway_url)
    except ValueError as error:
        raise ExportError(str(error)) from None
    given = [a.lower().rstrip(".") for a in (options.head_addr, *options.worker_addrs) if a is not None]
    twice = next((a for n, a in enumerate(given) if a in given[:n]), None)  # host names ignore case
    if twice is not None:
        raise ExportError(f"{twice} is given for two nodes; each node of the cluster needs its own address")
    if not 1 <= options.port <= 65535:
        raise ExportError(f"port {options.port} is not a TCP port (1-65535)")


def _check_values(positional: list[str], launches: tuple[NodeLaunch, ...]) -> None:
    """Catalog values that would change a command's meaning are refused, not quoted."""
    for value in positional:
        if not value or value.startswith("-"):
            raise ExportError(f"the catalog value {value!r} cannot be a repo or image name (it is empty or starts "
                              "with '-', which a command would read as an option)")
    for node in launches:
        for arg in (*node.vllm_argv, *node.ray_argv):
            if "\0" in str(arg):
                raise ExportError("a catalog value contains a NUL character, which no command line can carry")
        for option in node.vllm_options[1:]:
            flag, eq, joined = str(option[0]).partition("=")
            values: list[str | EnvRef] = [joined] if eq else []
            for arg in values + list(option[1:]):
                if isinstance(arg, str) and is_option(arg):
                    raise ExportError(f"the catalog value {arg!r} for {flag} starts with '-': vLLM's parser "
                                      "would read it as an option of its own, in a script and in a config file")


def _node(plan: Plan, options: ExportOptions, nodes: int, rank: int, head: EnvRef,
          common: list[Option]) -> NodeLaunch:
    given = options.head_addr if rank == 0 else _worker_addr(options, rank)
    if given:
        address = EnvRef("NODE_ADDR", given)
    else:  # the head is at HEAD_ADDR; a worker's own address has nothing to derive from
        address = EnvRef("NODE_ADDR", head.default, "$HEAD_ADDR") if rank == 0 else \
            EnvRef("NODE_ADDR", worker_placeholder(rank))
    role: Literal["head", "worker"] = "head" if rank == 0 else "worker"
    ray = options.launcher == "ray" and nodes > 1
    serve: tuple[Option, ...] = ()
    if rank == 0 or not ray:
        serve = (*common[:1], *launcher_options(nodes, rank, options.launcher, head), *common[1:])
        if rank == 0:
            serve += (("--host", "0.0.0.0"), ("--port", str(options.port)))
    ray_argv: tuple[Arg, ...] = ()
    if ray:
        ray_argv = (("start", "--block", "--head", f"--port={RAY_PORT}", "--node-ip-address", address) if rank == 0
                    else ("start", "--block", "--address",
                          EnvRef("RAY_HEAD", f"{head.default}:{RAY_PORT}", f"$HEAD_ADDR:{RAY_PORT}"),
                          "--node-ip-address", address))
    at = f"$HEAD_ADDR:{options.port}, the address you set" if options.placeholder_head else \
        f"{head.default}:{options.port}"
    own = "at $NODE_ADDR, the address you set" if is_placeholder(address.default) else address.default
    hint = (f"{host_name(plan, rank)} (head: serves the API at {at})" if rank == 0
            else f"{host_name(plan, rank)} (worker {rank}, {own})")
    return NodeLaunch(rank, role, hint, address, _env(nodes, ray, head, address, options), serve, ray_argv)


def host_name(plan: Plan, rank: int) -> str:
    """What a script calls its machine: "spark-2" for the second DGX Spark, "this machine, 2 GPUs" for discrete
    GPUs (`machines`)."""
    hardware = plan.cluster.hardware
    if not hardware.unified_memory:
        return f"this machine, {plural(plan.cluster.nodes, 'GPU')}"
    return f"spark-{rank + 1}" if hardware.id == "dgx-spark" else f"{hardware.id}-{rank + 1}"


def _worker_addr(options: ExportOptions, rank: int) -> str | None:
    return options.worker_addrs[rank - 1] if len(options.worker_addrs) >= rank else None


def _env(nodes: int, ray: bool, head: EnvRef, address: EnvRef,
         options: ExportOptions) -> tuple[tuple[str, Arg], ...]:
    env: list[tuple[str, Arg]] = [("HF_HOME", CONTAINER_HF_HOME), ("HF_HUB_OFFLINE", "1"),
                                  ("VLLM_CACHE_ROOT", CONTAINER_VLLM_CACHE)]
    if nodes == 1:
        return tuple(env)
    netdev = EnvRef("CX7_NETDEV", options.nic or CX7_NETDEV)
    env += [("VLLM_HOST_IP", address), ("MASTER_ADDR", head)]
    env += [(name, netdev) for name in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME",
                                        "UCX_NET_DEVICES", "OMPI_MCA_btl_tcp_if_include")]
    env += [("NCCL_IB_HCA", EnvRef("NCCL_IB_HCA", ROCE_DEVICES)), ("NCCL_IB_DISABLE", "0")]
    if ray:
        env.append(("RAY_memory_monitor_refresh_ms", "0"))
    return tuple(env)


def caveat_notes(plan: Plan) -> list[Note]:
    """The plan's caveats word for word, the critical ones loud."""
    return [Note(f"{c.kind} ({c.severity}): {c.explanation}", c.severity == "critical", c.kind, True)
            for c in plan.caveats]


def ruled_out(plan: Plan) -> list[Note]:
    """What rules the plan out for its workload, as a loud note (none when nothing does)."""
    if plan.disqualified_by is None:
        return []
    return [Note(f"RULED OUT for {plan.workload.kind}: {plan.disqualified_by.explanation}", True,
                 "tool-calls-corrupted")]


def _notes(plan: Plan, dropped: list[str], image: str, patches: tuple[PatchUse, ...],
           forked: tuple[str, ...] | list[str] = ()) -> tuple[Note, ...]:
    notes = caveat_notes(plan)
    if not plan.prefix_caching:
        why = "" if any(c.kind == "prefix-caching-disabled" for c in plan.caveats) else f" ({plan.prefix_caching_note})"
        notes.append(Note(f"PREFIX CACHING IS OFF{why}: every turn recomputes all {plan.workload.context_tokens:,} "
                          f"prompt tokens, {fmt_seconds(plan.ttft_s)} before each first token; fine for chat, "
                          "unfit for an agent", True, "prefix-caching-disabled"))
    notes += ruled_out(plan)
    if plan.workload.tool_calls_required and not (plan.recipe and plan.recipe.tool_call_parser):
        notes.append(Note("no tool-call parser is known for this build: an agent's tool calls need "
                          "--tool-call-parser NAME --enable-auto-tool-choice; add them before pointing "
                          "Claude Code at it", True, "export"))
    notes += [_patch_note(use) for use in patches]
    notes += [Note(f"left out of the recipe's arguments: {d}", True, "export") for d in dropped]
    if forked:
        notes.append(Note(f"passed for the recipe's own image {image}, which takes them (stock vLLM 0.33 refuses "
                          f"them): {'; '.join(forked)}", False, "custom-image"))
    if image == DEFAULT_IMAGE:
        notes.append(Note(f"no recipe names an image: using {DEFAULT_IMAGE}, the vLLM whose flags this export "
                          "was checked against", False, "custom-image"))
    if plan.fit_by_recipe:
        notes.append(Note("the arithmetic says the build does not fit; it runs only as the recipe runs it",
                          True, "export"))
    return tuple(notes)


def _patch_note(use: PatchUse) -> Note:
    patch = use.patch
    where = f"{patch.repo} at {patch.commit[:12]}" if patch.commit else f"{patch.repo} (no pinned commit)"
    head = "PATCH REQUIRED" if use.needed else "patch (optional here)"
    return Note(f"{head}: {patch.title}, from {where}, mounted from the checkout named by {use.checkout_var}; "
                f"without it {patch.breaks}; {use.why}", use.needed, "patch")


@dataclass(frozen=True, slots=True)
class ExportFile:
    """One file of an export: a name inside the chosen folder and its text."""

    name: str
    text: str
    executable: bool = False
