"""Rules a plan follows that a user would otherwise see go wrong."""

from __future__ import annotations

import json
import re

import pytest

from sparkadvisor.catalogs import load_index
from sparkadvisor.cli import main
from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.catalog import CatalogError, parse_catalog
from sparkadvisor.core.index import default_engine
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.workload import AGENTIC, Settings

SOURCE = '[sources.x]\ntitle = "t"\nurl = "https://example.org"\n'


def test_a_plan_follows_the_recipes_of_the_engine_it_runs_on_only(index):
    """A GGUF build's plan runs on llama.cpp and follows its llama-bench runs where --recipe names one (they are
    benchmarks, not a launch), as a TensorRT-LLM-only build's plan follows NVIDIA's runs of it; Ollama's, SGLang's
    or Atlas's figures describe another server than the plan's, and so do TensorRT-LLM's runs of a build vLLM
    serves (NVIDIA's FP8 Llama 3.1 8B)."""
    others = [r for r in index.catalog.recipes if r.engine != "vllm" and r.nodes == 1 and r.measurements]
    followed = {r.id for r in others
                if default_engine(index.builds[r.build], index.hardware[r.hardware]) == r.engine}
    assert {r.engine for r in others if r.id in followed} == {"llama.cpp", "trt-llm"}
    assert {r.engine for r in others if r.id not in followed} >= {"ollama", "sglang", "trt-llm"}
    for recipe in others:
        build, cluster = index.builds[recipe.build], Cluster(index.hardware[recipe.hardware], 1)
        plan = evaluate_build(index, build, cluster, AGENTIC)
        assert plan.recipe is None or plan.recipe.engine == plan.constants.engine
        named = evaluate_build(index, build, cluster, AGENTIC, Settings(recipe=recipe.id))
        if recipe.id in followed:  # the engine the build runs on by default
            assert recipe.benchmark and plan.recipe is None, recipe.id
            assert named.recipe is recipe and named.constants.engine == recipe.engine
            assert named.decode_measured in recipe.measurements
        else:
            assert recipe not in (plan.recipe, named.recipe), recipe.id


def test_layers_that_do_not_add_up_are_refused():
    text = SOURCE + ('[[models]]\nid = "m"\nname = "M"\nfamily = "F"\nsource = "x"\n[models.params]\ntotal_b = 1\n'
                     'source = "x"\n[models.attention]\ndesign = "gqa"\nlayers = 4\nkv_heads = 1\nhead_dim = 8\n'
                     'sliding_layers = 5\nsource = "x"\n')
    with pytest.raises(CatalogError) as error:
        parse_catalog(text, "odd.toml")
    assert "sliding_layers + linear.layers + ffn_layers = 5 but layers = 4" in str(error.value)


def test_catalog_text_is_printed_literally(tmp_path, capsys):
    path = tmp_path / "names.toml"
    path.write_text(SOURCE + '[[models]]\nid = "m"\nname = "X [/] y [bold]"\nfamily = "F"\nsource = "x"\n'
                    '[models.params]\ntotal_b = 1\nactive_b = 1\nsource = "x"\n[[builds]]\nid = "b"\nmodel = "m"\n'
                    'repo = "o/b"\nformat = "bf16"\nsource = "x"\n')
    assert main(["show", "b", "--nodes", "1", "--catalog", str(path)]) == 0
    assert "X [/] y [bold]" in capsys.readouterr().out


