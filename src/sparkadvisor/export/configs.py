"""`yaml` (a vLLM --config file per node) and `compose` (a docker compose file per node).

Both are built as data and written by the YAML emitter (`export.yamlout`), never by pasting
strings, and both hold the same option groups as the scripts. vLLM turns a --config file back
into argv key by key (`FlexibleArgumentParser.load_config_file`): `key: true` becomes `--key`,
a string `--key value`, a list `--key v1 v2`; a `false` is silently dropped, so prefix caching
off is written `disable-prefix-caching: true`. Compose interpolates `$`, so every literal `$`
is doubled; only the export's own `${VAR:-default}` references are left to interpolate.
"""

from __future__ import annotations

from typing import Any

from sparkadvisor.export.argv import Arg, EnvRef, Option, resolve
from sparkadvisor.export.flags import long_name, option_name
from sparkadvisor.export.spec import (
    CONTAINER_HF_HOME,
    CONTAINER_VLLM_CACHE,
    ExportError,
    ExportFile,
    Launch,
    NodeLaunch,
    is_placeholder,
)
from sparkadvisor.export.text import comment
from sparkadvisor.export.yamlout import dump


def _suffix(launch: Launch, node: NodeLaunch) -> str:
    return "" if len(launch.nodes) == 1 else f"-node{node.rank}-{node.role}"


def _header(launch: Launch, node: NodeLaunch, what: str) -> list[str]:
    plan = launch.plan
    lines = comment(f"sparkadvisor export: {plan.model.name} ({plan.build.repo}) on {plan.cluster.label}: {what}")
    if len(launch.nodes) > 1:
        lines += comment(f"node {node.rank} of {len(launch.nodes)}, {node.host_hint}")
    lines += comment("No pre-flight checks run from this file: the sh export's scripts carry them.")
    stand_ins = [a for a in dict.fromkeys(n.address.default for n in launch.nodes) if is_placeholder(a)]
    if stand_ins and len(launch.nodes) > 1:
        lines += comment(f"{', '.join(stand_ins)}: placeholders that never resolve, not addresses; export again "
                         "with --head-addr and --worker-addrs, or write the addresses in here.")
    return lines + [c for n in launch.notes if n.loud for c in comment("WARNING: " + n.text)]


def option_entry(option: Option) -> tuple[str, Any]:
    """One option group as a --config key and value: `--flag=v` and `--flag v` both give `flag: "v"`."""
    first = resolve(option[0])
    flag = option_name(first)
    values = [first.split("=", 1)[1]] if "=" in first else []
    values += [resolve(a) for a in option[1:]]
    key = long_name(flag).removeprefix("--")
    if not values:
        return key, True
    return key, values[0] if len(values) == 1 else values


def config_mapping(node: NodeLaunch) -> dict[str, Any]:
    """The --config file's content: the model, then every option of the node's `vllm serve`."""
    data: dict[str, Any] = {"model": resolve(node.vllm_options[0][0])}
    for option in node.vllm_options[1:]:
        key, value = option_entry(option)
        if key in data:
            raise ExportError(f"--{key} appears twice in the arguments; a config file can hold it once")
        data[key] = value
    return data


def render_yaml(launch: Launch) -> tuple[ExportFile, ...]:
    """A vLLM --config file for every node that runs `vllm serve`."""
    files = []
    for node in launch.nodes:
        if not node.vllm_options:
            continue
        name = f"vllm-config{_suffix(launch, node)}.yaml"
        lines = _header(launch, node, "a vLLM --config file")
        lines += comment(f"Run inside the image {launch.image}: vllm serve --config {name}")
        lines += [c for e in (f"export {k}={resolve(v)}" for k, v in node.env) for c in comment(e, "#   ")]
        for use in launch.patches:
            lines += comment(f"{'Needs' if use.needed else 'Optional'}: patch {use.patch.id} mounted into the "
                             f"container ({', '.join(f.target for f in use.patch.files)}); the sh export does it.")
        files.append(ExportFile(name, "\n".join(lines) + "\n" + dump(config_mapping(node))))
    return tuple(files)


def _compose_str(arg: Arg) -> str:
    """A compose value: an EnvRef interpolates with its default, a literal has every `$` doubled. An
    address nobody gave is required instead (`${HEAD_ADDR:?...}`: compose refuses to start without it);
    the head's own address is HEAD_ADDR's."""
    if isinstance(arg, EnvRef) and is_placeholder(arg.default):
        name = arg.shell_default.removeprefix("$") if arg.shell_default == "$HEAD_ADDR" else arg.name
        whose = "the head node's" if name == "HEAD_ADDR" else "this node's own"
        return f"${{{name}:?set {name} to {whose} ConnectX-7 address}}"
    if isinstance(arg, EnvRef):
        return f"${{{arg.name}:-{arg.default}}}"
    return arg.replace("$", "$$")


def _volumes(launch: Launch) -> list[str]:
    volumes = [f"${{HF_HOME:-${{HOME}}/.cache/huggingface}}:{CONTAINER_HF_HOME}",
               f"${{VLLM_CACHE_ROOT:-${{HOME}}/.cache/vllm}}:{CONTAINER_VLLM_CACHE}"]
    for use in launch.patches:
        checkout = f"${{{use.checkout_var}:?set {use.checkout_var} to a checkout of the recipe repository}}"
        volumes += [f"{checkout}/{f.path}:{f.target}:ro" for f in use.patch.files]
    return volumes


def _environment(launch: Launch, node: NodeLaunch) -> list[str]:
    env = ["VLLM_API_KEY"]
    env += [f"{key}={_compose_str(value)}" for key, value in node.env]
    env += [f"{key}={_compose_str(value)}" for use in launch.patches for key, value in use.patch.env.items()]
    return env


def compose_mapping(launch: Launch, node: NodeLaunch) -> dict[str, Any]:
    """The compose file's content for one node."""
    service = {
        "image": _compose_str(launch.image), "container_name": f"sparkadvisor-vllm-node{node.rank}",
        "network_mode": "host", "ipc": "host", "shm_size": "10.24gb", "entrypoint": ["vllm"],
        "command": ["serve", *(_compose_str(a) for a in node.vllm_argv)],
        "environment": _environment(launch, node), "volumes": _volumes(launch),
        "deploy": {"resources": {"reservations": {"devices": [
            {"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]}}},
    }
    return {"services": {"vllm": service}}


def render_compose(launch: Launch) -> tuple[ExportFile, ...]:
    """A docker compose file per node (vLLM's native multi-node launcher)."""
    if launch.options.launcher == "ray" and len(launch.nodes) > 1:
        raise ExportError("compose files use vLLM's native launcher; use --launcher native, or --format sh for Ray")
    files = []
    for node in launch.nodes:
        name = f"compose{_suffix(launch, node)}.yaml"
        lines = _header(launch, node, f"docker compose -f {name} up")
        lines += comment("VLLM_API_KEY passes through by name when set in your shell; no token is written here.")
        if launch.patches:
            lines += comment("The recipe's patches mount from $RECIPE_DIR: compose refuses to start without it.")
        files.append(ExportFile(name, "\n".join(lines) + "\n" + dump(compose_mapping(launch, node))))
    return tuple(files)
