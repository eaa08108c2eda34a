"""Builds are costed only on engines known to run on the chosen hardware: on a Mac or a Ryzen AI Max,
vLLM's CUDA builds do not run, so an NVFP4 build is no candidate there, and a GGUF build is costed on
llama.cpp."""

from __future__ import annotations

import json

import pytest

from sparkadvisor.cli import main
from sparkadvisor.core.advisor import advise
from sparkadvisor.core.explain import explain
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.table import row_cells
from sparkadvisor.core.workload import AGENTIC

MAC = "mac-studio-m3-ultra"


def by_build(index, hardware, nodes=1):
    return {r.plan.build.id: r for r in advise(index, Cluster(index.hardware[hardware], nodes), AGENTIC)}


@pytest.mark.parametrize("hardware", [MAC, "ryzen-ai-max-395"])
def test_a_build_only_vllm_serves_is_no_candidate_without_cuda(index, hardware):
    ranked = by_build(index, hardware)
    nvfp4 = ranked["qwen3.6-27b-nvfp4-nvidia"]
    name = index.hardware[hardware].name
    assert nvfp4.excluded and nvfp4.decisive == "engine" and not nvfp4.plan.meets_targets
    assert nvfp4.reason == (f"no engine here: its engines (vllm) are not known to run on {name}; "
                            "engines known here: llama.cpp, ollama")
    cells = row_cells(nvfp4)
    assert cells["fit"] == "no engine" and cells["expected"] == cells["turn"] == cells["kv_pool"] == "-"


def test_a_gguf_build_is_costed_on_llama_cpp_and_ranks_above_every_build_without_an_engine(index):
    ranked = list(advise(index, Cluster(index.hardware[MAC], 1), AGENTIC))
    gguf = next(r for r in ranked if r.plan.build.id == "qwen3.5-27b-q8-unsloth")
    assert not gguf.excluded and gguf.plan.constants.engine == "llama.cpp" and gguf.plan.no_engine is None
    places = [r.plan.no_engine is not None for r in ranked]
    assert places == sorted(places)  # every build without an engine comes after the rest


def test_on_an_nvidia_gpu_every_engine_runs(index):
    spark = by_build(index, "dgx-spark", 2)
    assert all(r.plan.no_engine is None for r in spark.values())


def test_show_says_which_engines_run_there_and_marks_the_speeds_hypothetical(index):
    plan = by_build(index, MAC)["qwen3.6-27b-nvfp4-nvidia"].plan
    steps = {s.key: s for s in explain(plan)}
    assert steps["engine"].text.startswith("No engine is known to serve it here: its engines (vllm)")
    assert "vLLM-Metal" in steps["engine"].text
    assert steps["expected"].text.startswith("Not here: no engine serves it on Mac Studio, Apple M3 Ultra, 512 GB. "
                                             "If one did: ")
    assert {"llamacpp-readme", "ollama-gpu", "vllm-metal"} <= set(plan.source_ids())


def test_fixed_costs_without_cuda_say_cuda_graph_costs_stand_in(index):
    plan = by_build(index, MAC)["qwen3.5-27b-q8-unsloth"].plan
    steps = {s.key: s for s in explain(plan)}
    assert "CUDA graphs:" not in steps["expected"].text
    assert "no CUDA here: CUDA-graph costs stand in" in steps["expected"].text


def test_rank_json_gives_the_reason_and_nulls_the_speeds_of_a_build_without_an_engine(capsys):
    assert main(["rank", "--hardware", MAC, "--nodes", "1", "--json"]) == 0
    rows = {c["build"]: c for c in json.loads(capsys.readouterr().out)["candidates"]}
    nvfp4 = rows["qwen3.6-27b-nvfp4-nvidia"]
    assert nvfp4["no_engine"].startswith("its engines (vllm) are not known to run on Mac Studio")
    assert nvfp4["rank"] is None and nvfp4["decisive"] == "engine" and nvfp4["decode_expected_tok_s"] is None
    assert nvfp4["if_it_fit"]["decode_expected_tok_s"] > 0
    assert rows["qwen3.5-27b-q8-unsloth"]["no_engine"] is None and rows["qwen3.5-27b-q8-unsloth"]["rank"]


