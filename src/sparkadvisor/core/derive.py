"""A model's facts from its config.json and safetensors headers, without the weights. Pure.

Weight bytes come from the headers (dtype x shape of every tensor), so packed FP4/INT4
tensors and their scales count as stored, not as parameters. Parameters count logical
weights: a U8/I32 container of 4-bit values holds 2/8 of them, scales hold none.
MoE: routed experts are tensors under `.experts.`, shared ones under `shared_expert`;
active = the rest + shared + routed x experts_per_token / routed_experts, less the input
embedding table when an LM head of its own is stored (a token reads one row of it; this
is how OpenAI counts gpt-oss-120b's 5.13B active). A dense model's active = total. MTP layers
(beyond num_hidden_layers, or under `mtp.`) and per-layer embedding tables are set
apart, as the catalog schema counts them. What the files do not say is listed in
`unknown`; nothing is guessed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from sparkadvisor.core.formats import FORMATS
from sparkadvisor.core.kv import kv_shape
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Attention, Context, Format, LinearAttention, MtpHead, Params, TokenTable

DTYPE_BITS: dict[str, int] = {
    "F64": 64, "I64": 64, "U64": 64, "F32": 32, "I32": 32, "U32": 32, "F16": 16, "BF16": 16, "I16": 16,
    "U16": 16, "F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8, "I8": 8, "U8": 8, "BOOL": 8, "F6_E2M3": 6,
    "F6_E3M2": 6, "F4": 4,
}
"""Bits per stored element of each safetensors dtype (safetensors format spec)."""

INTEGER_CONTAINERS = ("U8", "I8", "I32", "U32", "I16", "U16")
"""Integer dtypes that quantized checkpoints pack sub-byte weights into."""

AUX_SUFFIXES = ("_scales", "weight_scale", "weight_scale_2", "weight_scale_inv", "weight_global_scale",
                "input_scale", "input_global_scale", "weight_zero_point", "qzeros", "scales", "g_idx",
                "weight_shape", "k_scale", "v_scale", "q_scale")
"""Tensor names ending so are scales, zero points or shapes: bytes, but no parameters."""

PACKED_SUFFIXES = ("weight", "weight_packed", "qweight", "_blocks")
"""Tensor names ending so hold weights, packed when their dtype is an integer container."""

_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")
_INPUT_EMBEDDING = re.compile(r"(?:^|\.)(?:embed_tokens|wte|word_embeddings|tok_embeddings)\.weight$")
_OUTPUT_HEAD = re.compile(r"(?:^|\.)(?:lm_head|output)\.weight$")


class DeriveError(ValueError):
    """config.json or a header holds something that cannot be a model's description."""


