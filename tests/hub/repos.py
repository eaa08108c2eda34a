"""Synthetic repos with the tensor names and shapes of real checkpoints, for the fake hub.

- dense GQA: Llama-3.1-8B (32 layers, 32 heads, 8 KV heads, BF16; 8,030,261,248 parameters).
- MoE with MXFP4 experts: gpt-oss-120b (36 layers, 128 experts, 4 per token; experts as U8
  blocks of 32 FP4 values plus one U8 E8M0 scale per block).
- MLA: DeepSeek-V2-Lite (27 layers, kv_lora_rank 512, 64 routed + 2 shared experts, 6 per token),
  stored FP8 with 128x128 block scales as DeepSeek-V3 ships, plus one MTP layer.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any

from fakehub import FakeFile, FakeRepo, small

Tensors = dict[str, tuple[str, list[int]]]
BITS = {"BF16": 16, "F16": 16, "F32": 32, "U8": 8, "F8_E4M3": 8, "I32": 32, "F8_E8M0": 8, "I64": 64}


def llama_8b() -> tuple[dict[str, Any], Tensors]:
    """Llama-3.1-8B's config.json and tensors."""
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
              "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
              "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256, "max_position_embeddings": 131072,
              "rope_scaling": {"factor": 8.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"},
              "torch_dtype": "bfloat16", "tie_word_embeddings": False}
    return config, dense_tensors(config, layers=32)


def dense_tensors(config: dict[str, Any], layers: int) -> Tensors:
    """Embeddings, `layers` Llama decoder layers, the final norm and the LM head, in BF16."""
    h, i, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    q, kv = config["num_attention_heads"] * config["head_dim"], config["num_key_value_heads"] * config["head_dim"]
    tensors: Tensors = {"model.embed_tokens.weight": ("BF16", [v, h])}
    for n in range(layers):
        p = f"model.layers.{n}."
        tensors |= {p + "self_attn.q_proj.weight": ("BF16", [q, h]), p + "self_attn.k_proj.weight": ("BF16", [kv, h]),
                    p + "self_attn.v_proj.weight": ("BF16", [kv, h]), p + "self_attn.o_proj.weight": ("BF16", [h, q]),
                    p + "mlp.gate_proj.weight": ("BF16", [i, h]), p + "mlp.up_proj.weight": ("BF16", [i, h]),
                    p + "mlp.down_proj.weight": ("BF16", [h, i]), p + "input_layernorm.weight": ("BF16", [h]),
                    p + "post_attention_layernorm.weight": ("BF16", [h])}
    return tensors | {"model.norm.weight": ("BF16", [h]), "lm_head.weight": ("BF16", [v, h])}


