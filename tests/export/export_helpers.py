"""Shared helpers for the export tests: plans for the golden cases, and stand-in commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sparkadvisor.core.advisor import advise
from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.ranking import Ranked
from sparkadvisor.core.workload import AGENTIC

GOLDEN = Path(__file__).parent / "golden"
REGENERATE = os.environ.get("SPARKADVISOR_REGEN_GOLDEN") == "1"
"""SPARKADVISOR_REGEN_GOLDEN=1 pytest tests/export rewrites every golden file."""

CASES = {
    "glm-redhat-2n": ("glm-5.3-flash-nvfp4-redhat", 2, "glm-5.3-flash-tonyd2wild-tp2"),
    "qwen38-1n": ("qwen3.8-flash-next-nvfp4", 1, "qwen3.8-flash-next-tonyd2wild-tp1"),
    "qwen38-2n": ("qwen3.8-flash-next-nvfp4", 2, "qwen3.8-flash-next-tonyd2wild-tp2"),
    "qwen3next-1n-norecipe": ("qwen3-next-80b-a3b-nvfp4", 1, None),
}
"""Golden cases: name -> (build, nodes, the recipe the plan must use)."""
LLAMA_CASES = {
    "gptoss20b-llamacpp-1n": ("gpt-oss-20b-gguf-ggml", 1, None),
    "deepseek-r1-iq1m-llamacpp-2n": ("deepseek-r1-ud-iq1m-unsloth", 2, None),
}
"""Golden cases of builds planned on llama.cpp (written in the llama.cpp formats only)."""

STANDIN_ADDRESS = "192.168.100.10"
"""The address the `ip` stand-in says this machine has."""
TOOLS = ("vllm", "docker", "ray", "hf", "nvidia-smi", "ibdev2netdev", "free", "swapon", "sysctl", "sync", "sudo",
         "ip", "curl", "llama-server", "rpc-server")
STANDIN = '''#!{python}
import json, os, sys
name, args = os.path.basename(sys.argv[0]), sys.argv[1:]
with open(os.environ["STANDIN_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps([name, *args]) + "\\n")
if not sys.stdin.isatty() and name == "sudo":
    sys.stdin.read()
outputs = {{
    "free": "              total used free shared buff/cache available\\nMem: 130000000 1 1 1 1 129000000\\n",
    "ibdev2netdev": "rocep1s0f1 port 1 ==> enp1s0f1np1 (Up)\\nroceP2p1s0f1 port 1 ==> enP2p1s0f1np1 (Up)\\n",
    "swapon": "/swapfile file 16G 0B -2\\n",
    "sysctl": "0\\n",
    "nvidia-smi": "NVIDIA GB10\\n",
    "ip": "2: enp1s0f1np1 inet 192.168.100.10/24 brd x\\n",
    "hf": os.environ.get("STANDIN_MODEL_DIR", "/nonexistent") + "\\n",
}}
if name == "nvidia-smi" and "--query-gpu=name" in args:
    outputs[name] = outputs[name] * int(os.environ.get("STANDIN_GPUS", "1"))
if name == "nvidia-smi" and "--query-gpu=memory.free" in args:
    outputs[name] = os.environ.get("STANDIN_GPU_FREE_MIB", "97000") + "\\n"
sys.stdout.write(outputs.get(name, ""))
if name == "llama-server" and args[:1] == ["--help"]:
    sys.stdout.write(os.environ.get("STANDIN_LLAMA_HELP", ""))
if name == "llama-server" and args[:1] == ["--list-devices"]:
    sys.stdout.write("Available devices:\\n  CUDA0: NVIDIA GB10 (124546 MiB, 119000 MiB free)\\n")
if name == "docker" and args[:1] == ["exec"] and "python3" in args:
    sys.stdout.write("4\\n")
if name == "docker" and args[:1] == ["ps"]:
    sys.stdout.write(os.environ.get("STANDIN_CONTAINERS", ""))
'''


def ranked_for(index: CatalogIndex, nodes: int) -> tuple[Ranked, ...]:
    """The agentic ranking on `nodes` DGX Sparks."""
    return advise(index, Cluster(index.hardware["dgx-spark"], nodes), AGENTIC)


def plan_for(index: CatalogIndex, build: str, nodes: int):  # type: ignore[no-untyped-def]
    """The plan the advisor computes for `build` on `nodes` Sparks (agentic)."""
    return next(r.plan for r in ranked_for(index, nodes) if r.plan.build.id == build)


def make_standins(folder: Path) -> Path:
    """A bin folder of tiny scripts that log their argv as JSON lines and print plausible output."""
    folder.mkdir(parents=True, exist_ok=True)
    for tool in TOOLS:
        path = folder / tool
        path.write_text(STANDIN.format(python=sys.executable), encoding="utf-8")
        path.chmod(0o755)
    return folder


def run_with_standins(script: Path, tmp: Path,
                      **env: str | None) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    """Run `script` with bash, the stand-ins first on PATH, HEAD_ADDR and NODE_ADDR set to the address the `ip`
    stand-in reports (as a person sets them for a script exported without addresses); return the result and every
    logged call."""
    bin_dir = make_standins(tmp / "standins")
    model_dir = tmp / "model"
    model_dir.mkdir(exist_ok=True)
    log = tmp / "calls.jsonl"
    full_env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp), "STANDIN_LOG": str(log),
                "STANDIN_MODEL_DIR": str(model_dir), "HEAD_ADDR": STANDIN_ADDRESS, "NODE_ADDR": STANDIN_ADDRESS, **env}
    full_env = {k: v for k, v in full_env.items() if v is not None}
    result = subprocess.run(["bash", str(script)], cwd=tmp, env=full_env, capture_output=True, text=True,
                            timeout=60, stdin=subprocess.DEVNULL)
    calls = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    return result, calls


def recipe_checkout(folder: Path, plan) -> Path:  # type: ignore[no-untyped-def]
    """A stand-in checkout of the recipe repository holding every patch file the plan's recipe mounts."""
    for patch in plan.recipe.requires.patches:
        for file in patch.files:
            path = folder / file.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# stand-in for {file.path}\n", encoding="utf-8")
    return folder


def docker_runs(calls: list[list[str]]) -> list[list[str]]:
    """The logged `docker run` calls."""
    return [c for c in calls if c[:2] == ["docker", "run"]]
