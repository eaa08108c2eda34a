"""Every emitted flag is one vLLM 0.33 accepts; the YAML config means the same as the argv."""

from __future__ import annotations

import json

from export_helpers import CASES, plan_for

from sparkadvisor.cli import main
from sparkadvisor.export import ExportOptions, plan_json, render
from sparkadvisor.export.argv import kv_bytes_arg
from sparkadvisor.export.flags import accepted_options, flag_data, takes_value
from sparkadvisor.export.spec import build_launch


def _all_argvs(index):
    for build, nodes, _ in CASES.values():
        for launcher in ("native", "ray"):
            launch = build_launch(plan_for(index, build, nodes), ExportOptions(launcher))
            for node in plan_json(launch)["nodes"]:
                if node["vllm_argv"]:
                    yield node["vllm_argv"]


def test_the_flag_list_names_its_source():
    data = flag_data()
    assert data["vllm_version"] == "0.33.0" and "vllm-0.33.0" in data["source"]
    assert "--swap-space" not in accepted_options()


def test_every_emitted_flag_is_a_vllm_033_flag(index):
    argvs = list(_all_argvs(index))
    assert len(argvs) == 10
    for argv in argvs:
        flags = [a for a in argv[1:] if a.startswith("--")]
        assert flags and all(f in accepted_options() for f in flags), flags
        assert "--swap-space" not in argv and not argv[0].startswith("-")


def test_values_follow_the_flags_that_take_them(index):
    for argv in _all_argvs(index):
        for i, word in enumerate(argv[1:-1], start=1):
            if word.startswith("--") and takes_value(word):
                assert not argv[i + 1].startswith("--"), (word, argv[i + 1])


def test_glm_flags_carry_the_plan_numbers(index):
    plan = plan_for(index, "glm-5.3-flash-nvfp4-redhat", 2)
    argv = plan_json(build_launch(plan))["nodes"][0]["vllm_argv"]
    pairs = dict(zip(argv, argv[1:], strict=False))
    assert pairs["--gpu-memory-utilization"] == f"{plan.budget.utilization:g}" == "0.85"
    assert pairs["--kv-cache-memory-bytes"] == "6G"
    assert pairs["--kv-cache-dtype"] == "fp8_e4m3" and pairs["--block-size"] == "2304"
    assert json.loads(pairs["--speculative-config"]) == {
        "method": "dflash", "model": "incoai/GLM-5.3-Flash-DFlash2", "num_speculative_tokens": 7}
    assert "--enforce-eager" in argv and "--enable-prefix-caching" in argv
    assert "/" not in pairs["--served-model-name"]


def test_no_recipe_build_takes_every_flag_from_the_plan(index):
    plan = plan_for(index, "qwen3-next-80b-a3b-nvfp4", 1)
    argv = plan_json(build_launch(plan))["nodes"][0]["vllm_argv"]
    pairs = dict(zip(argv, argv[1:], strict=False))
    assert plan.recipe is None
    assert pairs["--gpu-memory-utilization"] == f"{plan.budget.utilization:g}"
    assert "--kv-cache-memory-bytes" not in argv and pairs["--max-model-len"] == "262144"


def test_kv_bytes_use_forms_vllm_parses():
    assert kv_bytes_arg(6 * 2**30) == "6G"
    assert kv_bytes_arg(1.5 * 2**30) == "1536M"
    assert kv_bytes_arg(1000) == "1000"


def test_prefix_caching_off_is_written_so_yaml_keeps_it(index):
    text = render("yaml", plan_for(index, "qwen3.8-flash-next-nvfp4", 2))[0].text
    assert '"disable-prefix-caching": true' in text and "enable-prefix-caching\": false" not in text
    assert "WARNING: PREFIX CACHING IS OFF" in text


def test_compose_refuses_ray_and_names_the_way_out(tmp_path, capsys):
    code = main(["export", "glm-5.3-flash-nvfp4-redhat", "--launcher", "ray", "--format", "compose",
                 "--out", str(tmp_path)])
    assert code == 2 and "use --launcher native" in capsys.readouterr().err


