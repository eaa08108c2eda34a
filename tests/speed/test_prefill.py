"""Prefill: the tensor path each engine takes, each engine's own rates, attention's FLOPs and K/V
at their own rates, the weights streamed once per chunk."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.calibration import calibrate
from sparkadvisor.core.explain import explain
from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.speed.chunks import prefill_chunk
from sparkadvisor.core.speed.prefill import (
    attention_flops_per_token,
    dense_and_expert_params,
    indexer_flops_per_token,
    indexer_keys_per_token,
    prefill_cost,
    prefill_inputs,
    prefill_precision,
)
from sparkadvisor.core.workload import AGENTIC, Settings


@pytest.mark.parametrize(("engine", "weight_format", "precision"), [
    ("llama.cpp", "gguf-q4_k_m", "int8"),  # MMQ: int8 MMA on the unpacked blocks, whatever the GGUF type
    ("llama.cpp", "gguf-q8_0", "int8"),
    ("llama.cpp", "mxfp4", "int8"),
    ("ollama", "gguf-q4_0", "int8"),
    ("llama.cpp", "bf16", "bf16"),  # float weights go to cuBLAS
    ("vllm", "mxfp4", "bf16"),  # Marlin MoE: W4A16
    ("vllm", "awq-int4", "bf16"),
    ("vllm", "nvfp4-modelopt", "fp4"),
    ("sglang", "fp8", "fp8"),
])
def test_prefill_runs_on_the_tensor_path_the_engine_takes_for_the_format(engine, weight_format, precision) -> None:
    assert prefill_precision(weight_format, engine) == precision


def _prefill_scaled(index: CatalogIndex, engine: str, factor: float) -> CatalogIndex:
    """The catalog with every prefill measurement of one engine multiplied by `factor`."""
    recipes = [replace(r, measurements=tuple(replace(m, value=m.value * factor) if m.metric == "prefill_tok_s"
                                             else m for m in r.measurements)) if r.engine == engine else r
               for r in index.catalog.recipes]
    return CatalogIndex(replace(index.catalog, recipes=tuple(recipes)))


def test_an_engines_prefill_rate_follows_its_own_measurements_only(index) -> None:
    spark = index.hardware["dgx-spark"]
    faster = _prefill_scaled(index, "llama.cpp", 2.0)
    before, after = calibrate(index, spark, "llama.cpp"), calibrate(faster, spark, "llama.cpp")
    # Twice the speed: about half the time per GFLOP (the attention and KV rates are pooled over every engine's
    # measurements, so llama.cpp's int8 rate takes up a little more than its share of the change).
    assert 1.8 < before.prefill_ms_per_gflop["int8"] / after.prefill_ms_per_gflop["int8"] < 2.5
    assert "llama.cpp's own" in after.basis["prefill:int8"]
    # SGLang's FP8 rate is fitted to SGLang's measurements: llama.cpp's do not move it.
    sglang_before, sglang_after = calibrate(index, spark, "sglang"), calibrate(faster, spark, "sglang")
    assert sglang_after.prefill_ms_per_gflop["fp8"] == pytest.approx(sglang_before.prefill_ms_per_gflop["fp8"],
                                                                     rel=1e-6)
    assert "sglang's own" in sglang_after.basis["prefill:fp8"]


def test_an_engine_with_one_measured_recipe_uses_the_pooled_rates(index) -> None:
    ollama = calibrate(index, index.hardware["dgx-spark"], "ollama")
    assert ollama.basis["prefill_ms_per_gflop"].startswith("pooled over engines")
    assert "ollama 1" in ollama.basis["prefill_ms_per_gflop"]


def _qwen7b(index, c, attended: float, chunk: int | None = 2048):
    model = index.models["qwen2.5-coder-7b"]
    p = model.params
    return prefill_inputs(1, p.active_b * 1e9, p.total_b * 1e9, p.routed_experts, p.experts_per_token, "gguf-q8_0",
                          model.attention, attended, engine="llama.cpp", weight_bytes=8.1e9, chunk_tokens=chunk)


def test_a_deeper_prompt_costs_attention_flops_and_the_kv_it_streams(index) -> None:
    c = calibrate(index, index.hardware["dgx-spark"], "llama.cpp")
    assert c.prefill_attention_ms_per_gflop > 0 and "llama.cpp's own" in c.basis["prefill_attention"]
    assert c.prefill_kv_ms_per_gb > 0 and "llama.cpp's own" in c.basis["prefill_kv"]
    shallow, deep = prefill_cost(_qwen7b(index, c, 1024), c), prefill_cost(_qwen7b(index, c, 33792), c)
    assert shallow and deep and deep.total_ms > shallow.total_ms
    # The GEMMs and the weight stream do not change with depth; attention's FLOPs and K/V grow with it.
    assert (deep.gemm_ms, deep.weights_ms) == (shallow.gemm_ms, shallow.weights_ms)
    assert deep.attention_ms / shallow.attention_ms == pytest.approx(33792 / 1024, rel=0.01)
    assert deep.kv_ms > 10 * shallow.kv_ms


def test_weights_are_streamed_once_per_chunk_at_the_read_test(index) -> None:
    c = calibrate(index, index.hardware["dgx-spark"], "llama.cpp")
    spark = index.hardware["dgx-spark"]
    assert c.prefill_weight_ms_per_gb == pytest.approx(1e3 / spark.measured_bandwidth_gb_s)
    small, large = prefill_cost(_qwen7b(index, c, 1024, 512), c), prefill_cost(_qwen7b(index, c, 1024, 2048), c)
    assert small.weights_ms == pytest.approx(4 * large.weights_ms)
    assert small.weights_ms == pytest.approx(8.1 / 512 * 1e3 / spark.measured_bandwidth_gb_s)
    assert prefill_cost(_qwen7b(index, c, 1024, None), c).weights_ms == 0.0  # unknown chunk: not counted


@pytest.mark.parametrize(("engine", "args", "prompt", "chunk"), [
    ("llama.cpp", (), 100_000, 512),  # llama-server's n_ubatch
    ("llama.cpp", ("-ub", "2048"), 100_000, 2048),
    ("ollama", (), 100_000, 512),  # num_batch
    ("vllm", (), 100_000, 8192),  # max_num_batched_tokens of `vllm serve` on a >= 70 GiB GPU
    ("vllm", ("--max-num-batched-tokens=16384",), 100_000, 16384),
    ("vllm", (), 2048, 2048),  # a prompt shorter than the chunk is one pass
    ("sglang", (), 100_000, None),  # its default is not recorded: unknown
])
def test_the_prefill_chunk_comes_from_the_flags_else_the_engines_default(engine, args, prompt, chunk) -> None:
    assert prefill_chunk(engine, args, prompt) == chunk


def test_show_names_the_path_and_whose_prefill_rates(index) -> None:
    build = index.builds["qwen3-coder-30b-a3b-q8-ggml"]
    plan = evaluate_build(index, build, Cluster(index.hardware["dgx-spark"], 1), AGENTIC,
                          Settings(engine="llama.cpp"))
    steps = {s.key: s.text for s in explain(plan)}
    assert "int8 tensor path llama.cpp takes for gguf-q8_0" in steps["ttft"]
    assert "llama.cpp's own, fitted to" in steps["ttft"] and "attention FLOPs" in steps["ttft"]
    assert "K/V stream" in steps["ttft"] and "read once per 2,048-token chunk" in steps["ttft"]
    assert "prefill llama.cpp's own rates for int8" in steps["constants"]


@pytest.mark.parametrize("args", [("--max-num-batched-tokens", "4096"), ("--max_num_batched_tokens=4096",)])
def test_the_prefill_chunk_and_the_kv_pool_read_the_same_batched_tokens_flag(args) -> None:
    """One reading of launch flags: the pool's per-request reserve and the prefill chunk cannot disagree."""
    from sparkadvisor.core.stages.recipe import engine_arg

    recipe = type("R", (), {"extra_args": args})()
    assert prefill_chunk("vllm", args, None) == 4096
    assert engine_arg(recipe, "--max-num-batched-tokens") == "4096"