def test_an_engine_setting_the_hardware_cannot_run_is_refused_in_one_sentence(capsys):
    assert main(["rank", "--hardware", MAC, "--engine", "vllm"]) == 2
    assert capsys.readouterr().err == ("sparkadvisor: --engine vllm is not known to run on Mac Studio, Apple M3 "
                                       "Ultra, 512 GB; engines known here: llama.cpp, ollama\n")


def test_llama_cpp_spreads_a_build_over_nodes_by_layers_so_one_stream_gains_no_speed(index):
    """ggml splits a model by layers (pipelined): on two Sparks a token passes one node, then the other, so the
    second node adds memory, not decode speed (where tensor parallelism across the heads would have doubled it)."""
    one, two = by_build(index, "dgx-spark", 1), by_build(index, "dgx-spark", 2)
    gguf = "qwen3.5-27b-ud-q4kxl-unsloth"
    split, alone = two[gguf].plan, one[gguf].plan
    assert split.constants.engine == "llama.cpp" and (split.fit.tp, split.fit.pp) == (1, 2)
    assert split.weights_per_node == pytest.approx(alone.weights_per_node / 2)
    assert split.decode.expected_tok_s == pytest.approx(alone.decode.expected_tok_s, rel=0.02)
    per_node = next(s for s in explain(split) if s.key == "parallelism")
    assert "llama.cpp splits a model across devices by its layers" in per_node.text
    assert "one token passes the nodes one after another" in per_node.text
    assert "reaches the other machines through its RPC backend, which its README calls a fragile" in per_node.text
    assert {"llamacpp-server-readme", "llamacpp-rpc"} <= set(split.source_ids())
    assert "llamacpp-rpc" not in alone.source_ids()
    vllm = two["qwen3.5-27b-bf16"].plan  # vLLM's tensor parallelism still splits the heads
    assert (vllm.fit.tp, vllm.fit.pp) == (2, 1)


def test_a_layer_split_prefill_hands_the_hidden_state_on_and_pays_no_all_reduce(index):
    """Under a layer split the nodes exchange only the hidden state at each boundary; the all-reduces of tensor
    parallelism (two a layer) are vLLM's, and the prefill step said llama.cpp paid them."""
    gguf, tp = by_build(index, "dgx-spark", 2)["qwen3.5-27b-ud-q4kxl-unsloth"].plan, \
        by_build(index, "dgx-spark", 2)["qwen3.5-27b-bf16"].plan
    attention = gguf.model.attention
    handed = attention.hidden_size * 2 / (gguf.constants.link_gb_s * 1e9) * 1e3  # bf16, one boundary, ms
    prefill = next(s for s in explain(gguf) if s.key == "ttft").text
    assert f"link {handed:.3f} ms (the hidden state handed to the next stage's layers)" in prefill
    assert "all-reduce" not in prefill
    assert "(two all-reduces per layer)" in next(s for s in explain(tp) if s.key == "ttft").text


def test_ollama_serves_from_one_machine_only(capsys):
    assert main(["show", "qwen3.5-27b-ud-q4kxl-unsloth", "--engine", "ollama", "--nodes", "2"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert ("excluded: no engine here: ollama serves a model from one machine only, and each DGX Spark is a machine "
            "of its own; on 1 node it runs") in out
    assert "Not here: no engine serves it on 2 x DGX Spark. If one did:" in out
    assert main(["show", "qwen3.5-27b-ud-q4kxl-unsloth", "--engine", "ollama", "--nodes", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["no_engine"] is None
    # Discrete GPUs can share a host, where Ollama splits the layers over them.
    assert main(["show", "qwen3.5-27b-ud-q4kxl-unsloth", "--engine", "ollama", "--hardware", "rtx-pro-6000",
                 "--nodes", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["no_engine"] is None
