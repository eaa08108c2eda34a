"""The per-node memory bar says what does not fit: no KV cache is "none", never a 0.0 that reads
as a figure, and weights beyond vLLM's share say by how much."""

from __future__ import annotations

from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.workload import AGENTIC
from sparkadvisor.tui.widgets.memory_bar import bar_content


def legend(index, build_id: str, nodes: int) -> str:
    plan = evaluate_build(index, index.builds[build_id], Cluster(index.hardware["dgx-spark"], nodes), AGENTIC)
    return bar_content(plan.budget, 72).plain.split("\n")[2]


def test_weights_beyond_vllms_share_say_by_how_much(index) -> None:
    text = legend(index, "qwen3.5-397b-a17b-q8-unsloth", 2)
    assert "KV none" in text and "KV 0.0" not in text and "free 0.0" not in text
    assert "weights exceed vLLM's 103.4 GiB by 92.9 GiB" in text


def test_a_build_that_fits_keeps_its_figures(index) -> None:
    text = legend(index, "glm-5.3-flash-nvfp4-redhat", 2)
    assert text == "█ weights 92.2 ▓ KV 6.0 ▒ runtime 5.2 ░ free 18.2 GiB"


def test_a_pinned_kv_cache_never_draws_vllm_past_its_share(index) -> None:
    """GLM RedHatAI pins 6 GiB of KV: the fit step says the activations come out of the 11.2 GiB the
    weights leave, so the bar's weights, KV and runtime add up to the title's 103.4 GiB, not 104.1."""
    plan = evaluate_build(index, index.builds["glm-5.3-flash-nvfp4-redhat"], Cluster(index.hardware["dgx-spark"], 2),
                          AGENTIC)
    b = plan.budget
    assert b.kv_pinned_bytes is not None and b.reserve_bytes > b.left_bytes - b.kv_bytes
    assert b.weights_bytes + b.kv_bytes + b.runtime_bytes <= b.engine_bytes + 1
    assert abs(b.free_bytes - (b.usable_bytes - b.engine_bytes)) < 1
    title, _, legend = bar_content(b, 72).plain.split("\n")
    shown = [float(w) for w in legend.split()[2:9:3]]
    assert round(sum(shown), 1) <= float(title.split(" = ")[1].split()[0]), (title, legend)


def test_a_build_a_recipe_runs_against_the_arithmetic_says_so_beside_the_shortfall(index) -> None:
    plan = evaluate_build(index, index.builds["qwen3.5-397b-a17b-q8-unsloth"], Cluster(index.hardware["dgx-spark"], 2),
                          AGENTIC)
    text = bar_content(plan.budget, 72, by_recipe=True).plain.split("\n")[2]
    assert "weights exceed vLLM's 103.4 GiB by 92.9 GiB in the arithmetic; the recipe runs it" in text


def test_the_title_says_what_the_utilization_multiplies(index) -> None:
    # "vLLM takes 0.5 = 60.8 GiB" left the reader to guess what 0.5 is and of what.
    plan = evaluate_build(index, index.builds["qwen3.6-35b-a3b-nvfp4-nvidia"], Cluster(index.hardware["dgx-spark"], 1),
                          AGENTIC)
    title = bar_content(plan.budget, 72).plain.split("\n")[0]
    assert title == "Per node 121.6 GiB; vLLM gets gpu-memory-utilization 0.5 x 121.6 = 60.8 GiB"
    assert len(title) <= 76, "whole in the detail pane at 80 columns"
    gguf = evaluate_build(index, index.builds["qwen3.5-27b-q8-unsloth"], Cluster(index.hardware["dgx-spark"], 1),
                          AGENTIC)
    title = bar_content(gguf.budget, 72, engine=gguf.constants.engine).plain.split("\n")[0]
    assert title == "Per node 121.6 GiB; llama.cpp sized by vLLM's 0.85 x 121.6 = 103.4 GiB"  # no utilization flag
    air = evaluate_build(index, index.builds["glm-4.5-air-q8-unsloth"], Cluster(index.hardware["dgx-spark"], 1),
                         AGENTIC)
    legend = bar_content(air.budget, 72, engine=air.constants.engine).plain.split("\n")[2]
    assert legend.endswith("weights exceed the 103.4 GiB of vLLM's rule by 1.5 GiB")


def test_the_speed_lines_give_a_build_that_does_not_fit_no_expected_figure(index) -> None:
    # The table shows - for its speed; this line said "ceiling - · expected 15, 80% range 12-20".
    from sparkadvisor.core.ranking import rank
    from sparkadvisor.tui.widgets.detail import speed_content

    plan = evaluate_build(index, index.builds["glm-5.3-flash-nvfp4-redhat"], Cluster(index.hardware["dgx-spark"], 1),
                          AGENTIC)
    text = speed_content(rank([plan], AGENTIC)[0]).plain
    assert text.split("\n")[1] == ("decode tok/s: none here, it does not fit on 1 node (the arithmetic below says "
                                   "what it would be if it did)")
