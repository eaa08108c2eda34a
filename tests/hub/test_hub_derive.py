"""derive: sizes, parameters, format and attention from config.json and headers (pure, fast).

Every expected figure is computed here from the config numbers (not from the tensor list),
and checked against what the model's publisher states where one does.
"""

from __future__ import annotations

import pytest
import repos

from sparkadvisor.core.derive import DeriveError, TensorMeta, derive


def metas(tensors: repos.Tensors) -> dict[str, TensorMeta]:
    return {name: TensorMeta(dtype, tuple(shape)) for name, (dtype, shape) in tensors.items()}


def run(config, tensors):
    return derive(config, metas(tensors), "src")


def test_dense_gqa_llama_8b_matches_the_published_count():
    config, tensors = repos.llama_8b()
    d = run(config, tensors)
    h, i, v, layers = 4096, 14336, 128256, 32
    per_layer = 2 * h * 4096 + 2 * h * 1024 + 3 * h * i + 2 * h
    expected = 2 * v * h + layers * per_layer + h
    assert expected == 8_030_261_248  # Meta's figure for Llama-3.1-8B
    assert d.total_params == d.active_params == expected
    assert d.weight_bytes == 2 * expected and d.bytes_by_dtype == {"BF16": 2 * expected}
    assert d.format == "bf16" and d.routed_experts is None
    a = d.attention
    assert (a.design, a.layers, a.heads, a.kv_heads, a.head_dim, a.sliding_layers) == ("gqa", 32, 32, 8, 128, 0)
    assert d.kv_bytes_per_token == 2 * 32 * 8 * 128 * 2
    assert d.context.native_tokens == 131072 and d.context.extended_tokens is None
    assert d.unknown == ()


def test_moe_with_mxfp4_experts_sizes_from_bytes_not_counts():
    config, tensors = repos.gpt_oss_120b()
    d = run(config, tensors)
    h, e, v, layers = 2880, 128, 201088, 36
    expert_weights = e * (2 * h * h + h * h)  # gate_up and down per layer, 4-bit values
    expert_bias = e * (2 * h + h)
    attention = 4096 * h + 4096 + 2 * (512 * h + 512) + h * 4096 + h + 64
    rest_per_layer = attention + e * h + e + 2 * h
    routed = layers * (expert_weights + expert_bias)
    total = routed + layers * rest_per_layer + 2 * v * h + h
    assert d.total_params == total
    assert d.total_params == pytest.approx(116.83e9, rel=0.002)  # OpenAI: 116.83B
    fp4_bytes = layers * (expert_weights // 2 + expert_weights // 32)  # blocks + one E8M0 scale per 32
    bf16_bytes = 2 * (total - layers * expert_weights)
    assert d.weight_bytes == fp4_bytes + bf16_bytes
    assert d.weight_bytes / 1e9 == pytest.approx(65.2, rel=0.01)  # the repo's original/ folder: 65.2 GB
    assert d.active_params == total - v * h - routed + routed * 4 // 128
    assert d.active_params == pytest.approx(5.13e9, rel=0.01)  # OpenAI: 5.13B active
    assert (d.format, d.routed_experts, d.experts_per_token) == ("mxfp4", 128, 4)
    a = d.attention
    assert (a.sliding_layers, a.sliding_window, a.kv_heads, a.head_dim) == (18, 128, 8, 64)
    assert d.kv_bytes_per_token == 18 * 2 * 8 * 64 * 2


def test_mla_with_fp8_blocks_shared_experts_and_mtp():
    config, tensors = repos.deepseek_v2_lite_fp8()
    d = run(config, tensors)
    h, v = 2048, 102400
    attn = 3072 * h + 576 * h + 4096 * 512 + h * 2048 + 512 + 2 * h
    expert, shared, router = 3 * 1408 * h, 3 * 2816 * h, 64 * h
    layer0 = attn + 3 * 10944 * h
    moe = attn + 64 * expert + shared + router
    total = 2 * v * h + h + layer0 + 26 * moe
    mtp = moe + h * 2 * h + 3 * h
    assert d.total_params == total and d.mtp_params == mtp and d.mtp_layers == 1
    assert d.total_params == pytest.approx(15.7e9, rel=0.01)  # DeepSeek: 15.7B total
    assert d.active_params == total - v * h - 26 * 64 * expert + 26 * 64 * expert * 6 // 64
    assert d.active_params == pytest.approx(2.4e9, rel=0.03)  # DeepSeek: 2.4B active
    assert (d.format, d.routed_experts, d.experts_per_token) == ("fp8", 64, 6)
    a = d.attention
    assert (a.design, a.kv_lora_rank, a.qk_rope_head_dim, a.layers) == ("mla", 512, 64, 27)
    assert d.kv_bytes_per_token == 27 * (512 + 64) * 2
    scales = sum(m.bytes for n, m in metas(tensors).items() if n.endswith("weight_scale_inv"))
    fp8 = sum(m.elements for n, m in metas(tensors).items() if m.dtype == "F8_E4M3")
    assert d.weight_bytes == fp8 + scales + 2 * (total + mtp - fp8)
    assert d.mtp_bytes > 0 and d.context.native_tokens == 163840


def nvfp4_linear(prefix: str, rows: int, cols: int, modelopt: bool) -> repos.Tensors:
    weight = "weight" if modelopt else "weight_packed"
    scale2 = "weight_scale_2" if modelopt else "weight_global_scale"
    return {f"{prefix}.{weight}": ("U8", [rows, cols // 2]), f"{prefix}.weight_scale": ("F8_E4M3", [rows, cols // 16]),
            f"{prefix}.{scale2}": ("F32", [1]), f"{prefix}.input_scale": ("F32", [1])}


@pytest.mark.parametrize("modelopt", [False, True])
def test_nvfp4_packed_weights_count_two_parameters_per_byte(modelopt):
    config = {"num_hidden_layers": 1, "num_attention_heads": 8, "hidden_size": 256, "max_position_embeddings": 4096}
    if modelopt:
        config["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4"}
    else:
        config["quantization_config"] = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
                                         "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "float",
                                                                                   "group_size": 16}}}}
    tensors = nvfp4_linear("model.layers.0.mlp.down_proj", 256, 1024, modelopt)
    tensors["model.embed_tokens.weight"] = ("BF16", [1000, 256])
    d = run(config, tensors)
    assert d.total_params == 256 * 1024 + 1000 * 256
    assert d.weight_bytes == 256 * 1024 // 2 + 256 * 1024 // 16 + 8 + 2 * 1000 * 256
    assert d.format == ("nvfp4-modelopt" if modelopt else "nvfp4-compressed-tensors")