def _glm(index, attended: float, nodes: int = 2, attention=None):
    model = index.models["glm-5.3-flash"]
    p = model.params
    return prefill_inputs(nodes, p.active_b * 1e9, p.total_b * 1e9, p.routed_experts, p.experts_per_token,
                          "nvfp4-modelopt", attention or model.attention, attended, engine="vllm",
                          weight_bytes=180e9, chunk_tokens=8192)


def test_the_sparse_indexer_scores_every_earlier_pool_with_its_own_heads_on_every_rank(index) -> None:
    """GLM-5.3-Flash: 11 MLA layers, each query scored against one key per 4 earlier tokens with
    32 heads of 128 (config.json), replicated on both TP ranks, so TP2 does not halve it."""
    a = index.models["glm-5.3-flash"].attention
    assert (a.indexer_heads, a.indexer_head_dim, a.indexer_pool) == (32, 128, 4)
    assert indexer_keys_per_token(a, 100_000) == pytest.approx(11 * 100_000 / 4)
    assert indexer_flops_per_token(a, 100_000) == pytest.approx(2 * 32 * 128 * 11 * 100_000 / 4)
    c = calibrate(index, index.hardware["dgx-spark"], "vllm")
    two, one = prefill_cost(_glm(index, 100_000), c), prefill_cost(_glm(index, 100_000, nodes=1), c)
    assert two.indexer_gflop == pytest.approx(one.indexer_gflop) == pytest.approx(2 * 32 * 128 * 11 * 25_000 / 1e9)
    assert two.indexer_ms == pytest.approx(two.indexer_gflop * c.prefill_attention_ms_per_gflop)
    assert two.logits_gb == pytest.approx(11 * 25_000 * 8 / 1e9)  # FP32 logits written and read back
    # Quadratic in depth: ten times deeper, ten times the scoring per token; the top-k attention stays bounded.
    deep = prefill_cost(_glm(index, 1_000_000), c)
    assert deep.indexer_gflop == pytest.approx(10 * two.indexer_gflop)
    assert deep.attention_gflop == pytest.approx(two.attention_gflop)


