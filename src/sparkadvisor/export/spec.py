"""What an export launches, node by node, built once from a core Plan.

Every format (sh, yaml, compose, claude, md, json) renders this one description, so
the argument list in a script, a config file and the JSON plan is the same list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sparkadvisor.core.plan import Plan
from sparkadvisor.core.units import fmt_seconds
from sparkadvisor.export.argv import Arg, EnvRef, extra_args, launcher_args, model_args
from sparkadvisor.export.flags import vllm_version

Launcher = Literal["native", "ray"]
LAUNCHERS: tuple[Launcher, ...] = ("native", "ray")
"""native (the default): vLLM's own --nnodes/--node-rank/--headless, nothing else to install.
ray: NVIDIA's playbook; Ray ships neither with vLLM 0.33 nor in NGC 26.05 (research/ecosystem.md)."""
DEFAULT_IMAGE = f"vllm/vllm-openai:v{vllm_version()}"
"""Used when no recipe names an image: the vLLM whose flag list every export is checked against."""
ADDRESS_PREFIX = "192.168.100."
"""Example addresses on the ConnectX-7 link (node r at .10+r); scripts read HEAD_ADDR/NODE_ADDR."""
CX7_NETDEV = "enp1s0f1np1"
"""The first ConnectX-7 netdev (pick the "(Up)" one from ibdev2netdev); NVIDIA's playbook default."""
ROCE_DEVICES = "rocep1s0f1,roceP2p1s0f1"
"""Both RoCE devices of the card: NCCL uses one PCIe x4 twin (13.9 GB/s) unless NCCL_IB_HCA lists both (~19 GB/s)."""
RAY_PORT = 6379
CONTAINER_HF_HOME = "/root/.cache/huggingface"


class ExportError(ValueError):
    """A plan that cannot be exported, said in one sentence."""


@dataclass(frozen=True, slots=True)
class ExportOptions:
    """Choices the plan does not make: how to launch, where Claude Code connects, which port."""

    launcher: Launcher = "native"
    """native or ray."""
    gateway_url: str | None = None
    """A gateway Claude Code talks to instead of vLLM itself."""
    port: int = 8000
    """The API port on the head node."""
    head_addr: str | None = None
    """The head node's address as Claude Code and the workers reach it; None keeps the example address."""


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
    vllm_argv: tuple[Arg, ...]
    """Arguments after `vllm serve`, model first; empty on a Ray worker."""
    ray_argv: tuple[Arg, ...]
    """Arguments after `ray` (Ray launcher only)."""


@dataclass(frozen=True, slots=True)
class Launch:
    """A plan made runnable: the image, the served name, the nodes and the notes."""

    plan: Plan
    options: ExportOptions
    image: str
    served_name: str
    head: EnvRef
    nodes: tuple[NodeLaunch, ...]
    notes: tuple[Note, ...]
    downloads: tuple[str, ...]
    """Repos every node downloads before loading: the model, then any draft model."""


def served_model_name(plan: Plan) -> str:
    """The build id with '/' replaced: Claude Code breaks on served names containing '/'."""
    return plan.build.id.replace("/", "-")


def build_launch(plan: Plan, options: ExportOptions = DEFAULT_OPTIONS) -> Launch:
    """The launch for a plan, or ExportError when the plan cannot run as computed."""
    _check(plan, options)
    nodes = plan.cluster.nodes
    head = EnvRef("HEAD_ADDR", options.head_addr or f"{ADDRESS_PREFIX}10")
    served = served_model_name(plan)
    common = model_args(plan, served)
    extra, dropped = extra_args(plan, common)
    launches = tuple(_node(plan, options, rank, head, common + extra) for rank in range(nodes))
    spec = plan.recipe.speculative if plan.recipe else None
    downloads = (plan.build.repo,) + ((spec.draft_repo,) if spec and spec.draft_repo else ())
    image = plan.recipe.image if plan.recipe and plan.recipe.image else DEFAULT_IMAGE
    _check_values([image, *downloads], launches)
    return Launch(plan, options, image, served, head, launches, _notes(plan, dropped, image), downloads)


def _check(plan: Plan, options: ExportOptions) -> None:
    hw = plan.cluster.hardware
    if not plan.fits:
        hint = f"; it needs {plan.nodes_needed} nodes (--nodes {plan.nodes_needed})" if plan.nodes_needed else ""
        raise ExportError(f"{plan.build.id} does not fit on {plan.cluster.label}: there is nothing to launch{hint}")
    if plan.budget.utilization > hw.max_gpu_memory_utilization:
        raise ExportError(f"gpu-memory-utilization {plan.budget.utilization:g} is above the "
                          f"{hw.max_gpu_memory_utilization:g} that is safe on {hw.name}; choose at most that")
    if plan.tp * plan.pp != plan.cluster.nodes:
        raise ExportError(f"TP={plan.tp} x PP={plan.pp} does not match {plan.cluster.nodes} node(s) of one GPU each")
    if options.launcher not in LAUNCHERS:
        raise ExportError(f"unknown launcher {options.launcher!r}; valid: {', '.join(LAUNCHERS)}")


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


