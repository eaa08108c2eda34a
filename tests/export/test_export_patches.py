"""A recipe's patches: mounted from a checkout of the recipe repository, and the pre-flight
fails, not warns, when the plan needs one that is not there."""

from __future__ import annotations

import dataclasses
import json

import yaml
from export_helpers import docker_runs, plan_for, recipe_checkout, run_with_standins

from sparkadvisor.export import render
from sparkadvisor.export.spec import build_launch

GLM = "glm-5.3-flash-nvfp4-redhat"
GLM_REPO = "https://github.com/tonyd2wild/GLM-5.3-Flash-NVFP4-DFlash2-2x-DGX-Spark"
GLM_COMMIT = "06b681991fb7ca6743c4fba535cdc7e8df78cd4b"
INDEXER_TARGET = "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/sparse_attn_indexer_kpool.py"


def _head_script(tmp_path, plan):  # type: ignore[no-untyped-def]
    script = tmp_path / "node0-head.sh"
    script.write_text(render("sh", plan)[0].text, encoding="utf-8")
    return script


def test_without_recipe_dir_the_glm_script_stops_naming_the_patch_and_the_clone(index, tmp_path):
    result, calls = run_with_standins(_head_script(tmp_path, plan_for(index, GLM, 2)), tmp_path)
    assert result.returncode == 1
    failed = [line for line in result.stderr.splitlines() if line.startswith("PRE-FLIGHT FAILED")]
    assert len(failed) == 1 and "glm-indexer-topk-sm121" in failed[0]
    assert "past ~24K context" in failed[0]
    assert f"git clone {GLM_REPO} " in failed[0] and f"checkout {GLM_COMMIT}" in failed[0]
    assert not docker_runs(calls), "vLLM must not start without the patch"
    assert not any(c[0] == "hf" for c in calls), "no 200 GB download before a check that fails"


def test_with_the_checkout_the_script_reaches_docker_run_with_the_bind_mount(index, tmp_path):
    plan = plan_for(index, GLM, 2)
    checkout = recipe_checkout(tmp_path / "recipe", plan)
    result, calls = run_with_standins(_head_script(tmp_path, plan), tmp_path, RECIPE_DIR=str(checkout))
    assert result.returncode == 0, result.stderr
    (run,) = docker_runs(calls)
    mount = f"{checkout}/docker/sparse_attn_indexer_kpool_sm121.py:{INDEXER_TARGET}:ro"
    assert run[run.index(mount) - 1] == "-v"
    assert run.index(mount) < run.index("--entrypoint"), "the mount is a docker option, not a vLLM argument"
    assert f"is not at commit {GLM_COMMIT}" in result.stderr, "a plain folder is not the pinned commit"


def test_ignore_checks_runs_without_the_patch_and_says_so(index, tmp_path):
    result, calls = run_with_standins(_head_script(tmp_path, plan_for(index, GLM, 2)), tmp_path, IGNORE_CHECKS="1")
    assert result.returncode == 0
    assert "glm-indexer-topk-sm121" in result.stderr
    (run,) = docker_runs(calls)
    assert not any(INDEXER_TARGET in arg for arg in run)


def test_a_patch_the_plan_does_not_need_only_warns(index, tmp_path):
    plan = plan_for(index, GLM, 2)
    short = dataclasses.replace(plan, recipe=dataclasses.replace(plan.recipe, max_model_len=16384))
    (use,) = build_launch(short).patches
    assert not use.needed and "stays within the ~24,000 tokens" in use.why
    result, calls = run_with_standins(_head_script(tmp_path, short), tmp_path)
    assert result.returncode == 0, result.stderr
    assert "WARNING: patch glm-indexer-topk-sm121" in result.stderr and docker_runs(calls)


def test_the_qwen_one_spark_fit_depends_on_the_ple_patch(index, tmp_path):
    plan = plan_for(index, "qwen3.8-flash-next-nvfp4", 1)
    (use,) = build_launch(plan).patches
    assert use.needed and use.why == "the plan fits 1 x DGX Spark only with it"
    checkout = recipe_checkout(tmp_path / "recipe", plan)
    script = tmp_path / "serve.sh"
    script.write_text(render("sh", plan)[0].text, encoding="utf-8")
    result, calls = run_with_standins(script, tmp_path, RECIPE_DIR=str(checkout))
    assert result.returncode == 0, result.stderr
    (run,) = docker_runs(calls)
    assert "QWEN4EXP_PLE_MMAP=1" in run and run[run.index("QWEN4EXP_PLE_MMAP=1") - 1] == "-e"
    assert sum(1 for arg in run if arg.startswith(f"{checkout}/single-spark-vllm-tp1/patch/")) == 2


def test_every_format_names_the_patch_where_it_comes_from(index):
    plan = plan_for(index, GLM, 2)
    patch = json.loads(render("json", plan)[0].text)["patches"][0]
    assert (patch["repo"], patch["commit"], patch["needed"]) == (GLM_REPO, GLM_COMMIT, True)
    assert patch["files"] == [{"path": "docker/sparse_attn_indexer_kpool_sm121.py", "target": INDEXER_TARGET}]
    compose = yaml.safe_load(render("compose", plan)[0].text)["services"]["vllm"]["volumes"]
    assert any(v.startswith("${RECIPE_DIR:?") and v.endswith(f"{INDEXER_TARGET}:ro") for v in compose)
    report = render("md", plan)[0].text
    assert GLM_COMMIT in report and "past ~24K context" in report