def test_recipe_option_sets_the_nodes_and_rejects_a_mismatch(tmp_path, capsys):
    ok = ["export", "qwen3.8-flash-next-nvfp4", "--recipe", "qwen3.8-flash-next-tonyd2wild-tp1", "--format", "json"]
    assert main([*ok, "--out", str(tmp_path / "a")]) == 0
    assert len(json.loads((tmp_path / "a" / "plan.json").read_text())["nodes"]) == 1
    assert main([*ok, "--nodes", "2", "--out", str(tmp_path / "b")]) == 2
    assert "runs on 1 node, not --nodes 2" in capsys.readouterr().err
    assert main(["export", "qwen3.8-flash-next-nvfp4", "--recipe", "nope", "--format", "json",
                 "--out", str(tmp_path / "c")]) == 2
    assert "no recipe 'nope'" in capsys.readouterr().err


def test_recipe_option_follows_a_second_recipe_on_the_same_node_count(tmp_path, capsys):
    """DeepSeek-V4-Flash-0731 has two recipes on two Sparks: --recipe named the other one and was
    refused with 'change --nodes or --hardware', though the nodes already matched."""
    out = tmp_path / "miaai"
    assert main(["export", "deepseek-v4-flash-0731-stack", "--recipe", "deepseek-v4-flash-0731-miaai-tp2",
                 "--format", "json", "--out", str(out)]) == 0, capsys.readouterr().err
    assert json.loads((out / "plan.json").read_text())["recipe"] == "deepseek-v4-flash-0731-miaai-tp2"
    default = tmp_path / "default"
    assert main(["export", "deepseek-v4-flash-0731-stack", "--format", "json", "--out", str(default)]) == 0
    assert json.loads((default / "plan.json").read_text())["recipe"] == "deepseek-v4-flash-article-tp2"


def test_a_build_that_does_not_fit_is_not_exported(tmp_path, capsys):
    assert main(["export", "deepseek-v4.1-flash", "--nodes", "2", "--format", "sh", "--out", str(tmp_path)]) == 1
    assert "does not fit on 2 x DGX Spark" in capsys.readouterr().err


def test_utilization_above_the_hardware_limit_is_refused(tmp_path, capsys):
    assert main(["export", "qwen3-next-80b-a3b-nvfp4", "--nodes", "1", "--gpu-memory-utilization", "0.92",
                 "--format", "sh", "--out", str(tmp_path)]) == 2
    assert "above the 0.85 that is safe on DGX Spark" in capsys.readouterr().err