def test_a_recipe_on_unknown_hardware_is_a_problem(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text(SOURCE + '[[recipes]]\nid = "r"\nbuild = "glm-5.3-flash-nvfp4-redhat"\ntitle = "t"\n'
                    'hardware = "abacus"\nnodes = 1\nsource = "x"\n')
    with pytest.raises(CatalogError) as error:
        load_index([path], include_user=False)
    assert "names hardware 'abacus'" in str(error.value)


@pytest.mark.parametrize("settings", [Settings(), Settings(gpu_memory_utilization=0.8)])
def test_nodes_needed_is_the_smallest_cluster_the_fit_rule_accepts(index, settings):
    """One rule answers "does it fit on n nodes" and "how many nodes does it need"."""
    hardware = index.hardware["dgx-spark"]
    for build in index.catalog.builds:
        plans = [evaluate_build(index, build, Cluster(hardware, n), AGENTIC, settings)
                 for n in range(1, hardware.max_nodes + 1)]
        fitting = [p.cluster.nodes for p in plans if p.fits]
        assert {p.nodes_needed for p in plans} == {min(fitting, default=None)}, build.id


def test_a_build_a_caveat_rules_out_does_not_meet_the_targets(index, capsys):
    """Its figures may all be met, yet the caveat rules it out: scripts filtering on meets_targets never pick it."""
    ruled_out = [p for p in (evaluate_build(index, b, Cluster(index.hardware["dgx-spark"], 2), AGENTIC)
                             for b in index.catalog.builds) if p.runs and p.disqualified_by is not None]
    assert any(set(p.statuses) == {"met"} for p in ruled_out)
    assert not any(p.meets_targets for p in ruled_out)
    plan = next(p for p in ruled_out if set(p.statuses) == {"met"})
    assert main(["show", plan.build.id, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    targets = next(s["text"] for s in data["steps"] if s["key"] == "targets")
    assert data["meets_targets"] is False and data["disqualified"] is True
    assert targets.startswith("Its figures meet the agentic targets, but ") and "rules it out for agentic" in targets


def test_the_shortfall_is_told_apart_from_the_engines_share(capsys):
    """Two figures, two meanings: past vLLM's share of the node, and short of the whole node (`short_gb`)."""
    assert main(["show", "deepseek-r1-fp8", "--nodes", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    fit = next(s["text"] for s in data["steps"] if s["key"] == "budget")
    assert "vLLM takes 0.85 x 121.6 = 103.4 GiB per node; the 312.5 GiB of weights exceed that by 209.1 GiB." in fit
    short = data["short_gb"]
    assert f"Even with all 130.6 GB of a node, each of the 2 shares of 335.5 GB is {short:.1f} GB short." in fit


@pytest.mark.parametrize(("build", "nodes", "layers", "kib"), [
    ("qwen3.6-35b-a3b-nvfp4-nvidia", 4, 3, 6.0),  # 10 full-attention layers of 40 over 4 stages: 3 on one
    ("gpt-oss-120b-gguf-ggml", 4, 5, 10.0),  # 18 of 36 over 4 llama.cpp stages: 5 on one
])
def test_a_pipeline_stage_holds_whole_layers_and_the_kv_is_theirs(capsys, build, nodes, layers, kib):
    """The KV per token is what the layers `show` names cost: never half a layer's."""
    assert main(["show", build, "--nodes", str(nodes), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    kv = next(s["text"] for s in data["steps"] if s["key"] == "kv")
    assert f"on {layers} full-attention layers per rank = {kib:.2f} KiB per token per node" in kv
    assert data["kv_bytes_per_token"] == kib * 1024


def test_the_measured_speed_is_a_run_in_the_plans_own_mode(index):
    """conselara's gpt-oss-120b recipe lists its CUDA-graph run (~59 tok/s) and, after it, an eager one (26): the
    plan runs with CUDA graphs, so its turn is costed at 59; with --eager, at 26."""
    build, cluster = index.builds["gpt-oss-120b-mxfp4"], Cluster(index.hardware["dgx-spark"], 1)
    graphs = evaluate_build(index, build, cluster, AGENTIC)
    eager = evaluate_build(index, build, cluster, AGENTIC, Settings(enforce_eager=True))
    assert graphs.recipe is not None and graphs.recipe.id == "gpt-oss-120b-conselara-tp1"
    assert (graphs.decode_tok_s, eager.decode_tok_s) == (59.0, 26.0)
    assert graphs.decode_measured.enforce_eager is not True and eager.decode_measured.enforce_eager is True


def test_a_prompt_the_context_refuses_opens_no_session(capsys):
    assert main(["show", "qwen3-32b-fp8", "--nodes", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    statuses = {t["key"]: t["status"] for t in data["targets"]}
    assert statuses["context"] == "missed" and statuses["sessions"] == "missed"
    assert any(t.startswith("no 100,000-token session: the context refuses its prompt, though the KV pool would hold")
               for t in data["target_misses"])


def test_what_the_nodes_buy_starts_from_what_one_node_reads(capsys):
    """DeepSeek-V4-Flash-0731's counted read keeps 1.29 GB whole on every rank: one node reads it once, so the
    one-node figure is the one a one-node plan gives, not the per-node time x 4."""
    def steps(nodes: str) -> dict[str, str]:
        assert main(["show", "deepseek-v4-flash-0731-stack", "--nodes", nodes, "--no-speculation", "--json"]) == 0
        return {s["key"]: s["text"] for s in json.loads(capsys.readouterr().out)["steps"]}

    one = re.search(r"One step: weights ([\d.]+) ms", steps("1")["expected"])
    four = re.search(r"from ([\d.]+) ms \(one node\) to ([\d.]+) ms", steps("4")["nodes"])
    assert one and four and four[1] == one[1] and float(four[1]) < 4 * float(four[2])