@record(kw_only=False)
class TensorMeta:
    """One tensor as a safetensors header describes it."""

    dtype: str
    shape: tuple[int, ...]

    @property
    def elements(self) -> int:
        """Stored elements (containers, for packed tensors)."""
        return math.prod(self.shape)

    @property
    def bytes(self) -> int:
        """Bytes on disk: elements x bits of the dtype, rounded up to whole bytes."""
        return -(-self.elements * DTYPE_BITS[self.dtype] // 8)


@record(kw_only=False)
class Derived:
    """Everything an import learns about a repo, and what it could not learn."""

    weight_bytes: int
    """All tensors of all shards, MTP and tables included."""
    bytes_by_dtype: dict[str, int]
    """Weight bytes split by safetensors dtype."""
    format: Format | None
    """The catalog format, or None when quantization_config names none the catalog knows."""
    quantizer: str
    """The quantization as config.json states it, in words."""
    total_params: int
    """Transformer parameters: routed + shared + the rest (MTP and tables apart)."""
    active_params: int | None
    """Parameters read per token; None when an MoE's config lacks the expert counts."""
    routed_experts: int | None
    experts_per_token: int | None
    mtp_params: int
    mtp_bytes: int
    mtp_layers: int | None
    table_params: int
    table_bytes: int
    attention: Attention | None
    context: Context | None
    family: str
    modalities: tuple[str, ...]
    unknown: tuple[str, ...]
    """Facts the files do not give, in words a reader can check."""

    @property
    def kv_bytes_per_token(self) -> float | None:
        """KV bytes one token costs in the full-attention layers, bf16, one rank."""
        shape = kv_shape(self.attention, "auto", 1, 1) if self.attention else None
        return shape.bytes_per_token if shape else None

    def params(self, source: str) -> Params:
        """The catalog's parameter table."""
        return Params(total_b=self.total_params / 1e9, source=source, routed_experts=self.routed_experts,
                      experts_per_token=self.experts_per_token,
                      active_b=None if self.active_params is None else self.active_params / 1e9)

    def mtp(self, source: str) -> MtpHead | None:
        """The catalog's MTP table, when the model ships MTP layers."""
        has_mtp = bool(self.mtp_layers or self.mtp_params)
        return MtpHead(layers=self.mtp_layers or None, params_b=self.mtp_params / 1e9 or None,
                       source=source) if has_mtp else None

    def tables(self, source: str) -> list[TokenTable]:
        """Per-layer embedding tables (PLE), when present."""
        return [TokenTable(kind="ple", params_b=self.table_params / 1e9, source=source)] if self.table_params else []


def derive(config: Mapping[str, Any], tensors: Mapping[str, TensorMeta], source: str) -> Derived:
    """Facts of a model from config.json and its tensors; `source` is cited by every table."""
    if not tensors:
        raise DeriveError("the safetensors headers list no tensors")
    _check_dtypes(tensors)
    text = _text_config(config)
    unknown: list[str] = []
    fmt, quantizer, weight_bits = detect_format(config, tensors)
    if fmt is None:
        unknown.append(f"format ({quantizer})")
    groups = _group_params(text, tensors, weight_bits)
    moe = _moe(text, tensors, groups, unknown)
    attention = attention_facts(text, source, unknown)
    by_dtype: dict[str, int] = {}
    for meta in tensors.values():
        by_dtype[meta.dtype] = by_dtype.get(meta.dtype, 0) + meta.bytes
    mtp_layers = _int(text, "num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_layers")
    return Derived(
        weight_bytes=sum(by_dtype.values()), bytes_by_dtype=dict(sorted(by_dtype.items())), format=fmt,
        quantizer=quantizer, total_params=groups["routed"] + groups["shared"] + groups["rest"],
        active_params=moe[2], routed_experts=moe[0], experts_per_token=moe[1],
        mtp_params=groups["mtp"], mtp_bytes=groups["mtp_bytes"],
        mtp_layers=mtp_layers or (_mtp_layer_count(text, tensors) or None),
        table_params=groups["table"], table_bytes=groups["table_bytes"], attention=attention,
        context=_context(text, source, unknown), family=str(config.get("model_type") or "unknown"),
        modalities=("text", "image") if "vision_config" in config else ("text",), unknown=tuple(unknown))


def _check_dtypes(tensors: Mapping[str, TensorMeta]) -> None:
    for name, meta in tensors.items():
        if meta.dtype not in DTYPE_BITS:
            raise DeriveError(f"tensor {name!r} has dtype {meta.dtype!r}, which safetensors does not define "
                              f"(valid: {', '.join(DTYPE_BITS)})")
        if any(not isinstance(d, int) or isinstance(d, bool) or d < 0 for d in meta.shape):
            raise DeriveError(f"tensor {name!r} has shape {list(meta.shape)!r}; dimensions must be whole numbers >= 0")


def _text_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The language model's settings: text_config (or llm_config) over the top level, as VLMs nest them."""
    nested = config.get("text_config") or config.get("llm_config") or {}
    if not isinstance(nested, Mapping):
        raise DeriveError(f"text_config should be a table of settings (got {nested!r})")
    return {**config, **nested}


def _int(config: Mapping[str, Any], *keys: str) -> int | None:
    """The first of `keys` present, as a whole number >= 0; a wrong type is a DeriveError."""
    for key in (k for k in keys if config.get(k) is not None):
        value = config[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise DeriveError(f"config.json: {key} should be a whole number >= 0 (got {value!r})")
        return value
    return None


# --- format -------------------------------------------------------------------


def detect_format(config: Mapping[str, Any], tensors: Mapping[str, TensorMeta]) -> tuple[Format | None, str, int]:
    """(catalog format or None, the quantization in words, bits per weight) from quantization_config."""
    qc = config.get("quantization_config") or config.get("compression_config")
    if qc is None:
        return _format_from_dtypes(tensors)
    if not isinstance(qc, Mapping):
        raise DeriveError(f"config.json: quantization_config should be a table (got {qc!r})")
    method = str(qc.get("quant_method", "")).lower()
    if method == "compressed-tensors":
        return _compressed_tensors(qc)
    if method == "modelopt":
        algo = str(qc.get("quant_algo") or (qc.get("quantization") or {}).get("quant_algo") or "").upper()
        found = {"NVFP4": "nvfp4-modelopt", "FP8": "fp8", "MXFP4": "mxfp4", "W4A16_AWQ": "awq-int4"}.get(algo)
        return _known(found, f"NVIDIA ModelOpt ({algo or 'no quant_algo'})")
    if method in ("mxfp4", "fp8", "fbgemm_fp8"):
        return _known("mxfp4" if method == "mxfp4" else "fp8", f"quant_method {method}")
    if method in ("gptq", "awq"):
        bits = qc.get("bits", qc.get("w_bit"))
        found = {4: f"{method}-int4", 8: "int8"}.get(bits) if isinstance(bits, int) else None
        return _known(found, f"{method.upper()} {bits}-bit")
    return None, f"quant_method {method or 'missing'!r} is not one the catalog knows", 16


def _known(found: str | None, words: str) -> tuple[Format | None, str, int]:
    if found is None:
        return None, f"{words} is not a format the catalog knows", 16
    return found, words, int(FORMATS[found].nominal_bits)  # type: ignore[return-value]


def _compressed_tensors(qc: Mapping[str, Any]) -> tuple[Format | None, str, int]:
    schemes = [g.get("weights") or {} for g in (qc.get("config_groups") or {}).values() if isinstance(g, Mapping)]
    schemes = [s for s in schemes if isinstance(s, Mapping) and isinstance(s.get("num_bits"), int)]
    if not schemes:
        return None, "compressed-tensors without config_groups weights", 16
    low = min(schemes, key=lambda s: s["num_bits"])
    kind = str(low.get("type", "int"))
    words = f"compressed-tensors ({qc.get('format', kind)}, {low['num_bits']}-bit {kind})"
    found = {(4, "float"): "nvfp4-compressed-tensors", (4, "int"): "gptq-int4", (8, "float"): "fp8",
             (8, "int"): "int8"}.get((low["num_bits"], kind))
    return _known(found, words)


def _format_from_dtypes(tensors: Mapping[str, TensorMeta]) -> tuple[Format | None, str, int]:
    """No quantization_config: the dtype holding most weight bytes names the format."""
    by_dtype: dict[str, int] = {}
    for name, meta in tensors.items():
        if not name.endswith(AUX_SUFFIXES):
            by_dtype[meta.dtype] = by_dtype.get(meta.dtype, 0) + meta.bytes
    main = max(by_dtype, key=by_dtype.__getitem__)
    found = {"BF16": "bf16", "F16": "bf16", "F8_E4M3": "fp8", "I8": "int8"}.get(main)
    return _known(found, f"unquantized {main} weights")


# --- parameters ---------------------------------------------------------------


def tensor_params(name: str, meta: TensorMeta, weight_bits: int) -> int:
    """Logical parameters a tensor holds: none for scales, container bits / weight bits per packed element."""
    if name.endswith(AUX_SUFFIXES):
        return 0
    bits = DTYPE_BITS[meta.dtype]
    if meta.dtype in INTEGER_CONTAINERS and name.endswith(PACKED_SUFFIXES) and weight_bits < bits:
        return meta.elements * bits // weight_bits
    return meta.elements


def _role(name: str, layers: int | None) -> str:
    match = _LAYER.search(name)
    if name.startswith("mtp.") or ".mtp." in name or (match and layers is not None and int(match.group(1)) >= layers):
        return "mtp"
    if "embed_tokens_per_layer" in name:
        return "table"
    if "shared_expert" in name:
        return "shared"
    return "routed" if ".experts." in name else "rest"


def _group_params(text: Mapping[str, Any], tensors: Mapping[str, TensorMeta], weight_bits: int) -> dict[str, int]:
    layers = _int(text, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
    groups = dict.fromkeys(("routed", "shared", "rest", "mtp", "table", "mtp_bytes", "table_bytes", "lookup"), 0)
    untied = any(_OUTPUT_HEAD.search(name) for name in tensors)
    for name, meta in tensors.items():
        role = _role(name, layers)
        params = tensor_params(name, meta, weight_bits)
        groups[role] += params
        if role in ("mtp", "table"):
            groups[f"{role}_bytes"] += meta.bytes
        if role == "rest" and untied and _INPUT_EMBEDDING.search(name):
            groups["lookup"] += params
    if groups["rest"] + groups["routed"] + groups["shared"] == 0:
        raise DeriveError("the safetensors headers hold no transformer weights outside MTP layers and tables")
    return groups


def _moe(text: Mapping[str, Any], tensors: Mapping[str, TensorMeta], groups: Mapping[str, int],
         unknown: list[str]) -> tuple[int | None, int | None, int | None]:
    """(routed experts per layer, experts per token, active parameters)."""
    if groups["routed"] == 0:
        return None, None, groups["rest"] + groups["shared"]
    dense = groups["rest"] - groups["lookup"] + groups["shared"]
    experts = _int(text, "n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts", "n_experts")
    experts = experts or _experts_in_names(tensors)
    per_token = _int(text, "num_experts_per_tok", "experts_per_token", "num_experts_per_token", "moe_k", "moe_topk")
    if not experts or not per_token:
        unknown.append("active parameters (config.json does not give num_experts_per_tok and the expert count)")
        return experts or None, per_token or None, None
    return experts, per_token, dense + groups["routed"] * per_token // experts


def _experts_in_names(tensors: Mapping[str, TensorMeta]) -> int | None:
    indices = {int(m.group(1)) for name in tensors if (m := re.search(r"\.experts\.(\d+)\.", name))}
    return max(indices) + 1 if indices else None


def _mtp_layer_count(text: Mapping[str, Any], tensors: Mapping[str, TensorMeta]) -> int:
    layers = _int(text, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
    return len({m.group(1) for name in tensors if _role(name, layers) == "mtp" and (m := _LAYER.search(name))})


# --- attention and context ----------------------------------------------------


def attention_facts(text: Mapping[str, Any], source: str, unknown: list[str]) -> Attention | None:
    """The attention facts KV needs, or None (and a line in `unknown`) when config.json lacks them."""
    layers = _int(text, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
    heads = _int(text, "num_attention_heads", "n_head", "num_heads")
    if not layers or not heads:
        unknown.append("attention (config.json gives no num_hidden_layers or num_attention_heads)")
        return None
    hidden = _int(text, "hidden_size", "n_embd", "d_model")
    facts: dict[str, Any] = {"layers": layers, "heads": heads, "hidden_size": hidden or None, "source": source}
    if text.get("kv_lora_rank"):
        facts.update(design="mla", kv_lora_rank=_int(text, "kv_lora_rank"),
                     qk_rope_head_dim=_int(text, "qk_rope_head_dim"), head_dim=_int(text, "v_head_dim") or None)
    else:
        kv_heads = _int(text, "num_key_value_heads", "num_kv_heads") or heads
        head_dim = _int(text, "head_dim") or (hidden // heads if hidden and hidden % heads == 0 else None)
        if head_dim is None:
            unknown.append("head dimension (no head_dim, and hidden_size / heads is not whole)")
        facts.update(design="gqa" if kv_heads < heads else "mha", kv_heads=kv_heads, head_dim=head_dim)
    facts.update(indexer_head_dim=_int(text, "index_head_dim") or None, sparse_topk=_int(text, "index_topk") or None,
                 indexer_heads=_int(text, "index_n_heads") or None, indexer_pool=_int(text, "index_kpool") or 1)
    layer_kinds = _layer_kinds(text, layers, unknown)
    if layer_kinds is None:
        return None
    sliding, linear = layer_kinds
    window = _int(text, "sliding_window") if sliding else None
    facts.update(sliding_layers=sliding, sliding_window=window or None)
    if linear:
        facts["linear"] = _linear(text, linear, source, unknown)
        if facts["linear"] is None:
            return None
    return Attention(**facts)


def _layer_kinds(text: Mapping[str, Any], layers: int, unknown: list[str]) -> tuple[int, int] | None:
    """(sliding-window layers, linear-attention layers), from layer_types or the pattern keys."""
    types = text.get("layer_types")
    if isinstance(types, list):
        strange = sorted({str(t) for t in types} - {"full_attention", "sliding_attention", "linear_attention"})
        if strange:
            unknown.append(f"attention (layer_types names {', '.join(strange)}, which sparkadvisor does not model)")
            return None
        return types.count("sliding_attention"), types.count("linear_attention")
    linear = 0
    if interval := _int(text, "full_attention_interval"):
        linear = layers - layers // interval
    if isinstance(text.get("linear_attn_config"), Mapping):
        linear = len(text["linear_attn_config"].get("kda_layers") or [])
    return _sliding_count(text, layers, unknown), linear


def _sliding_count(text: Mapping[str, Any], layers: int, unknown: list[str]) -> int:
    window = _int(text, "sliding_window")
    if not window or text.get("use_sliding_window") is False:
        return 0
    if pattern := _int(text, "sliding_window_pattern"):
        return layers - layers // pattern  # Gemma 3: every pattern-th layer is global
    if text.get("use_sliding_window") and (first := _int(text, "max_window_layers")) is not None:
        return max(0, layers - first)  # Qwen2: layers from max_window_layers on slide
    if text.get("model_type") in ("mistral", "mixtral"):
        return layers  # transformers' Mistral applies sliding_window to every layer
    unknown.append(f"sliding-window layers (sliding_window={window} without layer_types or a pattern; "
                   "every layer is counted as full attention)")
    return 0


_DELTANET_KEYS = {"num_key_heads": "linear_num_key_heads", "num_value_heads": "linear_num_value_heads",
                  "key_head_dim": "linear_key_head_dim", "value_head_dim": "linear_value_head_dim",
                  "conv_kernel": "linear_conv_kernel_dim"}
_KDA_KEYS = {"num_key_heads": "num_heads", "num_value_heads": "num_heads", "key_head_dim": "head_dim",
             "value_head_dim": "head_dim", "conv_kernel": "short_conv_kernel_size"}


def _linear(text: Mapping[str, Any], layers: int, source: str, unknown: list[str]) -> LinearAttention | None:
    """Gated DeltaNet (Qwen3-Next keys) or KDA (Kimi's linear_attn_config) dimensions."""
    kda = text.get("linear_attn_config")
    table, keys = (kda, _KDA_KEYS) if isinstance(kda, Mapping) else (text, _DELTANET_KEYS)
    dims = {field: table.get(key) for field, key in keys.items()}
    missing = sorted({keys[f] for f, v in dims.items() if not isinstance(v, int) or isinstance(v, bool) or v < 1})
    if missing:
        unknown.append(f"attention ({layers} linear-attention layers, but config.json lacks {', '.join(missing)})")
        return None
    return LinearAttention(kind="kda" if table is kda else "gated-deltanet", layers=layers, source=source,
                           **dims)  # type: ignore[arg-type]  # each checked to be an int >= 1 above


def _context(text: Mapping[str, Any], source: str, unknown: list[str]) -> Context | None:
    native = _int(text, "max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
    if not native:
        unknown.append("context length (config.json gives no max_position_embeddings)")
        return None
    rope = text.get("rope_scaling") or text.get("rope_parameters") or {}
    extended = None
    if isinstance(rope, Mapping) and isinstance(rope.get("factor"), (int, float)):
        original = rope.get("original_max_position_embeddings")
        if isinstance(original, int) and original * rope["factor"] > native:
            extended = int(original * rope["factor"])
    return Context(native_tokens=native, extended_tokens=extended, source=source)