def test_a_recipes_own_utilization_above_the_limit_says_it_came_from_the_recipe(tmp_path, capsys):
    # "choose at most that" read as if the user had chosen 0.87; the recipe had.
    assert main(["export", "gpt-oss-120b-mxfp4", "--nodes", "1", "--format", "sh", "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().err == (
        "sparkadvisor: recipe gpt-oss-120b-conselara-tp1 sets gpu-memory-utilization 0.87, above the 0.85 that is "
        "safe on DGX Spark; export it with a gpu-memory-utilization of 0.85 or less (--gpu-memory-utilization, or "
        "a in the app)\n")


def test_a_build_planned_on_an_engine_without_a_launch_is_not_exported(tmp_path, capsys):
    # A GGUF build costed on llama.cpp got a vLLM script whose figures were llama.cpp's, for a repo vLLM
    # does not load as it is. The exporter writes vLLM and llama.cpp launches; any other engine is refused.
    argv = ["--nodes", "1", "--format", "sh", "--out", str(tmp_path)]
    assert main(["export", "qwen3-30b-a3b-nvfp4-nvidia", *argv]) == 1
    assert capsys.readouterr().err == (
        "sparkadvisor: qwen3-30b-a3b-nvfp4-nvidia is planned on trt-llm (vLLM does not load it; the catalog lists "
        "trt-llm): export writes vLLM and llama.cpp launches only, so there is nothing to launch for this plan\n")
    assert main(["export", "qwen3.5-27b-q8-unsloth", "--engine", "ollama", *argv]) == 1
    assert capsys.readouterr().err.endswith(
        "(the engine asked for): export writes vLLM and llama.cpp launches only; llama.cpp serves it: export it "
        "with --engine llama.cpp\n")
    assert main(["export", "qwen3.5-27b-q8-unsloth", "--engine", "vllm", *argv]) == 1
    assert capsys.readouterr().err == (
        "sparkadvisor: qwen3.5-27b-q8-unsloth is planned on vLLM, which does not load it (the catalog lists "
        "llama.cpp, ollama); llama.cpp serves it: export it with --engine llama.cpp\n")
    assert main(["export", "qwen3-next-80b-a3b-nvfp4", "--engine", "llama.cpp", *argv]) == 1
    assert capsys.readouterr().err == (
        "sparkadvisor: llama.cpp does not load qwen3-next-80b-a3b-nvfp4 (the catalog lists vllm): export it with "
        "--engine vllm\n")
    assert not list(tmp_path.iterdir())


def test_hardware_that_cannot_run_vllms_cuda_images_is_not_exported_a_cuda_launch(tmp_path, capsys):
    # A Mac got vLLM CUDA scripts: NCCL, nvcr.io images and --gpu-memory-utilization on Apple silicon.
    argv = ["export", "gpt-oss-120b-mxfp4", "--nodes", "1", "--format", "sh", "--out", str(tmp_path)]
    assert main([*argv, "--hardware", "mac-studio-m3-ultra"]) == 1
    assert capsys.readouterr().err == (
        "sparkadvisor: Mac Studio, Apple M3 Ultra, 512 GB is not an NVIDIA GPU: export writes vLLM and llama.cpp "
        "launches for CUDA only, so there is nothing to launch for gpt-oss-120b-mxfp4 here\n")
    assert main([*argv, "--hardware", "ryzen-ai-max-395"]) == 1
    assert "is not an NVIDIA GPU" in capsys.readouterr().err and not list(tmp_path.iterdir())
    assert main([*argv, "--hardware", "rtx-pro-6000"]) == 0


def _argv(tmp_path, name: str, *args: str) -> list[str]:
    out = tmp_path / name
    assert main(["export", *args, "--format", "json", "--out", str(out)]) == 0
    return json.loads((out / "plan.json").read_text())["nodes"][0]["vllm_argv"]


def test_the_launch_runs_in_the_mode_the_plan_was_costed_in(tmp_path, capsys):
    """--eager and --cuda-graphs cost the plan (its CUDA-graph reserve and its speed) in that mode; the export
    wrote the recipe's mode whatever they said, so the server ran in another mode than the plan."""
    assert "--enforce-eager" in _argv(tmp_path, "own", "glm-5.3-flash-nvfp4-redhat")  # the recipe runs eager
    assert "--enforce-eager" not in _argv(tmp_path, "graphs", "glm-5.3-flash-nvfp4-redhat", "--cuda-graphs")
    assert "--enforce-eager" not in _argv(tmp_path, "default", "qwen3.6-35b-a3b-nvfp4-nvidia", "--nodes", "1")
    assert "--enforce-eager" in _argv(tmp_path, "eager", "qwen3.6-35b-a3b-nvfp4-nvidia", "--nodes", "1", "--eager")
    # The TP4 recipe names a CUDA-graph mode: kept with graphs, dropped for an eager launch.
    tp4 = _argv(tmp_path, "tp4", "glm-5.3-flash-nvfp4-redhat", "--nodes", "4")
    assert "--compilation-config" in tp4 and "--enforce-eager" not in tp4
    tp4_eager = _argv(tmp_path, "tp4-eager", "glm-5.3-flash-nvfp4-redhat", "--nodes", "4", "--eager")
    assert "--compilation-config" not in tp4_eager and "--enforce-eager" in tp4_eager


def test_a_recipe_on_its_own_image_keeps_that_images_flags(index):
    """spark-arena's gpt-oss-120b recipe runs its own image (a custom-image caveat): its --mxfp4-backend and
    --mxfp4-layers, which stock vLLM 0.33 refuses and which make the speed its plan predicts, pass and are named;
    a recipe on a stock image still has such flags left out (test_export_safety)."""
    from sparkadvisor.core.advisor import evaluate_build
    from sparkadvisor.core.plan import Cluster
    from sparkadvisor.core.workload import AGENTIC, Settings

    plan = evaluate_build(index, index.builds["gpt-oss-120b-mxfp4"], Cluster(index.hardware["dgx-spark"], 1), AGENTIC,
                          Settings(recipe="gpt-oss-120b-spark-arena-tp1"))
    launch = build_launch(plan)
    argv = plan_json(launch)["nodes"][0]["vllm_argv"]
    assert argv[argv.index("--mxfp4-layers") + 1] == "moe,qkv,o,lm_head" and "--mxfp4-backend" in argv
    assert launch.image == "sparkarena/spark-vllm-docker:mxfp4"
    texts = [n.text for n in launch.notes]
    assert any(t.startswith("passed for the recipe's own image sparkarena/spark-vllm-docker:mxfp4") for t in texts)
    assert not any("--mxfp4-layers" in t and "left out" in t for t in texts)
