"""KV bytes per token against an independent reading of each config.json."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.explain import explain
from sparkadvisor.core.kv import kv_shape
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.schema import Attention
from sparkadvisor.core.validation import validate
from sparkadvisor.core.workload import WORKLOADS

BF16 = 2


def shape(index, model: str, tp: int = 1, dtype: str = "auto", draft_layers: int = 0):
    return kv_shape(index.models[model].attention, dtype, tp, 1, draft_layers=draft_layers)


def test_gqa_llama_3_3_70b(index):
    # config.json: 80 layers, 8 KV heads, head_dim 128 -> K and V for every layer.
    expected = 2 * 80 * 8 * 128 * BF16
    assert shape(index, "llama-3.3-70b").bytes_per_token == expected == 327_680
    # TP=2 splits the KV heads across the two nodes.
    assert shape(index, "llama-3.3-70b", tp=2).bytes_per_token == expected / 2


def test_mla_deepseek_v32_is_whole_on_every_rank(index):
    # kv_lora_rank 512 + qk_rope_head_dim 64 per layer, 61 layers, plus the DSA indexer's
    # 128 FP8 values and one FP32 scale per token per layer.
    expected = 61 * ((512 + 64) * BF16 + 128 + 4)
    assert shape(index, "deepseek-v3.2").bytes_per_token == expected
    assert shape(index, "deepseek-v3.2", tp=4).bytes_per_token == expected


def test_sliding_window_hybrid_gpt_oss_120b(index):
    # 18 full layers keep every token; 18 sliding layers keep at most 128 tokens.
    per_layer = 2 * 8 * 64 * BF16
    kv = shape(index, "gpt-oss-120b")
    assert kv.bytes_per_token == 18 * per_layer
    assert kv.window_tokens == 128
    at_100k = 18 * per_layer * 100_000 + 18 * per_layer * 128
    assert kv.bytes_per_sequence(100_000) == at_100k
    assert at_100k / 2**30 == pytest.approx(3.44, abs=0.01)  # kvfit's reference value


def test_linear_attention_hybrid_qwen3_next(index):
    # 12 full layers of 2 KV heads x 256; 36 Gated DeltaNet layers each keep a
    # 32 x 128 x 128 recurrent state and a 3-step conv state over 2*16*128 + 32*128 channels.
    kv = shape(index, "qwen3-next-80b-a3b")
    assert kv.bytes_per_token == 12 * 2 * 2 * 256 * BF16
    state = (32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)) * BF16
    assert kv.state_bytes_per_sequence == 36 * state
    assert kv.bytes_per_sequence(1000) == 1000 * 12 * 2 * 2 * 256 * BF16 + 36 * state


def test_fp8_kv_halves_bf16(index):
    assert shape(index, "llama-3.3-70b", dtype="fp8").bytes_per_token * 2 == \
        shape(index, "llama-3.3-70b").bytes_per_token


def test_nemotron_h_counts_only_the_blocks_that_keep_kv(index):
    # 88 blocks: 8 GQA attention (2 KV heads x 128), 40 Mamba-2, 40 MoE-only blocks that keep nothing.
    kv = shape(index, "nemotron-3-super-120b-a12b")
    assert kv.full_layers == 8
    assert kv.bytes_per_token == 8 * 2 * 2 * 128 * BF16 == 8 * 1024  # ~8 KiB per token
    # Mamba-2: 128 heads x 64 x state 128, conv over 128*64 + 2*8*128 channels, 3 steps.
    state = (128 * 64 * 128 + 3 * (128 * 64 + 2 * 8 * 128)) * BF16
    assert kv.state_bytes_per_sequence == 40 * state


def test_deepseek_v4_caches_compressed_rows_and_a_window(index):
    # 43 layers keep a 128-token window of the latent; 21 CSA layers add one row per 4 tokens and an
    # indexer key per row; 20 HCA layers add one row per 128 tokens. vLLM stores V4's latent FP8
    # whatever --kv-cache-dtype says (deepseek_v4_attention.py head_bytes): 448 FP8 NoPE, 64 BF16
    # RoPE, 448 / 64 scale bytes and one pad byte.
    kv = shape(index, "deepseek-v4-flash-0731")
    row = 448 + 64 * 2 + 7 + 1
    assert row == 584 == kv.row_bytes
    assert kv.full_layers == 0
    assert kv.window_tokens == 128
    assert kv.bytes_per_token == pytest.approx(21 * (row + 132) / 4 + 20 * row / 128)
    assert kv.bytes_per_sequence(1000) == pytest.approx(1000 * kv.bytes_per_token + 43 * 128 * row)


def _aligned(size):
    return -(-size // 576) * 576  # the fp8_ds_mla layout's page alignment


def test_deepseek_v4_packs_its_caches_in_one_slab_of_block_ids(index):
    # vLLM's DeepSeek-V4 layout (kv_cache_utils.py _get_packed_kv_cache_layout): the caches that keep
    # every token form one group (21 ratio-4 row pages of 64 x 584 B, their 21 indexer pages of 64 x 132 B,
    # 20 ratio-128 pages of 2 x 584 B at block 256), and a block id costs that group's summed pages,
    # the largest of all groups.
    kv = shape(index, "deepseek-v4-flash-0731", tp=2)
    c4, key, c128 = _aligned(64 * 584), _aligned(64 * 132), _aligned(2 * 584)
    assert (c4, key, c128) == (37_440, 8_640, 1_728)
    stride, split = kv.packed.groups(256)
    assert stride == 21 * c4 + 21 * key + 20 * c128
    # The sliding caches in groups of 22 layer tuples (the chunk padding 21, 43, 21 and 20 least): the
    # 43 windows in two groups, each ratio's FP32 compressor states in one (ratio 4 with its indexer's).
    assert [(family.name, groups) for family, groups, _ in split] == [
        ("sliding window", 2), ("ratio-4 compressor state", 1), ("ratio-128 compressor state", 1)]
    # A request of 262,144 tokens at 8,192 batched tokens: 1,024 ids for the rows, and per sliding group
    # cdiv(window - 1 + 8,192, its block) + 1: windows 128 in blocks of 64, ratio-4 states 8 in blocks of 4
    # (2 x 512 x 2 x 4 B), ratio-128 states 128 in blocks of 8.
    ids = 1024 + 2 * (-(-(127 + 8192) // 64) + 1) + (-(-(7 + 8192) // 4) + 1) + (-(-(127 + 8192) // 8) + 1)
    assert kv.request_bytes(262_144, None, 8192) == ids * stride
    # Every one of these ids but the rows' is paid whatever the length: about 3.1 GiB of 4.1.
    assert kv.request_bytes(1_048_576, None, 8192) - kv.request_bytes(262_144, None, 8192) == 3072 * stride


def test_deepseek_v4_mtp_layer_keeps_only_a_window(index):
    # Its compress_ratios entry after the last decoder layer is 0: the MTP layer is one more sliding
    # window (44 in two groups of 22), not a full-attention layer, and costs a request nothing more.
    plain = shape(index, "deepseek-v4-flash-0731", tp=2)
    mtp = shape(index, "deepseek-v4-flash-0731", tp=2, draft_layers=1)
    assert mtp.bytes_per_token == plain.bytes_per_token
    assert mtp.packed.families[0].types[0][0] == 44
    assert mtp.request_bytes(262_144, None, 8192) == plain.request_bytes(262_144, None, 8192)


def test_fp8_ds_mla_keeps_scales_and_a_bf16_rope_part(index):
    # vLLM's sparse-MLA layout: 512 FP8 + 4 FP32 scales + 64 BF16 = 656 bytes, plus the indexer's 132.
    kv = shape(index, "deepseek-v3.2", dtype="fp8_ds_mla")
    assert kv.bytes_per_token == 61 * (656 + 132)
    # The layout is laid out for DeepSeek's 64-wide RoPE part (concat_and_cache_mla: "pe_dim must be 64
    # for fp8_ds_mla"): GLM-5.3-Flash (512-wide latent, no RoPE part) asked for fp8 keeps the plain FP8
    # latent, 512 B (tonyd2wild's DFlash2 notes: "MLA 512 B/token, indexer 33 B/token").
    glm = shape(index, "glm-5.3-flash", tp=2, dtype="fp8_e4m3")
    assert glm.row_bytes == 512
    # Its k-pool indexer keeps one 132-byte key per 4 tokens (Glm5NextIndexerCache: tokens_per_state =
    # index_kpool), 33 bytes per token per layer; DeepSeek-V3.2's keeps one per token (above).
    assert glm.bytes_per_token == 11 * (512 + 132 / 4)


def test_kda_keeps_its_recurrent_state_in_fp32(index):
    # vLLM's MambaStateDtypeCalculator.kda_state_dtype: conv states at the model dtype, the
    # recurrent state always FP32. GLM-5.3-Flash TP2: 32 heads x 128 x 128 per rank, 3 conv steps over
    # q, k and v (3 x 32 x 128 channels).
    kv = shape(index, "glm-5.3-flash", tp=2, dtype="fp8_e4m3")
    assert kv.state_bytes_per_layer == 32 * 128 * 128 * 4 + 3 * 3 * 32 * 128 * BF16


def test_mamba_ssm_cache_dtype_float32_doubles_the_recurrent_state(index):
    attention = index.models["nemotron-3-super-120b-a12b"].attention
    bf16, fp32 = kv_shape(attention, "fp8", 2, 1), kv_shape(attention, "fp8", 2, 1, "float32")
    recurrent = 128 // 2 * 64 * 128
    assert fp32.state_bytes_per_layer - bf16.state_bytes_per_layer == recurrent * (4 - 2)


def test_a_request_costs_what_vllm_reserves_for_it(index):
    # gpt-oss-120b: 18 full layers hold cdiv(L, 16) blocks; 18 sliding layers hold
    # window - 1 + max_num_batched_tokens tokens in blocks, plus one block (SlidingWindowSpec).
    kv = shape(index, "gpt-oss-120b")
    row = 18 * 2 * 8 * 64 * BF16
    assert kv.request_bytes(1000) == row * 63 * 16 + row * (63 + 1) * 16  # 127 + 8192 > 1000: capped at L
    assert kv.request_bytes(131072, batched_tokens=2048) == row * 131072 + row * (-(-2175 // 16) + 1) * 16


def test_a_hybrid_request_pays_a_state_page_per_speculative_token_and_padded_groups(index):
    # GLM-5.3-Flash TP2: 11 MLA layers and 34 KDA layers. vLLM groups layers 11 at a time, so the 34
    # KDA layers take 4 groups (44 slots); each slot holds one page per request plus one per
    # speculative token (MambaSpec num_speculative_blocks), one more with prefix caching ("align"); the
    # page is one attention block of one layer, grown in steps of --block-size 2304 until it holds the
    # state (its convolution widened by one step per speculative token).
    kv = shape(index, "glm-5.3-flash", tp=2, dtype="fp8_e4m3")
    assert kv.linear_slots == 44 and kv.group_size == 11
    assert kv.linear_state_bytes(7) == kv.state_bytes_per_layer + 7 * 3 * 32 * 128 * BF16
    block = kv.block_tokens(2304, 7)
    assert block == 2304 * -(-kv.linear_state_bytes(7) // (2304 * 512)) == 4608
    # Every block id reserves an MLA page and an indexer page in each of the 11 positions.
    block_id = 11 * block * (512 + 132 / 4)
    full = 57 * block_id
    assert kv.request_bytes(262144, 2304, speculative_tokens=7) == full + 4 * 8 * block_id + block_id
    assert kv.request_bytes(262144, 2304, speculative_tokens=7, prefix_caching=True) == \
        full + 4 * 9 * block_id + block_id
    assert kv.request_bytes(262144, 2304, speculative_tokens=0) == full + 4 * block_id + block_id


def test_glms_logged_pools_are_whole_block_ids(index):
    # tonyd2wild-glm's pins log 310,292 tokens at 3 GiB, 414,615 at 4 GiB and 678,661 at 6 GiB. Each is
    # int(num_blocks / block ids per request x 262,144) with num_blocks = pin // (11 x 4,608 x 545 B):
    # 116, 155 and 233 block ids, 98 per request at 3 and 4 GiB (the model counts 94 and leaves out the
    # drafter's window group) and 90 at 6 GiB.
    block_id = 11 * 4608 * (512 + 33)
    for pin, per_request, logged in ((3, 98, 310_292), (4, 98, 414_615), (6, 90, 678_661)):
        assert int(pin * 2**30 // block_id / per_request * 262_144) == logged
    kv = shape(index, "glm-5.3-flash", tp=2, dtype="fp8_e4m3")
    assert kv.request_bytes(262144, 2304, speculative_tokens=7, prefix_caching=True) == 94 * block_id


def test_under_pipeline_parallelism_the_pool_follows_the_most_loaded_stage(index):
    # DeepSeek-V3.2's 61 layers on 3 stages are 20, 20 and 21 (vLLM get_pp_indices gives the remainder
    # to the stages before the last); every stage is cut to the smallest block count among them
    # (kv_cache_utils.get_kv_cache_configs), so a token costs the 21-layer stage's bytes on every rank.
    per_layer = (512 + 64) * BF16 + 128 + 4
    kv = kv_shape(index.models["deepseek-v3.2"].attention, "auto", 1, 3)
    assert kv.bytes_per_token == pytest.approx(21 * per_layer)
    assert kv.request_bytes(1000) == pytest.approx(21 * per_layer * 1008)
    # A decode step runs the stages one after another, each reading its own layers: 61 in all.
    assert 3 * kv.bytes_read(1000) == pytest.approx(61 * 1000 * per_layer)
    assert kv_shape(index.models["llama-3.3-70b"].attention, "auto", 1, 5).bytes_per_token == 16 * 2 * 8 * 128 * BF16


def test_sparse_attention_reads_a_bounded_number_of_rows(index):
    # A top-k layer reads at most k rows of the latent, but every indexer key to choose them.
    kv = shape(index, "deepseek-v3.2")
    row, key = (512 + 64) * BF16, 132
    assert kv.bytes_read(1000) == pytest.approx(61 * 1000 * (row + key))
    assert kv.bytes_read(100_000) == pytest.approx(61 * (2048 * row + 100_000 * key))
    assert kv.bytes_read(100_000) < kv.bytes_per_sequence(100_000) / 4


def test_a_pooled_indexer_reads_one_key_per_pool(index):
    # GLM-5.3-Flash's indexer scores one key per 4 tokens, so a decode step reads a quarter of the keys a
    # per-token indexer would, beside the top-k latent rows and the KDA states.
    kv = shape(index, "glm-5.3-flash", tp=2, dtype="fp8_e4m3")
    assert kv.indexer_pool == 4
    assert kv.bytes_read(100_000) == pytest.approx(
        11 * (2048 * 512 + 100_000 / 4 * 132) + kv.state_bytes_per_sequence)


def test_dense_attention_reads_everything_it_keeps(index):
    kv = shape(index, "llama-3.3-70b")
    assert kv.bytes_read(50_000) == kv.bytes_per_sequence(50_000)


# Gemma 4: the full-attention (global) layers cache another shape than the sliding ones.
# Per token, per layer, vLLM caches K and V: 2 x KV heads per rank x head dim x 2 bytes (BF16).
# attention_k_eq_v only means V is made from K's projection; vLLM still keeps both tensors.
# KV heads per rank under TP: max(1, heads // tp).


def test_gemma4_26b_global_layers_cache_their_own_shape(index):
    # config.json: 30 layers, 25 sliding (window 1024) of num_key_value_heads 8 x head_dim 256,
    # 5 full of num_global_key_value_heads 2 x global_head_dim 512.
    full_row = 2 * 2 * 512 * BF16             # 4,096 B per full layer per token
    sliding_row = 2 * 8 * 256 * BF16          # 8,192 B per sliding layer per token
    kv = shape(index, "gemma-4-26b-a4b")
    assert kv.bytes_per_token == 5 * full_row == 20_480  # 20 KiB per token beyond the window
    assert kv.window_bytes_per_token == 25 * sliding_row == 204_800
    assert kv.window_tokens == 1024
    assert kv.bytes_per_sequence(100_000) == 100_000 * 5 * full_row + 1024 * 25 * sliding_row
    # One kv_heads/head_dim pair for every layer (the old schema) would have said 5 x 8,192 per token.
    assert kv.bytes_per_token != 5 * sliding_row
    # A decode step reads every kept token of the full layers and the window of the sliding ones.
    assert kv.bytes_read(100_000) == 5 * 100_000 * full_row + 25 * 1024 * sliding_row


def test_gemma4_26b_under_tp_replicates_its_two_global_kv_heads(index):
    # TP=2: 1 global KV head per rank (2 // 2), 4 sliding (8 // 2).
    kv2 = shape(index, "gemma-4-26b-a4b", tp=2)
    assert kv2.bytes_per_token == 5 * 2 * 1 * 512 * BF16 == 10_240
    assert kv2.window_bytes_per_token == 25 * 2 * 4 * 256 * BF16
    # TP=4: 2 // 4 = 0, so each rank keeps one whole global head: no further split.
    kv4 = shape(index, "gemma-4-26b-a4b", tp=4)
    assert kv4.bytes_per_token == kv2.bytes_per_token
    assert kv4.window_bytes_per_token == 25 * 2 * 2 * 256 * BF16


def test_gemma4_31b_global_layers(index):
    # config.json: 60 layers, 50 sliding of 16 KV heads x 256, 10 full of 4 KV heads x 512.
    kv = shape(index, "gemma-4-31b")
    assert kv.bytes_per_token == 10 * 2 * 4 * 512 * BF16 == 81_920  # 80 KiB
    assert kv.window_bytes_per_token == 50 * 2 * 16 * 256 * BF16 == 819_200
    assert shape(index, "gemma-4-31b", dtype="fp8").bytes_per_token == 10 * 2 * 4 * 512 * 1


def test_the_explanation_gives_gemma4_both_layer_shapes(index):
    build = next(b for b in index.catalog.builds if b.id == "gemma-4-26b-a4b-bf16")
    plan = evaluate_build(index, build, Cluster(index.hardware["dgx-spark"], 1), WORKLOADS["chat"])
    text = next(s for s in explain(plan) if s.key == "kv").text
    assert "2 (K and V) x 2 KV heads per rank x 512 x 2 B = 4 KiB per layer" in text
    assert "on 5 full-attention layers per rank = 20.00 KiB per token per node" in text
    assert "25 sliding layers of 2 x 8 KV heads per rank x 256 x 2 B = 8 KiB per layer per token" in text
    assert "1,024 tokens (200.0 MiB per sequence)" in text  # 25 x 8,192 B x 1,024 = 200 MiB
    assert "vLLM caches K and V apart" in text


def test_global_layer_shape_is_refused_on_mla():
    with pytest.raises(ValidationError, match="MLA model caches its latent"):
        validate(Attention, {"design": "mla", "layers": 4, "kv_lora_rank": 512, "global_head_dim": 512,
                             "source": "x"})
    with pytest.raises(ValidationError, match="global_kv_heads 8 is more than heads 4"):
        validate(Attention, {"design": "gqa", "layers": 4, "heads": 4, "kv_heads": 2, "head_dim": 64,
                             "global_kv_heads": 8, "source": "x"})


def test_an_mtp_drafters_layers_are_cached_like_the_targets_full_layers(index):
    # vLLM puts a drafter's attention layers in the KV cache beside the target's (kv_cache_utils.py groups
    # "drafters that add extra layers to one attention type"). Qwen3.8-Flash-Next TP1 with its MTP layer:
    # 12 + 1 full layers, so the 36 linear layers group 13 at a time (3 groups, 39 slots); a decode step of
    # the target still reads its own 12.
    attention = index.models["qwen3.8-flash-next"].attention
    plain, drafted = kv_shape(attention, "fp8_e4m3", 1, 1), kv_shape(attention, "fp8_e4m3", 1, 1, draft_layers=1)
    assert drafted.full_layers == 13 and drafted.group_size == 13 and drafted.linear_slots == 39
    assert drafted.bytes_per_token == pytest.approx(plain.bytes_per_token * 13 / 12)
    assert drafted.bytes_read(100_000) == pytest.approx(plain.bytes_read(100_000))


def test_the_explanation_names_deepseek_v4s_compressed_rows(index):
    # 21 ratio-4 layers keep a 584 B row and a 132 B indexer key per 4 tokens, 20 ratio-128 layers a row per
    # 128 tokens: 21 x (584 + 132) / 4 + 20 x 584 / 128 = 3,850 B per token; no layer keeps every token.
    build = index.builds["deepseek-v4-flash-0731-stack"]
    plan = evaluate_build(index, build, Cluster(index.hardware["dgx-spark"], 2), WORKLOADS["agentic"])
    text = next(s for s in explain(plan) if s.key == "kv").text
    assert "0 full-attention layers" not in text
    assert ("on 21 layers keeping one row per 4 tokens with its indexer key and 20 layers keeping one row per "
            "128 tokens per rank (3,850 B per token from the compressed rows)") in text


def test_a_separate_mtp_draft_model_is_not_the_targets_mtp_layers(index):
    # MiaAI-Lab's Gemma-4-31B recipe speculates with google/gemma-4-31B-it-assistant under vLLM's mtp method:
    # a model of its own (about 1.0 GB) whose Q-only attention reads the target's KV cache. The pool counts
    # no drafter layer, and each of the 4 proposed tokens reads the whole draft at the read-test bandwidth.
    from sparkadvisor.core.workload import Settings

    recipe = "gemma-4-31b-nvfp4-miaai"
    plan = evaluate_build(index, index.builds["gemma-4-31b-nvfp4-nvidia"], Cluster(index.hardware["dgx-spark"], 1),
                          WORKLOADS["agentic"], Settings(recipe=recipe))
    assert plan.recipe.id == recipe and plan.kv.draft_layers == 0 and plan.pool.inputs.draft_layers == 0
    effective = index.hardware["dgx-spark"].memory_bandwidth_gb_s * plan.constants.bandwidth_fraction
    assert plan.decode.draft_ms == pytest.approx(4 * 1.0 / effective * 1e3)
