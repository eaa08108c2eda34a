"""Bits per weight by format.

`nominal_bits` is what the format is called ("4 bits"): the article's ceiling uses it
(18B active at 4 bits = 9 GB). `stored_bits` adds the block scales a real file carries:
NVFP4 has one FP8 scale per 16 values (4 + 8/16 = 4.5), MXFP4 one E8M0 scale per 32
(4 + 8/32 = 4.25) (OCP MX spec; NVIDIA NVFP4 blog); "nvfp4" is an NVFP4 build whose
tooling the catalog does not record; AWQ/GPTQ a 16-bit scale and zero per group of 128
(4 + 32/128 = 4.25); INT4 W4A16 as the Kimi K2 family ships it (compressed-tensors
pack-quantized, group 32) a 16-bit scale per 32 values (4 + 16/32 = 4.5).

GGUF file types are llama-quantize's mixes: most tensors in the named block type, a few
(output, token embeddings, some attention and FFN-down tensors) raised to a larger one. Their
stored bits are the whole-file averages llama.cpp's quantize README tabulates for
Llama-3.1-8B (Q4_K_S 4.6672, Q4_K_M 4.8944, Q5_K_M 5.7036, Q6_K 6.5633, Q8_0 8.5008,
IQ4_XS 4.4597). Q4_0 is not in that table, so it counts its block as ggml-common.h defines
it: one fp16 scale per 32 4-bit values, 18 bytes per 32 = 4.5. Unsloth's dynamic quants
(UD-*) choose a type per layer and per model (unsloth's Dynamic 2.0 docs), so no figure
holds for the format: a UD build states its size or its bits per weight, and the figure
here, the block of the type it is named for (ggml-common.h: Q2_K 2.625, Q3_K 3.4375,
Q4_K 4.5, Q5_K 5.5, Q6_K 6.5625, Q8_0 8.5, IQ1_S 1.5625, IQ1_M 1.75, IQ2_XXS 2.0625,
IQ3_XXS 3.0625), is its floor and is never used for a size.
"""

from __future__ import annotations

from sparkadvisor.core.records import record


@record(kw_only=False)
class FormatInfo:
    """How a weight format stores a parameter."""

    label: str
    """Name as people write it."""
    nominal_bits: float
    """Bits per weight the format is named for."""
    stored_bits: float
    """Bits per weight including block scales."""
    low_precision_compute: str
    """Precision of the matrix units prefill can use with it: fp4, fp8, int8 or bf16."""
    mix_varies_by_model: bool = False
    """True when the format picks a type per layer and per model, so a build must state its size."""


FORMATS: dict[str, FormatInfo] = {
    "nvfp4-compressed-tensors": FormatInfo("NVFP4 (compressed-tensors W4A4)", 4, 4.5, "fp4"),
    "nvfp4-modelopt": FormatInfo("NVFP4 (NVIDIA ModelOpt)", 4, 4.5, "fp4"),
    "nvfp4": FormatInfo("NVFP4", 4, 4.5, "fp4"),
    "mxfp4": FormatInfo("MXFP4", 4, 4.25, "bf16"),
    "fp8": FormatInfo("FP8", 8, 8, "fp8"),
    "bf16": FormatInfo("BF16", 16, 16, "bf16"),
    "int8": FormatInfo("INT8 W8A8", 8, 8, "int8"),
    "awq-int4": FormatInfo("AWQ INT4", 4, 4.25, "bf16"),
    "gptq-int4": FormatInfo("GPTQ INT4", 4, 4.25, "bf16"),
    "int4-w4a16": FormatInfo("INT4 W4A16 (compressed-tensors, group 32)", 4, 4.5, "bf16"),
    "gguf-q4_0": FormatInfo("GGUF Q4_0", 4.5, 4.5, "bf16"),
    "gguf-q4_k_s": FormatInfo("GGUF Q4_K_S", 4.6672, 4.6672, "bf16"),
    "gguf-q4_k_m": FormatInfo("GGUF Q4_K_M", 4.8944, 4.8944, "bf16"),
    "gguf-iq4_xs": FormatInfo("GGUF IQ4_XS", 4.4597, 4.4597, "bf16"),
    "gguf-q5_k_m": FormatInfo("GGUF Q5_K_M", 5.7036, 5.7036, "bf16"),
    "gguf-q6_k": FormatInfo("GGUF Q6_K", 6.5633, 6.5633, "bf16"),
    "gguf-q8_0": FormatInfo("GGUF Q8_0", 8.5008, 8.5008, "bf16"),
    "gguf-ud-iq1_s": FormatInfo("GGUF UD-IQ1_S (unsloth dynamic)", 1.5625, 1.5625, "bf16", True),
    "gguf-ud-iq1_m": FormatInfo("GGUF UD-IQ1_M (unsloth dynamic)", 1.75, 1.75, "bf16", True),
    "gguf-ud-iq2_xxs": FormatInfo("GGUF UD-IQ2_XXS (unsloth dynamic)", 2.0625, 2.0625, "bf16", True),
    "gguf-ud-iq3_xxs": FormatInfo("GGUF UD-IQ3_XXS (unsloth dynamic)", 3.0625, 3.0625, "bf16", True),
    "gguf-ud-q2_k_xl": FormatInfo("GGUF UD-Q2_K_XL (unsloth dynamic)", 2.625, 2.625, "bf16", True),
    "gguf-ud-q3_k_xl": FormatInfo("GGUF UD-Q3_K_XL (unsloth dynamic)", 3.4375, 3.4375, "bf16", True),
    "gguf-ud-q4_k_xl": FormatInfo("GGUF UD-Q4_K_XL (unsloth dynamic)", 4.5, 4.5, "bf16", True),
    "gguf-ud-q5_k_xl": FormatInfo("GGUF UD-Q5_K_XL (unsloth dynamic)", 5.5, 5.5, "bf16", True),
    "gguf-ud-q6_k_xl": FormatInfo("GGUF UD-Q6_K_XL (unsloth dynamic)", 6.5625, 6.5625, "bf16", True),
    "gguf-ud-q8_k_xl": FormatInfo("GGUF UD-Q8_K_XL (unsloth dynamic)", 8.5, 8.5, "bf16", True),
    "exl3": FormatInfo("EXL3", 4, 4, "bf16"),
}


KV_DTYPE_BYTES: dict[str, float] = {
    "auto": 2,
    "bfloat16": 2,
    "float16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_ds_mla": 1,
    "nvfp4": 0.5625,
}
"""Bytes per cached element by vLLM --kv-cache-dtype ("auto" follows the bf16 model dtype)."""


def kv_dtype_bytes(kv_cache_dtype: str) -> float:
    """Bytes per KV element; unknown names count as bf16."""
    return KV_DTYPE_BYTES.get(kv_cache_dtype, 2)