def _node(plan: Plan, options: ExportOptions, rank: int, head: EnvRef, common: list[str]) -> NodeLaunch:
    nodes = plan.cluster.nodes
    address = EnvRef("NODE_ADDR", f"{ADDRESS_PREFIX}{10 + rank}")
    role: Literal["head", "worker"] = "head" if rank == 0 else "worker"
    ray = options.launcher == "ray" and nodes > 1
    serve: tuple[Arg, ...] = ()
    if rank == 0 or not ray:
        serve = (*common[:1], *launcher_args(nodes, rank, options.launcher, head), *common[1:])
        if rank == 0:
            serve += ("--host", "0.0.0.0", "--port", str(options.port))
    ray_argv: tuple[Arg, ...] = ()
    if ray:
        ray_argv = (("start", "--block", "--head", f"--port={RAY_PORT}", "--node-ip-address", address) if rank == 0
                    else ("start", "--block", "--address",
                          EnvRef("RAY_HEAD", f"{head.default}:{RAY_PORT}", f"$HEAD_ADDR:{RAY_PORT}"),
                          "--node-ip-address", address))
    hint = (f"spark-{rank + 1} (head: serves the API at {head.default}:{options.port})" if rank == 0
            else f"spark-{rank + 1} (worker {rank}, {address.default})")
    return NodeLaunch(rank, role, hint, address, _env(nodes, ray, head, address), serve, ray_argv)


def _env(nodes: int, ray: bool, head: EnvRef, address: EnvRef) -> tuple[tuple[str, Arg], ...]:
    env: list[tuple[str, Arg]] = [("HF_HOME", CONTAINER_HF_HOME), ("HF_HUB_OFFLINE", "1")]
    if nodes == 1:
        return tuple(env)
    netdev = EnvRef("CX7_NETDEV", CX7_NETDEV)
    env += [("VLLM_HOST_IP", address), ("MASTER_ADDR", head)]
    env += [(name, netdev) for name in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME",
                                        "UCX_NET_DEVICES", "OMPI_MCA_btl_tcp_if_include")]
    env += [("NCCL_IB_HCA", EnvRef("NCCL_IB_HCA", ROCE_DEVICES)), ("NCCL_IB_DISABLE", "0")]
    if ray:
        env.append(("RAY_memory_monitor_refresh_ms", "0"))
    return tuple(env)


def _notes(plan: Plan, dropped: list[str], image: str) -> tuple[Note, ...]:
    notes = [Note(f"{c.kind} ({c.severity}): {c.explanation}", c.severity == "critical", c.kind, True)
             for c in plan.caveats]
    if not plan.prefix_caching:
        why = "" if any(c.kind == "prefix-caching-disabled" for c in plan.caveats) else f" ({plan.prefix_caching_note})"
        notes.append(Note(f"PREFIX CACHING IS OFF{why}: every turn recomputes all {plan.workload.context_tokens:,} "
                          f"prompt tokens, {fmt_seconds(plan.ttft_s)} before each first token; fine for chat, "
                          "unfit for an agent", True, "prefix-caching-disabled"))
    if plan.disqualified_by is not None:
        notes.append(Note(f"RULED OUT for {plan.workload.kind}: {plan.disqualified_by.explanation}", True,
                          "tool-calls-corrupted"))
    if plan.workload.tool_calls_required and not (plan.recipe and plan.recipe.tool_call_parser):
        notes.append(Note("no tool-call parser is known for this build: an agent's tool calls need "
                          "--tool-call-parser NAME --enable-auto-tool-choice; add them before pointing "
                          "Claude Code at it", True, "export"))
    notes += [Note(f"the recipe applies a patch this export does not: {p.title} ({p.files[0].path})", True,
                   "patch-required")
              for p in (plan.recipe.requires.patches if plan.recipe else [])]
    notes += [Note(f"left out of the recipe's arguments: {d}", True, "export") for d in dropped]
    if image == DEFAULT_IMAGE:
        notes.append(Note(f"no recipe names an image: using {DEFAULT_IMAGE}, the vLLM whose flags this export "
                          "was checked against", False, "custom-image"))
    if plan.fit_by_recipe:
        notes.append(Note("the arithmetic says the build does not fit; it runs only as the recipe runs it",
                          True, "export"))
    return tuple(notes)


@dataclass(frozen=True, slots=True)
class ExportFile:
    """One file of an export: a name inside the chosen folder and its text."""

    name: str
    text: str
    executable: bool = False
