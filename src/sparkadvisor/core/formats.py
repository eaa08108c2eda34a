"""Bits per weight by format.

`nominal_bits` is what the format is called ("4 bits"): the article's ceiling uses it
(18B active at 4 bits = 9 GB). `stored_bits` adds the block scales a real file carries:
NVFP4 has one FP8 scale per 16 values (4 + 8/16 = 4.5), MXFP4 one E8M0 scale per 32
(4 + 8/32 = 4.25) (OCP MX spec; NVIDIA NVFP4 blog); "nvfp4" is an NVFP4 build whose
tooling the catalog does not record; AWQ/GPTQ a 16-bit scale and zero per group of 128
(4 + 32/128 = 4.25); INT4 W4A16 as the Kimi K2 family ships it (compressed-tensors
pack-quantized, group 32) a 16-bit scale per 32 values (4 + 16/32 = 4.5); GGUF figures are llama.cpp's bits per weight
(ggml-quants: Q4_K 4.5, Q5_K 5.5, Q6_K 6.5625, Q8_0 8.5; Q4_K_M mixes Q4_K and Q6_K
tensors, about 4.85).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
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
    "gguf-q4_k_m": FormatInfo("GGUF Q4_K_M", 4.85, 4.85, "bf16"),
    "gguf-q5_k_m": FormatInfo("GGUF Q5_K_M", 5.5, 5.5, "bf16"),
    "gguf-q6_k": FormatInfo("GGUF Q6_K", 6.5625, 6.5625, "bf16"),
    "gguf-q8_0": FormatInfo("GGUF Q8_0", 8.5, 8.5, "bf16"),
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
