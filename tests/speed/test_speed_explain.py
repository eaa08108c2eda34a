"""What `show` and the TUI print about speed: the basis, the range and where a step goes."""

from __future__ import annotations

import pytest

from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.explain import explain
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.workload import AGENTIC


def _steps(index, build: str, nodes: int) -> dict[str, str]:
    plan = evaluate_build(index, index.builds[build], Cluster(index.hardware["dgx-spark"], nodes), AGENTIC)
    return {s.key: s.text for s in explain(plan)}


def test_expected_decode_shows_breakdown_basis_and_range(index) -> None:
    text = _steps(index, "glm-5.3-flash-nvfp4-redhat", 2)["expected"]
    assert "Where the step goes: weights" in text and "speculation" in text
    assert "range" in text and "fitted to" in text and "of the ceiling" in text


def test_per_token_tables_stay_an_explicit_unknown(index) -> None:
    text = _steps(index, "qwen3.8-flash-next-nvfp4", 2)["expected"]
    assert "PLE table, unknown" in text


def test_tp_step_says_what_the_second_node_buys_and_costs(index) -> None:
    steps = _steps(index, "qwen3.8-flash-next-nvfp4", 2)
    assert "one node" in steps["nodes"] and "all-reduces" in steps["nodes"]
    assert "nodes" not in _steps(index, "gpt-oss-120b-mxfp4", 1)


def test_first_token_with_reuse_and_uncached(index) -> None:
    text = _steps(index, "glm-5.3-flash-nvfp4-redhat", 2)["ttft"]
    assert "to the first token" in text and "Uncached (a cold 100,000-token prompt)" in text


def test_counted_read_bounds_a_step_without_speculation() -> None:
    """Split bytes divide by TP, replicated bytes do not; the bound is rated bandwidth over what one rank reads."""
    from sparkadvisor.core.schema import DecodeRead
    from sparkadvisor.core.speed.decode import read_bound

    read = DecodeRead(split_gb=10.0, replicated_gb=1.0, source="x")
    assert read.per_rank_gb(1) == 11.0 and read.per_rank_gb(2) == 6.0 and read.per_rank_gb(4) == 3.5
    assert read_bound(read, "vllm", 2, 273.0) == 273.0 / 6.0
    assert read_bound(read, "llama.cpp", 2, 273.0) is None
    assert read_bound(None, "vllm", 2, 273.0) is None


def test_a_measurement_above_the_counted_read_is_said_to_speculate(index) -> None:
    """DeepSeek-V4-Flash-0731 counted tensor by tensor reads more per node than active x average bits;
    the article's 57.54 tok/s is above what that read allows without speculation, and show says so."""
    steps = _steps(index, "deepseek-v4-flash-0731-stack", 2)
    assert "Counted tensor by tensor" in steps["ceiling"] and "without speculative decoding" in steps["ceiling"]
    assert "decodes speculatively" in steps["measured"]
    assert "Counted tensor by tensor" not in _steps(index, "qwen3.6-35b-a3b-nvfp4-nvidia", 1)["ceiling"]


def test_speculation_the_article_does_not_state_is_shown_as_assumed_from_the_checkpoint(index) -> None:
    """The article states no flags: show names the checkpoint's default as the reason DSpark is assumed, and
    whose acceptance the step takes (another recipe of the same drafter, not the article's own)."""
    steps = _steps(index, "deepseek-v4-flash-0731-stack", 2)
    assert ("The recipe's source states no speculative configuration: the model assumes dspark with 5 tokens "
            "(the 0731 checkpoint's default serving mode") in steps["measured"]
    assert "assumed, not stated by the recipe's source" in steps["expected"]
    assert "1 other recipe of this drafter publishing its acceptance" in steps["expected"]
    assert "assumed, not stated" not in _steps(index, "glm-5.3-flash-nvfp4-redhat", 2)["expected"]