def test_deepseek_v4_indexes_its_compressed_rows(index) -> None:
    a = index.models["deepseek-v4-flash-0731"].attention
    # 21 CSA layers keep one row per 4 tokens and index them with 64 heads of 128; the HCA layers are not indexed.
    assert indexer_keys_per_token(a, 32_768) == pytest.approx(21 * 32_768 / 4)
    assert indexer_flops_per_token(a, 32_768) == pytest.approx(2 * 64 * 128 * 21 * 32_768 / 4)


def test_sparse_mla_attends_in_the_latent(index) -> None:
    """Absorbed form: QK^T over the 512-wide latent (GLM has no RoPE part) and AV over the latent,
    not over GLM's 256-wide v_head_dim."""
    a = index.models["glm-5.3-flash"].attention
    assert attention_flops_per_token(a, 1_000_000) == pytest.approx(11 * 2048 * 2 * 64 * (512 + 512))
    v4 = index.models["deepseek-v4-flash-0731"].attention  # K = V: the whole 512-wide row (448 + 64 RoPE) both ways
    rows = 43 * 100 + 21 * 25 + 20 * 100 / 128  # window of 128 on every layer, CSA rows up to the top-512, HCA rows
    assert attention_flops_per_token(v4, 100) == pytest.approx(rows * 2 * 64 * (512 + 512))


def test_an_indexer_without_a_published_head_count_is_not_counted_and_show_says_so(index) -> None:
    a = replace(index.models["glm-5.3-flash"].attention, indexer_heads=None)
    assert indexer_flops_per_token(a, 100_000) is None
    c = calibrate(index, index.hardware["dgx-spark"], "vllm")
    cost = prefill_cost(_glm(index, 100_000, attention=a), c)
    assert cost.indexer_unknown and cost.indexer_gflop == 0.0 and cost.indexer_ms == 0.0


def test_show_breaks_out_the_indexer_scoring(index) -> None:
    build = index.builds["glm-5.3-flash-nvfp4-nvidia"]
    plan = evaluate_build(index, build, Cluster(index.hardware["dgx-spark"], 2), AGENTIC, Settings())
    ttft = {s.key: s.text for s in explain(plan)}["ttft"]
    assert "indexer scoring" in ttft and "32 heads x 128" in ttft and "one key per 4 tokens" in ttft
    assert "replicated on every rank" in ttft and "FP32 logits" in ttft


def _minimax_plan(index, workload):
    build = index.builds["minimax-m2.7-awq-cyankiwi"]
    return evaluate_build(index, build, Cluster(index.hardware["dgx-spark"], 2), workload, Settings())


def test_a_measured_prefill_rate_holds_at_its_own_depth_and_is_scaled_by_the_model_elsewhere(index) -> None:
    """eugr #197 measured 2,384 tok/s for a 2,048-token prompt at depth 0: a 2,048-token cold prompt
    gets that rate as measured; the agentic turn's 5,000 new tokens on a 95,000-token cached prefix get
    it scaled by the model's own rate there over its rate at the measurement."""
    from sparkadvisor.core.stages.first_token import prefill

    short = _minimax_plan(index, replace(AGENTIC, context_tokens=2048, prefix_reuse=0.0))
    assert (short.prefill_tok_s, short.prefill_basis) == (2384, "measured")
    deep = _minimax_plan(index, AGENTIC)
    assert deep.prefill_basis == "scaled" and deep.prefill_measured.value == 2384
    model, c = deep.model, deep.constants
    estimated = {ctx: prefill(model, None, 2, ctx, new, c, deep.build.format, deep.weights.transformer_bytes,
                              deep.fit.kv_cache_dtype)[0] for ctx, new in ((2048, 2048), (100_000, 5000))}
    assert deep.prefill_tok_s == pytest.approx(2384 * estimated[100_000] / estimated[2048], rel=1e-6)
    assert deep.prefill_tok_s < 0.5 * 2384  # full attention over ~97,500 tokens costs more than the GEMMs
    ttft = {s.key: s for s in explain(deep)}["ttft"]
    assert ttft.basis == "derived" and "holds at its own depth" in ttft.text and "scales it x0." in ttft.text