def test_gptq_int4_counts_eight_parameters_per_int32():
    config = {"num_hidden_layers": 1, "num_attention_heads": 8, "hidden_size": 256,
              "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}}
    tensors = {"model.layers.0.mlp.up_proj.qweight": ("I32", [256 // 8, 512]),
               "model.layers.0.mlp.up_proj.qzeros": ("I32", [2, 512 // 8]),
               "model.layers.0.mlp.up_proj.scales": ("F16", [2, 512]),
               "model.layers.0.mlp.up_proj.g_idx": ("I32", [256])}
    d = run(config, tensors)
    assert d.total_params == 256 * 512 and d.format == "gptq-int4"
    assert d.weight_bytes == 256 * 512 // 2 + 2 * 64 * 4 + 2 * 512 * 2 + 256 * 4
    assert "context length (config.json gives no max_position_embeddings)" in d.unknown


def tiny(**config) -> tuple[dict, repos.Tensors]:
    base = {"num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
            "hidden_size": 2048, "max_position_embeddings": 262144}
    return base | config, {"model.embed_tokens.weight": ("BF16", [10, 2048])}


def test_qwen3_next_linear_layers_from_layer_types_or_interval():
    linear = {"linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
              "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "model_type": "qwen3_next"}
    types = (["linear_attention"] * 3 + ["full_attention"]) * 12
    for extra in ({"layer_types": types}, {"full_attention_interval": 4}):
        d = run(*tiny(**linear, **extra))
        assert d.attention.linear.layers == 36 and d.attention.linear.kind == "gated-deltanet"
        assert d.kv_bytes_per_token == 12 * 2 * 2 * 256 * 2


def test_linear_layers_without_their_dimensions_are_unknown_not_guessed():
    d = run(*tiny(full_attention_interval=4))
    assert d.attention is None and d.kv_bytes_per_token is None
    assert any("36 linear-attention layers" in u and "linear_num_key_heads" in u for u in d.unknown)


def test_sliding_window_patterns():
    assert run(*tiny(sliding_window=1024, sliding_window_pattern=6)).attention.sliding_layers == 40
    assert run(*tiny(sliding_window=4096, use_sliding_window=False)).attention.sliding_layers == 0
    vague = run(*tiny(sliding_window=4096))
    assert vague.attention.sliding_layers == 0
    assert any(u.startswith("sliding-window layers (sliding_window=4096") for u in vague.unknown)
    strange = run(*tiny(layer_types=["chunked_attention"] * 48))
    assert strange.attention is None and any("chunked_attention" in u for u in strange.unknown)


def test_indexer_and_extended_context():
    d = run(*tiny(index_head_dim=128, index_topk=2048, max_position_embeddings=32768,
                  rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}))
    assert (d.attention.indexer_head_dim, d.attention.sparse_topk) == (128, 2048)
    assert (d.attention.indexer_heads, d.attention.indexer_pool) == (None, 1)  # unpublished heads stay unknown
    assert (d.context.native_tokens, d.context.extended_tokens) == (32768, 131072)
    pooled = run(*tiny(index_head_dim=128, index_topk=2048, index_n_heads=32, index_kpool=4))
    assert (pooled.attention.indexer_heads, pooled.attention.indexer_pool) == (32, 4)


def test_moe_without_experts_per_token_leaves_active_unknown():
    config, tensors = tiny()
    tensors |= {f"model.layers.0.mlp.experts.{e}.up_proj.weight": ("BF16", [8, 2048]) for e in range(4)}
    d = run(config, tensors)
    assert d.active_params is None and d.routed_experts == 4
    assert any(u.startswith("active parameters") for u in d.unknown)


def test_unknown_quantization_is_reported_not_guessed():
    d = run(*tiny(quantization_config={"quant_method": "bitsandbytes", "load_in_4bit": True}))
    assert d.format is None and d.unknown[0] == "format (quant_method 'bitsandbytes' is not one the catalog knows)"


@pytest.mark.parametrize(("config", "tensors", "words"), [
    ({"num_hidden_layers": "many", "num_attention_heads": 8}, {"a.weight": ("BF16", [2])},
     "config.json: num_hidden_layers should be a whole number >= 0 (got 'many')"),
    ({}, {"a.weight": ("Q3", [2])}, "tensor 'a.weight' has dtype 'Q3', which safetensors does not define"),
    ({}, {}, "the safetensors headers list no tensors"),
    ({"text_config": [1]}, {"a.weight": ("BF16", [2])}, "text_config should be a table of settings (got [1])"),
])
def test_malformed_input_is_one_sentence(config, tensors, words):
    with pytest.raises(DeriveError) as caught:
        run(config, tensors)
    assert str(caught.value).startswith(words) and "\n" not in str(caught.value)