def test_the_step_reads_the_counted_bytes_and_the_union_of_experts(index) -> None:
    """With a counted read the weights term is those bytes, the routed experts grown to what a pass of
    several tokens routes to; a build without one keeps active x average stored bits."""
    steps = _steps(index, "deepseek-v4-flash-0731-stack", 2)
    assert "GB counted per node" in steps["expected"] and "the union of the experts" in steps["ceiling"]
    assert "stored bits at" in _steps(index, "qwen3.6-35b-a3b-nvfp4-nvidia", 1)["expected"]


def test_glm_reads_its_bf16_projections_beside_the_nvfp4_experts(index) -> None:
    """GLM-5.3-Flash NVFP4 keeps attention, dense MLP, LM head and gates in BF16 (the checkpoint summed by
    module): a token reads 22.95 GB, 11.47 GB per node at TP2, not 18B active x 4.76 bits; only the routed
    experts pay NVFP4's dequantization overhead."""
    steps = _steps(index, "glm-5.3-flash-nvfp4-redhat", 2)
    assert "a token reads 22.95 GB split 2 ways" in steps["ceiling"] and "= 11.47 GB per node" in steps["ceiling"]
    assert "dequantization on the " in steps["expected"] and "GB of routed experts" in steps["expected"]


def test_only_the_routed_experts_of_a_counted_read_pay_the_format_overhead(index) -> None:
    """A counted read splits into what is read as stored beside the experts and the routed experts (the
    quantized part the build is named for); the overhead multiplies the second only. An uncounted build
    reads everything in its format."""
    from dataclasses import replace

    from sparkadvisor.core.schema import DecodeRead
    from sparkadvisor.core.speed.constants import default_constants
    from sparkadvisor.core.speed.decode import PassCost, _read_ms, counted_parts_gb, weights_parts_ms

    read = DecodeRead(split_gb=10.0, replicated_gb=1.0, routed_gb=4.0, source="x")
    assert counted_parts_gb(read, 2, 12.0, 6) == ((10.0 - 4.0) / 2 + 1.0, 4.0 * 2 / 2)
    assert counted_parts_gb(DecodeRead(split_gb=10.0, source="x"), 2, 12.0, 6) == (0.0, 5.0)
    c = replace(default_constants(index.hardware["dgx-spark"]), bandwidth_fraction=1.0, weight_penalty={"nvfp4": 0.5})
    cost = PassCost(1e9, 12.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    plain, own = weights_parts_ms(cost, 4.5, 2, 100.0, c, read, 6)
    assert plain == pytest.approx(40.0) and own == pytest.approx(40.0)  # 4 GB and 4 GB at 100 GB/s
    assert _read_ms(cost, 4.5, "nvfp4", 0.0, 2, 100.0, c, read, 6)[0] == pytest.approx(40.0 + 40.0 * 1.5)
    uncounted = weights_parts_ms(cost, 4.0, 2, 100.0, c)
    assert uncounted == (0.0, pytest.approx(1e9 * 4.0 / 8 / 2 / 100e9 * 1e3))


def test_a_counted_read_grows_only_its_routed_experts_with_the_pass() -> None:
    """One token reads the count as published; a pass touching 4x the experts reads 4x the routed part,
    the rest once; without a routed share the count does not grow."""
    from sparkadvisor.core.schema import DecodeRead
    from sparkadvisor.core.speed.decode import counted_gb_per_pass

    read = DecodeRead(split_gb=10.0, replicated_gb=1.0, routed_gb=4.0, source="x")
    assert counted_gb_per_pass(read, 2, 6.0, 6) == read.per_rank_gb(2) == 6.0
    assert counted_gb_per_pass(read, 2, 24.0, 6) == (6.0 + 4 * 4.0) / 2 + 1.0
    flat = DecodeRead(split_gb=10.0, replicated_gb=1.0, source="x")
    assert counted_gb_per_pass(flat, 2, 24.0, 6) == 6.0


def test_whose_constants_says_why_a_build_without_a_recipe_got_its_engine(index) -> None:
    """No --engine given: the build's default, not 'the --engine setting'; --engine given: the setting."""
    from sparkadvisor.core.workload import Settings

    build = index.builds["qwen3.6-35b-a3b-nvfp4-redhat"]
    cluster = Cluster(index.hardware["dgx-spark"], 1)
    default = {s.key: s.text for s in explain(evaluate_build(index, build, cluster, AGENTIC))}["constants"]
    assert default.startswith("vllm (the build's default engine: no recipe for this cluster; --engine picks another)")
    chosen = evaluate_build(index, build, cluster, AGENTIC, Settings(engine="llama.cpp"))
    assert {s.key: s.text for s in explain(chosen)}["constants"].startswith(
        "llama.cpp (the --engine setting: no recipe for this cluster)")


def test_a_fully_reused_prompt_still_computes_its_last_token(index) -> None:
    """vLLM caps a prefix-cache hit at the prompt's length - 1: the last token runs for its logits, so
    100% reuse is one token computed, not a first token in 0 s."""
    from dataclasses import replace

    build = index.builds["glm-5.3-flash-nvfp4-redhat"]
    plan = evaluate_build(index, build, Cluster(index.hardware["dgx-spark"], 2), replace(AGENTIC, prefix_reuse=1.0))
    assert plan.uncached_tokens == 1 and plan.ttft_s is not None and plan.ttft_s > 0
    steps = {s.key: s.text for s in explain(plan)}
    assert "1 token is computed per turn" in steps["prefix"] and steps["ttft"].startswith("1 token / ")


def test_the_modelled_weights_read_per_node_is_on_the_decode_record_and_show_formats_it(index) -> None:
    """show sets a counted read beside the expected step's active x stored bits / TP: that figure is the
    decode stage's, not worked out in the view."""
    build = index.builds["deepseek-v4-flash-0731-stack"]
    plan = evaluate_build(index, build, Cluster(index.hardware["dgx-spark"], 2), AGENTIC)
    assert plan.speed.active_gb_per_node == pytest.approx(13 * plan.weights.stored_bits / 8 / 2, rel=0.05)
    assert round(plan.speed.active_gb_per_node, 2) == 3.81  # the catalog's own comment: 13B x 4.69 bits / 2
    text = " ".join(step.text for step in explain(plan))
    assert "(active x average stored bits would say 3.81 GB per node)" in text


def test_a_recipe_that_loads_another_layout_reads_its_own_count(index) -> None:
    """spark-arena's gpt-oss-120b launch passes --mxfp4-layers moe,qkv,o,lm_head, which quantizes attention and
    the LM head at load: its plan reads the recipe's count (2.72 GB a token), not the checkpoint's layout. A
    recipe under stock flags keeps the build's (gpt-oss-120b has none: the stock count contradicts a measurement)."""
    from sparkadvisor.core.workload import Settings

    def plan(recipe: str):
        return evaluate_build(index, index.builds["gpt-oss-120b-mxfp4"], Cluster(index.hardware["dgx-spark"], 1),
                              AGENTIC, Settings(recipe=recipe))

    arena, stock = plan("gpt-oss-120b-spark-arena-tp1"), plan("gpt-oss-120b-conselara-tp1")
    assert arena.decode_read is arena.recipe.decode_read and arena.decode_read.split_gb == pytest.approx(2.722)
    assert arena.decode.read_bound_tok_s == pytest.approx(273 / (2.722 + 0.027))
    ceiling = next(s.text for s in explain(arena) if s.key == "ceiling")
    assert "Counted tensor by tensor as this recipe's launch loads it (MXFP4 attention projections" in ceiling
    assert "owen-mxfp4-layers" in arena.source_ids()
    assert stock.decode_read is None and stock.decode.read_bound_tok_s is None


def test_stock_gpt_oss_20b_reads_its_bf16_attention_and_lm_head(index) -> None:
    """Stock vLLM builds gpt-oss's attention without the quantization config: a gpt-oss-20b token reads 3.70 GB
    (BF16 attention and LM head beside the MXFP4 experts), not 3.6B x 5.24 average bits = 2.36 GB."""
    steps = _steps(index, "gpt-oss-20b-mxfp4", 1)
    assert "a token reads 3.70 GB split 1 ways" in steps["ceiling"]
    assert "active x average stored bits would say 2.36 GB per node" in steps["ceiling"]