def test_the_measurement_nearest_the_depth_is_the_one_scaled(index) -> None:
    """llama-bench measured pp2048 at depths 0 to 32,768 with -ub 2048, the ubatch a llama.cpp plan is costed
    and exported with: a prompt at a measured depth takes that row as measured. At a smaller ubatch (the user's
    --max-num-batched-tokens 512) it is scaled by the chunk: every weight is read four times as often."""
    from sparkadvisor.core.stages.first_token import prefill

    recipe = next(r for r in index.catalog.recipes if r.id == "gpt-oss-120b-llamacpp-bench")
    facts = index.facts[recipe.build]
    c = calibrate(index, index.hardware["dgx-spark"], "llama.cpp")
    row = next(m for m in recipe.measurements if m.metric == "prefill_tok_s" and m.depth_tokens == 8192)
    assert prefill(facts.model, recipe, 1, 8192 + 2048, 2048, c, facts.build.format,
                   facts.weights.transformer_bytes)[:3] == (row.value, "measured", row)
    rate, basis, m, _ = prefill(facts.model, recipe, 1, 8192 + 2048, 2048, c, facts.build.format,
                                facts.weights.transformer_bytes, batched=512)
    assert (m, basis) == (row, "scaled") and rate < row.value


def test_a_launch_flag_of_superscript_digits_is_no_chunk_size():
    # "²".isdigit() is True but int("²") fails: a hostile recipe argument must fall back, not raise.
    from sparkadvisor.core.speed.chunks import prefill_chunk

    assert prefill_chunk("vllm", ("--max-num-batched-tokens=²",), 100_000) == 8192
    assert prefill_chunk("vllm", ("--max-num-batched-tokens=4096",), 100_000) == 4096


def test_a_tiny_moe_chunk_reads_only_the_experts_its_tokens_route_to(index) -> None:
    # At 100% prefix reuse vLLM recomputes one token: it read every expert (0.4 s on GLM-5.3-Flash).
    from sparkadvisor.core.speed.prefill import chunk_read_share

    glm = index.builds["glm-5.3-flash-nvfp4-redhat"]
    p = index.facts[glm.id].model.params
    total, active = p.total_b * 1e9, p.active_b * 1e9
    dense, expert = dense_and_expert_params(active, total, p.routed_experts, p.experts_per_token)
    assert chunk_read_share(total, dense, expert, p.routed_experts, p.experts_per_token, 1) == \
        pytest.approx(active / total)
    assert chunk_read_share(total, dense, expert, p.routed_experts, p.experts_per_token, 8192) == pytest.approx(1.0)
    assert chunk_read_share(8e9, 8e9, 0.0, None, None, 1) == 1.0  # a dense model reads every weight
    plan = evaluate_build(index, glm, Cluster(index.hardware["dgx-spark"], 2), AGENTIC.changed(prefix_reuse=1.0))
    assert plan.uncached_tokens == 1 and plan.ttft_s < 0.05
    assert "first token 0.0 s <= 20 s" in " ".join(t.text for t in plan.targets)


@pytest.mark.parametrize(("engine", "stages", "args", "prompt", "planned", "ubatches"), [
    ("llama.cpp", 1, (), 5000, True, 0),  # one stage: nothing to pipeline
    ("vllm", 1, (), 5000, False, 0),  # TP: the nodes share every layer
    ("vllm", 2, (), 5000, False, 1),  # PP: a prompt of one chunk passes the stages in turn
    ("vllm", 2, (), 100_000, False, 13),  # ... and 13 chunks of 8,192 flow through them like micro-batches
    ("sglang", 2, (), 5000, False, 0),  # not known here: counted as overlapping
    ("llama.cpp", 2, (), 5000, False, 4),  # llama.cpp's defaults: -b 2048 over -ub 512
    ("llama.cpp", 2, ("-b", "2048", "-ub", "512"), 600, False, 2),  # never more ubatches than the prompt fills
    ("llama.cpp", 2, ("--batch-size", "2048", "--ubatch-size", "2048"), 5000, False, 1),
    ("llama.cpp", 2, (), 100_000, True, 4),  # the export's launch: 4 ubatches a batch
    ("ollama", 2, (), 5000, False, 1),  # one num_batch of a sequence per llama_decode call
])
def test_a_layer_split_pipelines_the_ubatches_of_one_batch(engine, stages, args, prompt, planned, ubatches) -> None:
    from sparkadvisor.core.speed.chunks import llama_batches, pipeline_ubatches

    batch, ubatch = llama_batches(None, stages) if planned else (None, prefill_chunk(engine, args, None))
    assert pipeline_ubatches(engine, stages, args, prompt, ubatch, batch) == ubatches


