"""`yaml` (a vLLM --config file per node) and `compose` (a docker compose file per node).

Both hold the same arguments as the scripts. In a --config file a `false` is silently
dropped by vLLM 0.33, so prefix caching off is written `disable-prefix-caching: true`.
Compose interpolates `$`, so every literal `$` is doubled; strings are double-quoted
YAML with every non-printable character escaped.
"""

from __future__ import annotations

import json
import re

from sparkadvisor.export.argv import Arg, EnvRef, resolve
from sparkadvisor.export.spec import CONTAINER_HF_HOME, ExportError, ExportFile, Launch, NodeLaunch
from sparkadvisor.export.text import comment, yaml_str

NUMBER = re.compile(r"-?\d+(\.\d+)?")
JSON_FLAGS = ("--speculative-config", "--compilation-config")


def _suffix(launch: Launch, node: NodeLaunch) -> str:
    return "" if len(launch.nodes) == 1 else f"-node{node.rank}-{node.role}"


def _header(launch: Launch, node: NodeLaunch, what: str) -> list[str]:
    plan = launch.plan
    lines = comment(f"sparkadvisor export: {plan.model.name} ({plan.build.repo}) on {plan.cluster.label}: {what}")
    if len(launch.nodes) > 1:
        lines += comment(f"node {node.rank} of {len(launch.nodes)}, {node.host_hint}")
    lines += comment("No pre-flight checks run from this file: the sh export's scripts carry them.")
    return lines + [c for n in launch.notes if n.loud for c in comment("WARNING: " + n.text)]


def _yaml_value(flag: str, values: list[str]) -> str:
    if not values:
        return "true"
    if flag in JSON_FLAGS and len(values) == 1:
        return json.dumps(json.loads(values[0]), ensure_ascii=True)
    if len(values) > 1:
        return "[" + ", ".join(yaml_str(v) for v in values) + "]"
    return values[0] if NUMBER.fullmatch(values[0]) else yaml_str(values[0])


def _config_lines(argv: tuple[Arg, ...]) -> list[str]:
    words = [resolve(a) for a in argv]
    lines = [f"model: {yaml_str(words[0])}"]
    groups: list[list[str]] = []
    for word in words[1:]:
        if word.startswith("-") and not NUMBER.fullmatch(word):
            groups.append([word])
        else:
            groups[-1].append(word)
    return lines + [f"{g[0].lstrip('-')}: {_yaml_value(g[0], g[1:])}" for g in groups]


def render_yaml(launch: Launch) -> tuple[ExportFile, ...]:
    """A vLLM --config file for every node that runs `vllm serve`."""
    files = []
    for node in launch.nodes:
        if not node.vllm_argv:
            continue
        name = f"vllm-config{_suffix(launch, node)}.yaml"
        lines = _header(launch, node, "a vLLM --config file")
        lines += comment(f"Run inside the image {launch.image}: vllm serve --config {name}")
        env = [f"export {k}={resolve(v)}" for k, v in node.env]
        lines += [c for e in env for c in comment(e, "#   ")]
        files.append(ExportFile(name, "\n".join(lines + _config_lines(node.vllm_argv)) + "\n"))
    return tuple(files)


def _compose_str(arg: Arg) -> str:
    if isinstance(arg, EnvRef):
        return f'"${{{arg.name}:-{arg.default}}}"'
    return yaml_str(arg.replace("$", "$$"))


def _compose_service(launch: Launch, node: NodeLaunch) -> list[str]:
    command = ["serve", *node.vllm_argv]
    env = [f"      - {_env_entry(k, v)}" for k, v in node.env]
    return ["services:", "  vllm:", f"    image: {_compose_str(launch.image)}",
            f"    container_name: sparkadvisor-vllm-node{node.rank}", "    network_mode: host", "    ipc: host",
            '    shm_size: "10.24gb"', '    entrypoint: ["vllm"]',
            "    command:"] + [f"      - {_compose_str(a)}" for a in command] + [
            "    environment:", "      - VLLM_API_KEY", *env,
            "    volumes:", f'      - "${{HF_HOME:-${{HOME}}/.cache/huggingface}}:{CONTAINER_HF_HOME}"',
            "    deploy:", "      resources:", "        reservations:", "          devices:",
            "            - driver: nvidia", "              count: all", "              capabilities: [gpu]"]


def _env_entry(key: str, value: Arg) -> str:
    if isinstance(value, EnvRef):
        return f'"{key}=${{{value.name}:-{value.default}}}"'
    return yaml_str(f"{key}={value}".replace("$", "$$"))


def render_compose(launch: Launch) -> tuple[ExportFile, ...]:
    """A docker compose file per node (vLLM's native multi-node launcher)."""
    if launch.options.launcher == "ray" and len(launch.nodes) > 1:
        raise ExportError("compose files use vLLM's native launcher; use --launcher native, or --format sh for Ray")
    files = []
    for node in launch.nodes:
        name = f"compose{_suffix(launch, node)}.yaml"
        lines = _header(launch, node, f"docker compose -f {name} up")
        lines += comment("VLLM_API_KEY passes through by name when set in your shell; no token is written here.")
        files.append(ExportFile(name, "\n".join(lines + _compose_service(launch, node)) + "\n"))
    return tuple(files)
