"""KV bytes per token against an independent reading of each config.json."""

from __future__ import annotations

import pytest

from sparkadvisor.core.kv import kv_shape

BF16 = 2


def shape(index, model: str, tp: int = 1, dtype: str = "auto"):
    return kv_shape(index.models[model].attention, dtype, tp, 1)


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
    # 43 layers keep a 128-token window of the 512-wide latent; 21 CSA layers add one row per 4
    # tokens and an indexer key per row; 20 HCA layers add one row per 128 tokens.
    kv = shape(index, "deepseek-v4-flash-0731")
    row = 512 * BF16
    assert kv.full_layers == 0
    assert kv.window_tokens == 128
    assert kv.bytes_per_token == pytest.approx(21 * (row + 132) / 4 + 20 * row / 128)
    assert kv.bytes_per_sequence(1000) == pytest.approx(1000 * kv.bytes_per_token + 43 * 128 * row)


def test_fp8_ds_mla_keeps_scales_and_a_bf16_rope_part(index):
    # vLLM's sparse-MLA layout: 512 FP8 + 4 FP32 scales + 64 BF16 = 656 bytes, plus the indexer's 132.
    kv = shape(index, "deepseek-v3.2", dtype="fp8_ds_mla")
    assert kv.bytes_per_token == 61 * (656 + 132)


def test_sparse_attention_reads_a_bounded_number_of_rows(index):
    # A top-k layer reads at most k rows of the latent, but every indexer key to choose them.
    kv = shape(index, "deepseek-v3.2")
    row, key = (512 + 64) * BF16, 132
    assert kv.bytes_read(1000) == pytest.approx(61 * 1000 * (row + key))
    assert kv.bytes_read(100_000) == pytest.approx(61 * (2048 * row + 100_000 * key))
    assert kv.bytes_read(100_000) < kv.bytes_per_sequence(100_000) / 4


def test_dense_attention_reads_everything_it_keeps(index):
    kv = shape(index, "llama-3.3-70b")
    assert kv.bytes_read(50_000) == kv.bytes_per_sequence(50_000)