def test_two_nodes_on_a_layer_split_prefill_faster_only_as_far_as_the_pipeline_overlaps(index) -> None:
    """A batch of M ubatches over P stages takes M + P - 1 stage times: 4 ubatches on 2 nodes run 8/5 = 1.6x one
    node (a published two-Spark run of llama-bench measured +47% with the pipeline against without it), and a batch
    of one ubatch runs at one node's pace, its nodes taking turns."""
    model = index.models["gpt-oss-120b"]
    p = model.params
    c = calibrate(index, index.hardware["dgx-spark"], "llama.cpp")

    def cost(nodes: int, ubatches: int):
        return prefill_cost(prefill_inputs(nodes, p.active_b * 1e9, p.total_b * 1e9, p.routed_experts,
                                           p.experts_per_token, "mxfp4", model.attention, 5_000, engine="llama.cpp",
                                           weight_bytes=63.4e9, chunk_tokens=2048, ubatches=ubatches,
                                           stages=nodes), c)

    one, four, turns = cost(1, 0), cost(2, 4), cost(2, 1)
    assert one.pipeline_ms == 0
    assert one.total_ms / (four.total_ms - four.link_ms) == pytest.approx(8 / 5)
    assert turns.total_ms - turns.link_ms == pytest.approx(one.total_ms)
    assert four.pipeline_ms == pytest.approx((four.total_ms - four.link_ms - four.pipeline_ms) / 4)


def test_show_explains_the_pipeline_of_a_two_node_llama_cpp_plan(index) -> None:
    plan = evaluate_build(index, index.builds["gpt-oss-120b-gguf-ggml"], Cluster(index.hardware["dgx-spark"], 2),
                          AGENTIC, Settings(engine="llama.cpp"))
    assert plan.first.prefill_inputs.ubatches == 3  # 5,000 new tokens fill 3 ubatches of 2,048
    ttft = {s.key: s.text for s in explain(plan)}["ttft"]
    assert "pipeline" in ttft and "2 stages, 3 ubatches a batch" in ttft and "1.33x a stage's time" in ttft


def test_vllm_pipeline_stages_take_turns_on_a_prompt_of_one_chunk(index) -> None:
    """Three Sparks cannot split Qwen3.6-35B-A3B's heads, so vLLM splits its layers (PP=3). A turn's 5,000 new tokens
    are one chunk, which passes the stages one after another: prefill runs at one node's pace, not three times it.
    A cold 100,000-token prompt is 13 chunks, which flow through the stages like micro-batches (vllm #38726)."""
    build = index.builds["qwen3.6-35b-a3b-nvfp4-redhat"]

    def plan(nodes: int):
        return evaluate_build(index, build, Cluster(index.hardware["dgx-spark"], nodes), AGENTIC, Settings())

    one, three = plan(1), plan(3)
    assert (three.fit.tp, three.fit.pp) == (1, 3) and three.first.prefill_inputs.ubatches == 1
    assert three.prefill_tok_s == pytest.approx(one.prefill_tok_s, rel=0.02)
    ttft = {s.key: s.text for s in explain(three)}["ttft"]
    assert "the new tokens fill one chunk, so the 3 stages take turns" in ttft
    assert "the hidden state handed to the next stage's layers" in ttft and "all-reduce" not in ttft
    cold_one, cold_three = 100_000 / one.cold_ttft_s, 100_000 / three.cold_ttft_s
    assert cold_three / cold_one == pytest.approx(3 * 13 / (13 + 2), rel=0.05)
    cold = evaluate_build(index, build, Cluster(index.hardware["dgx-spark"], 3), replace(AGENTIC, prefix_reuse=0.0),
                          Settings())
    assert "3 stages, 13 chunks of the prompt flow through them (vllm #38726)" in \
        {s.key: s.text for s in explain(cold)}["ttft"]