def gpt_oss_120b() -> tuple[dict[str, Any], Tensors]:
    """gpt-oss-120b's config.json and tensors (MXFP4 experts, BF16 elsewhere)."""
    config = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 2880,
              "intermediate_size": 2880, "num_hidden_layers": 36, "num_attention_heads": 64,
              "num_key_value_heads": 8, "head_dim": 64, "num_local_experts": 128, "num_experts_per_tok": 4,
              "experts_per_token": 4, "vocab_size": 201088, "sliding_window": 128,
              "layer_types": ["sliding_attention", "full_attention"] * 18, "max_position_embeddings": 131072,
              "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096},
              "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": [
                  "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}}
    h, e, v = 2880, 128, 201088
    tensors: Tensors = {"model.embed_tokens.weight": ("BF16", [v, h])}
    for n in range(36):
        p = f"model.layers.{n}."
        tensors |= {p + "self_attn.q_proj.weight": ("BF16", [4096, h]), p + "self_attn.q_proj.bias": ("BF16", [4096]),
                    p + "self_attn.k_proj.weight": ("BF16", [512, h]), p + "self_attn.k_proj.bias": ("BF16", [512]),
                    p + "self_attn.v_proj.weight": ("BF16", [512, h]), p + "self_attn.v_proj.bias": ("BF16", [512]),
                    p + "self_attn.o_proj.weight": ("BF16", [h, 4096]), p + "self_attn.o_proj.bias": ("BF16", [h]),
                    p + "self_attn.sinks": ("BF16", [64]),
                    p + "mlp.router.weight": ("BF16", [e, h]), p + "mlp.router.bias": ("BF16", [e]),
                    p + "mlp.experts.gate_up_proj_blocks": ("U8", [e, 2 * h, h // 32, 16]),
                    p + "mlp.experts.gate_up_proj_scales": ("U8", [e, 2 * h, h // 32]),
                    p + "mlp.experts.gate_up_proj_bias": ("BF16", [e, 2 * h]),
                    p + "mlp.experts.down_proj_blocks": ("U8", [e, h, h // 32, 16]),
                    p + "mlp.experts.down_proj_scales": ("U8", [e, h, h // 32]),
                    p + "mlp.experts.down_proj_bias": ("BF16", [e, h]),
                    p + "input_layernorm.weight": ("BF16", [h]), p + "post_attention_layernorm.weight": ("BF16", [h])}
    return config, tensors | {"model.norm.weight": ("BF16", [h]), "lm_head.weight": ("BF16", [v, h])}


def deepseek_v2_lite_fp8() -> tuple[dict[str, Any], Tensors]:
    """DeepSeek-V2-Lite's shapes, FP8 with block scales, plus one MTP layer (index 27)."""
    config = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 2048,
              "intermediate_size": 10944, "moe_intermediate_size": 1408, "num_hidden_layers": 27,
              "num_attention_heads": 16, "num_key_value_heads": 16, "kv_lora_rank": 512, "q_lora_rank": None,
              "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "n_routed_experts": 64,
              "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1, "vocab_size": 102400,
              "max_position_embeddings": 163840, "num_nextn_predict_layers": 1,
              "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096},
              "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                      "weight_block_size": [128, 128]}}
    h, v = 2048, 102400
    tensors: Tensors = {"model.embed_tokens.weight": ("BF16", [v, h])}
    for n in range(28):
        p = f"model.layers.{n}."
        a = p + "self_attn."
        tensors |= fp8_linear(a + "q_proj", 16 * 192, h) | fp8_linear(a + "kv_a_proj_with_mqa", 576, h)
        tensors |= fp8_linear(a + "kv_b_proj", 16 * 256, 512) | fp8_linear(a + "o_proj", h, 16 * 128)
        tensors |= {p + "self_attn.kv_a_layernorm.weight": ("BF16", [512]), p + "input_layernorm.weight": ("BF16", [h]),
                    p + "post_attention_layernorm.weight": ("BF16", [h])}
        tensors |= ffn(p + "mlp", 10944, h) if n == 0 else moe_layer(p + "mlp", h)
    p = "model.layers.27."
    tensors |= {p + "eh_proj.weight": ("BF16", [h, 2 * h]), p + "enorm.weight": ("BF16", [h]),
                p + "hnorm.weight": ("BF16", [h]), p + "shared_head.norm.weight": ("BF16", [h])}
    return config, tensors | {"model.norm.weight": ("BF16", [h]), "lm_head.weight": ("BF16", [v, h])}


def fp8_linear(prefix: str, rows: int, cols: int) -> Tensors:
    """An FP8 weight and its F32 scale per 128x128 block (DeepSeek-V3's weight_scale_inv)."""
    return {f"{prefix}.weight": ("F8_E4M3", [rows, cols]),
            f"{prefix}.weight_scale_inv": ("F32", [math.ceil(rows / 128), math.ceil(cols / 128)])}


def ffn(prefix: str, inner: int, h: int) -> Tensors:
    """A gated FFN of FP8 linears."""
    return (fp8_linear(f"{prefix}.gate_proj", inner, h) | fp8_linear(f"{prefix}.up_proj", inner, h)
            | fp8_linear(f"{prefix}.down_proj", h, inner))


def moe_layer(prefix: str, h: int) -> Tensors:
    """64 routed experts, 2 shared (one FFN of twice the width), and the router."""
    tensors: Tensors = {f"{prefix}.gate.weight": ("BF16", [64, h])}
    for e in range(64):
        tensors |= ffn(f"{prefix}.experts.{e}", 1408, h)
    return tensors | ffn(f"{prefix}.shared_experts", 2 * 1408, h)


# --- packing into files -------------------------------------------------------


def tensor_bytes(dtype: str, shape: list[int]) -> int:
    """Bytes a tensor takes on disk."""
    return math.prod(shape) * BITS[dtype] // 8


def safetensors_file(tensors: Tensors) -> FakeFile:
    """A safetensors file: 8-byte little-endian header length, the JSON header, then the data (zeros)."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = tensor_bytes(dtype, shape)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    head = struct.pack("<Q", len(raw)) + raw
    return FakeFile(head, len(head) + offset)


def make_repo(config: dict[str, Any], tensors: Tensors, shards: int = 1, **repo: Any) -> FakeRepo:
    """A FakeRepo holding config.json and the tensors split over `shards` files (with an index when > 1)."""
    files = {"config.json": small(json.dumps(config))}
    if shards == 1:
        files["model.safetensors"] = safetensors_file(tensors)
        return FakeRepo(files, **repo)
    names = list(tensors)
    per = math.ceil(len(names) / shards)
    weight_map = {}
    for k in range(shards):
        shard = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: tensors[n] for n in names[k * per:(k + 1) * per]}
        files[shard] = safetensors_file(part)
        weight_map |= dict.fromkeys(part, shard)
    total = sum(tensor_bytes(*t) for t in tensors.values())
    files["model.safetensors.index.json"] = small(json.dumps({"metadata": {"total_size": total},
                                                              "weight_map": weight_map}))
    return FakeRepo(files, **repo)
