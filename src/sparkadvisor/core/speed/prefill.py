"""Prefill is compute-bound: 2 x (dense + expert) parameters per prompt token, the experts at
their own (lower) efficiency, at the effective rate of the tensor path the engine's GEMMs take
for the build (`prefill_precision`: llama.cpp's quantized matmuls are int8 whatever the GGUF
type; vLLM's NVFP4 runs FP4 CUTLASS kernels, its W4A16 formats bf16 Marlin), plus attention
that grows with the context the token attends to: its FLOPs at their own rate, and the cached
K/V it streams (a flash-attention kernel reads the whole cache once per tile of queries, so
each prompt token pays the attended K/V bytes over the tile), plus the link's share, plus, where
the layers are split into pipeline stages, the stages' wait while each batch fills and drains them.
"""

from __future__ import annotations

from functools import lru_cache

from sparkadvisor.core.formats import FORMATS
from sparkadvisor.core.kv import shape_for
from sparkadvisor.core.memo import once
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Attention
from sparkadvisor.core.speed.chunks import GGML_ENGINES, launch_flag
from sparkadvisor.core.speed.constants import ACTIVATION_BYTES, SpeedConstants
from sparkadvisor.core.speed.decode import experts_touched

GGML_FLOAT_FORMATS = frozenset({"bf16", "fp16", "f16", "f32"})
"""Weight formats ggml multiplies with cuBLAS in floating point rather than with its quantized kernels."""


@record(kw_only=False)
class PrefillInputs:
    """What prefilling one prompt token computes, across the cluster."""

    nodes: int
    dense_params: float
    """Parameters every token computes with (attention projections, shared experts, dense MLPs)."""
    expert_params: float
    """Routed-expert parameters each token computes with (0 for a dense model)."""
    precision: str
    """Compute precision of the GEMMs (fp4, fp8, int8, bf16)."""
    attention: Attention | None
    attended_tokens: float
    """Tokens the average prompt token attends to."""
    kv_gb: float = 0.0
    """GB of cached K/V (or latent) those tokens occupy on one rank: what the attention kernel
    streams for each tile of queries."""
    weight_gb: float = 0.0
    """GB of weights each node streams per prompt token: once per chunk, the dense weights and the
    routed experts the chunk's tokens touch (`chunk_read_share`)."""
    chunk_tokens: int | None = None
    """Prompt tokens computed per forward pass (None: unknown, the weight stream is not counted)."""
    expert_precision: str | None = None
    """The routed experts' tensor path when the MoE backend differs from the dense GEMMs' (vLLM
    `--moe-backend marlin`: W4A16, bf16 MMA); None: `precision`."""
    ubatches: int = 0
    """Ubatches one batch puts through the pipeline's stages together (`pipeline_ubatches`); 0 where nothing
    pipelines (the nodes share every layer, TP, or there is one node)."""
    stages: int = 1
    """Pipeline stages each ubatch passes in turn: --pipeline-parallel-size, a layer split's nodes."""

    @property
    def stage_factor(self) -> float:
        """What a pipeline multiplies a stage's time by: 1 + (stages - 1) / ubatches (1 without)."""
        return 1 + (self.stages - 1) / self.ubatches if self.ubatches else 1.0

    def gflop_by_precision(self, expert_factor: float) -> dict[str, float]:
        """Dense-equivalent GFLOP of GEMM per node per prompt token, by tensor path."""
        out = {self.precision: 2 * self.dense_params / self.nodes / 1e9}
        experts = self.expert_precision or self.precision
        out[experts] = out.get(experts, 0.0) + 2 * expert_factor * self.expert_params / self.nodes / 1e9
        return out


@lru_cache(maxsize=256)
def prefill_precision(weight_format: str, engine: str = "vllm") -> str:
    """The precision of the tensor instructions an engine's prefill GEMMs run for a weight format.

    ggml (llama.cpp, Ollama): every quantized type, MXFP4 included, goes to MMQ on any GPU with
    Turing's int8 MMA, at every batch size (mmq.cu, ggml_cuda_should_use_mmq): the weights'
    blocks are unpacked to int8 and multiplied with int8 MMA against activations quantized to
    q8_1, so the precision is int8 whatever the GGUF type. (Native FP4 MMA for MXFP4/NVFP4 on
    Blackwell came with llama.cpp PR #17906 in December 2025, after the builds measured here;
    until a measurement of it exists, int8 is the measured path.) Float weights go to cuBLAS.
    Other engines: the format's own tensor path (formats.FormatInfo.low_precision_compute):
    NVFP4 -> FP4 CUTLASS/FlashInfer kernels (sm_120 family, vLLM PR #38423); FP8 -> FP8 scaled
    GEMM; W4A16 formats (AWQ, GPTQ, MXFP4 under vLLM's Marlin MoE) -> bf16 after dequantizing
    in registers."""
    if engine in GGML_ENGINES and weight_format not in GGML_FLOAT_FORMATS:
        return "int8"
    info = FORMATS.get(weight_format)
    return (info.low_precision_compute if info else None) or "bf16"


def expert_precision(weight_format: str, engine: str, extra_args: tuple[str, ...]) -> str | None:
    """The routed experts' tensor path when the launch flags send them elsewhere than the dense
    GEMMs: vLLM's `--moe-backend marlin` runs them W4A16 (dequantized in registers, bf16 MMA)
    whatever the checkpoint's format. None: the same path as the dense GEMMs."""
    if engine == "vllm" and launch_flag(extra_args, ("--moe-backend",)) == "marlin":
        return "bf16"
    return None


def prefill_inputs(nodes: int, active_params: float, total_params: float, routed_experts: int | None,
                   experts_per_token: int | None, weight_format: str, attention: Attention | None,
                   attended_tokens: float, *, engine: str, kv_cache_dtype: str = "auto",
                   weight_bytes: float = 0.0, chunk_tokens: int | None = None,
                   extra_args: tuple[str, ...] = (), ubatches: int = 0, stages: int = 1) -> PrefillInputs:
    """Split the active parameters into dense and routed-expert parts, from the expert counts,
    for the tensor path `engine` takes with `weight_format`; the K/V attended at the cache's dtype;
    the weights (`weight_bytes` across the cluster) streamed once per chunk of `chunk_tokens`; `ubatches`
    through the pipeline's `stages` together (`pipeline_ubatches`)."""
    dense, expert = dense_and_expert_params(active_params, total_params, routed_experts, experts_per_token)
    kv_gb = once(("prefill kv", id(attention), attended_tokens, nodes, kv_cache_dtype, stages), prefill_kv_gb,
                 attention, attended_tokens, nodes, kv_cache_dtype, stages)
    share = chunk_read_share(total_params, dense, expert, routed_experts, experts_per_token, chunk_tokens)
    return inputs_for_weights(nodes, dense, expert, attention, attended_tokens, kv_gb, chunk_tokens, share,
                              (ubatches, stages), weight_format, engine, weight_bytes, extra_args)


def dense_and_expert_params(active_params: float, total_params: float, routed_experts: int | None,
                            experts_per_token: int | None) -> tuple[float, float]:
    """(dense, routed-expert) parameters one token computes with, from the expert counts."""
    expert = 0.0
    if routed_experts and experts_per_token and routed_experts > experts_per_token:
        expert = experts_per_token * max(total_params - active_params, 0.0) / (routed_experts - experts_per_token)
    return max(active_params - expert, 0.0), min(expert, active_params)


def chunk_read_share(total_params: float, dense_params: float, expert_params: float, routed_experts: int | None,
                     experts_per_token: int | None, chunk_tokens: int | None) -> float:
    """Share of the weights one prefill chunk reads: the dense weights and the routed experts its
    `chunk_tokens` tokens route to (`experts_touched` at uniform routing, the most they can touch),
    not every expert: one token reads its own few. 1 for a dense model or an unknown chunk."""
    if not routed_experts or not experts_per_token or routed_experts <= experts_per_token or not chunk_tokens \
            or total_params <= 0 or not expert_params:
        return 1.0
    touched = experts_touched(routed_experts, experts_per_token, chunk_tokens, 1.0)
    return min(1.0, (dense_params + touched * expert_params / experts_per_token) / total_params)


def inputs_for_weights(nodes: int, dense_params: float, expert_params: float, attention: Attention | None,
                       attended_tokens: float, kv_gb: float, chunk_tokens: int | None, read_share: float,
                       pipeline: tuple[int, int], weight_format: str, engine: str, weight_bytes: float,
                       extra_args: tuple[str, ...]) -> PrefillInputs:
    """`prefill_inputs` for weights of their own format and size, with the model's figures already
    worked out: every build of a model shares them at one depth, so a ranking makes them once
    (`read_share`: `chunk_read_share`; `pipeline`: (ubatches, stages), `PrefillInputs.ubatches`)."""
    weight_gb = weight_bytes * read_share / nodes / 1e9 / chunk_tokens if chunk_tokens else 0.0
    return PrefillInputs(nodes, dense_params, expert_params, prefill_precision(weight_format, engine), attention,
                         attended_tokens, kv_gb, weight_gb, chunk_tokens,
                         expert_precision(weight_format, engine, extra_args) if expert_params else None, *pipeline)


def prefill_kv_gb(attention: Attention | None, attended_tokens: float, nodes: int, kv_cache_dtype: str,
                  stages: int = 1) -> float:
    """GB of cached K/V (or latent and indexer keys) `attended_tokens` occupy on one rank of `nodes` in `stages`
    pipeline stages (TP within a stage), as a decode step would read them (windows, top-k and compression bound
    it); no linear state."""
    shape = shape_for(attention, kv_cache_dtype, max(1, nodes // stages), stages) if attention is not None else None
    if shape is None:
        return 0.0
    return (shape.bytes_read(round(attended_tokens)) - shape.state_bytes_per_sequence) / 1e9


def attention_flops_per_token(attention: Attention | None, attended_tokens: float) -> float:
    """QK^T and AV for one prompt token: full layers up to the top-k, windows, compressed rows
    (the indexer that picks the top-k is `indexer_flops_per_token`)."""
    if attention is None or not attention.heads or not attention.head_dim:
        return 0.0
    per_row = _row_flops(attention)
    linear = attention.linear.layers if attention.linear else 0
    full = attention.layers - attention.sliding_layers - linear - attention.ffn_layers
    full_span = min(attended_tokens, attention.sparse_topk or attended_tokens)
    window_span = min(attended_tokens, attention.sliding_window or 0)
    full_width = (attention.global_head_dim or attention.head_dim) / attention.head_dim  # Gemma 4's wider global heads
    rows = full * full_span * full_width + attention.sliding_layers * window_span
    for group in attention.compressed:
        compressed = attended_tokens / group.ratio
        rows += group.layers * (min(compressed, attention.sparse_topk) if group.indexed and attention.sparse_topk
                                else compressed)
    return per_row * rows


def _row_flops(attention: Attention) -> float:
    """QK^T and AV FLOPs of one query against one cached row of one layer (a multiply-add is 2).
    Sparse MLA attends in the latent (absorbed form: FlashMLA's sparse kernels, and FlashInfer's MLA
    path the GB10 GLM recipe runs; TensorRT-LLM's GLM-5 notes: the DSA indexer "routes context
    attention through absorption mode (576/512 FMHA kernels)"): QK^T over the cached row (latent
    plus RoPE part), AV over the latent, or over the whole row where K = V (DeepSeek-V4, whose
    head_dim is the cached row). Other designs: K and V of head_dim per head."""
    assert attention.heads and attention.head_dim
    if attention.design == "mla" and attention.sparse_topk and attention.kv_lora_rank:
        row = attention.kv_lora_rank + (attention.qk_rope_head_dim or 0)
        return 2 * attention.heads * (row + max(attention.kv_lora_rank, attention.head_dim))
    return 4 * attention.heads * attention.head_dim


def indexer_keys_per_token(attention: Attention | None, attended_tokens: float) -> float:
    """Indexer keys one prompt token is scored against, summed over the layers that run the
    indexer: a full layer's key per `indexer_pool` tokens (GLM-5.x's k-pools of 4, DeepSeek-V3.2's
    one per token), an indexed compressed layer's key per compressed row (DeepSeek-V4's CSA, one
    per 4 tokens). vLLM scores the rows a query can see, position // ratio (indexer.py,
    BuildPrefillChunkMetadataKernel), so `attended_tokens` (the cached depth plus half the prompt)
    is the average."""
    if attention is None or not attention.indexer_head_dim:
        return 0.0
    linear = attention.linear.layers if attention.linear else 0
    full = attention.layers - attention.sliding_layers - linear - attention.ffn_layers
    keys = full * attended_tokens / attention.indexer_pool
    for group in attention.compressed:
        if group.indexed:
            keys += group.layers * attended_tokens / group.ratio
    return keys


def indexer_flops_per_token(attention: Attention | None, attended_tokens: float) -> float | None:
    """FLOPs the sparse-attention indexer spends scoring one prompt token: index_n_heads x
    index_head_dim multiply-adds per key (the head-weighted ReLU sum is a small epilogue). vLLM
    runs it as an FP8 MQA-logits kernel (DeepGEMM fp8_mqa_logits; its arch-12 paged variant on
    GB10, the GLM recipe's README) and replicates it on every TP rank ("the indexer projections and
    K cache are replicated across TP ranks", sparse_attn_indexer_kpool.py), so this is per node.
    0 without an indexer; None when its head count is unpublished."""
    return _indexer_flops(attention, indexer_keys_per_token(attention, attended_tokens))


def _indexer_flops(attention: Attention | None, keys: float) -> float | None:
    if not keys or attention is None:
        return 0.0
    if not attention.indexer_heads or not attention.indexer_head_dim:
        return None
    return 2 * attention.indexer_heads * attention.indexer_head_dim * keys


INDEXER_LOGIT_BYTES = 2 * 4
"""Each indexer score is an FP32 logit the scoring kernel writes and the top-k kernel reads back
(sparse_attn_indexer: fp8_fp4_mqa_logits into a float32 buffer, then top_k_per_row_prefill)."""


def prefill_flops_per_token(active_params: float, attention: Attention | None, attended_tokens: float) -> float:
    """FLOPs to prefill one token that attends to `attended_tokens` earlier tokens."""
    return 2 * active_params + attention_flops_per_token(attention, attended_tokens)


def prefill_link_s_per_token(nodes: int, attention: Attention | None, link_gb_s: float | None,
                             stages: int = 1) -> float:
    """Seconds of link time per prompt token on `nodes` split into `stages` pipeline stages: tensor parallelism's two
    all-reduces per layer among each stage's n nodes, each moving 2 (n-1)/n x the token's hidden state (bf16), and
    the hidden state handed once to each next stage (a layer split: llama.cpp's RPC, --pipeline-parallel-size)."""
    if nodes <= 1 or not link_gb_s or attention is None or not attention.hidden_size:
        return 0.0
    tp = max(1, nodes // max(stages, 1))
    handed = (stages - 1) * attention.hidden_size * ACTIVATION_BYTES
    reduced = 2 * attention.layers * 2 * (tp - 1) / tp * attention.hidden_size * ACTIVATION_BYTES
    return (handed + reduced) / (link_gb_s * 1e9)


AttentionTerms = tuple[float, float, float, bool, float]
"""(attention GFLOP, indexer GFLOP, indexer logits GB, indexer heads unknown, link ms) of one prompt token
per node (`attention_terms`)."""


@record(kw_only=False)
class PrefillCost:
    """Where one prompt token's time goes, in ms, per token of the cluster's throughput: the nodes work in
    parallel, except while a pipeline of layer stages fills and drains (`pipeline_ms`)."""

    gemm_gflop: float
    """Dense-equivalent GFLOP of GEMM per node (experts at their cost factor)."""
    gemm_ms: float
    attention_gflop: float
    """GFLOP of QK^T and AV per node."""
    attention_ms: float
    kv_ms: float
    """Streaming the attended K/V once per tile of queries."""
    weights_ms: float
    """Streaming every weight once per chunk."""
    link_ms: float
    indexer_gflop: float = 0.0
    """GFLOP of sparse-attention indexer scoring per node (replicated on every rank)."""
    indexer_ms: float = 0.0
    """The indexer's scoring at the attention rate."""
    logits_gb: float = 0.0
    """GB of FP32 indexer logits written and read back per node."""
    logits_ms: float = 0.0
    """Those logits at the read-test bandwidth."""
    indexer_unknown: bool = False
    """The model has an indexer whose head count is unpublished: its scoring is not counted."""
    pipeline_ms: float = 0.0
    """Pipeline stages waiting while each batch fills and drains the pipeline: (stages - 1) / ubatches of a stage's
    own time (`PrefillInputs.stage_factor`)."""

    @property
    def total_ms(self) -> float:
        return (self.gemm_ms + self.attention_ms + self.kv_ms + self.weights_ms + self.link_ms + self.indexer_ms
                + self.logits_ms + self.pipeline_ms)


def prefill_cost(p: PrefillInputs, c: SpeedConstants,
                 terms: AttentionTerms | None = None) -> PrefillCost | None:
    """Each term of one prompt token's time, or None without a rate for its precision (`terms`: the
    attention's `attention_terms`, when already worked out)."""
    by_path = p.gflop_by_precision(c.expert_prefill_factor)
    rates = c.prefill_ms_per_gflop
    gemm_ms = 0.0
    for path, gflop in by_path.items():  # one or two paths: a loop, not generators (once a build)
        rate = rates.get(path)
        if rate is None:
            return None
        gemm_ms += gflop * rate
    if terms is None:
        terms = once(("prefill attention", id(p.attention), p.attended_tokens, p.nodes, c.link_gb_s, p.stages),
                     attention_terms, p.attention, p.attended_tokens, p.nodes, c.link_gb_s, p.stages)
    attention, indexer, logits_gb, unknown, link_ms = terms
    attention_ms, indexer_ms = attention * c.prefill_attention_ms_per_gflop, indexer * c.prefill_attention_ms_per_gflop
    kv_ms, weights_ms = p.kv_gb * c.prefill_kv_ms_per_gb, p.weight_gb * c.prefill_weight_ms_per_gb
    logits_ms = logits_gb * c.prefill_weight_ms_per_gb
    pipeline_ms = (gemm_ms + attention_ms + kv_ms + weights_ms + indexer_ms + logits_ms) * (p.stage_factor - 1)
    return PrefillCost(sum(by_path.values()), gemm_ms, attention, attention_ms, kv_ms, weights_ms, link_ms,
                       indexer, indexer_ms, logits_gb, logits_ms, unknown, pipeline_ms)


def attention_terms(attention: Attention | None, attended_tokens: float, nodes: int,
                    link_gb_s: float | None, stages: int = 1) -> AttentionTerms:
    """(attention GFLOP, indexer GFLOP, indexer logits GB, indexer heads unknown, link ms) of one prompt
    token per node: the terms the model's attention decides whatever the build's format."""
    indexer, logits_gb, unknown = _indexer_terms(attention, attended_tokens)
    return (attention_flops_per_token(attention, attended_tokens) / nodes / 1e9, indexer, logits_gb, unknown,
            prefill_link_s_per_token(nodes, attention, link_gb_s, stages) * 1e3)


def prefill_indexer(p: PrefillInputs) -> tuple[float, float, bool]:
    """(GFLOP of indexer scoring, GB of its logits, head count unknown) per prompt token per node.
    The scoring runs at the attention rate: it is an attention-shaped kernel (each query against
    every earlier key, causally masked) and the node publishes no FP8 peak, so its FP8 precision
    is assumed no faster than the attention kernels. The logits stream at the read-test bandwidth."""
    return _indexer_terms(p.attention, p.attended_tokens)


def _indexer_terms(attention: Attention | None, attended_tokens: float) -> tuple[float, float, bool]:
    keys = indexer_keys_per_token(attention, attended_tokens)
    flops = _indexer_flops(attention, keys)
    if flops is None:
        return 0.0, 0.0, True
    return flops / 1e9, keys * INDEXER_LOGIT_BYTES / 1e9, False


def prefill_ms_per_token(p: PrefillInputs, c: SpeedConstants,
                         terms: AttentionTerms | None = None) -> float | None:
    """Milliseconds one prompt token costs the cluster, or None without a rate for its precision."""
    cost = prefill_cost(p, c, terms)
    return cost.total_ms if cost else None


def estimate_prefill(p: PrefillInputs, constants: SpeedConstants,
                     terms: AttentionTerms | None = None) -> float | None:
    """Prompt tokens per second across the cluster, or None without an effective rate (`terms`: the
    attention's `attention_terms`, when already worked out)."""
    ms = prefill_ms_per_token(p, constants, terms)
    return 1e3 / ms if ms else None


def prefill_range(rate: float, constants: SpeedConstants) -> tuple[float, float]:
    """(low, high) prompt tok/s around an estimated rate, from the calibrated errors."""
    below, above = constants.prefill_sides
    return rate / (1 + below), rate * (1 + above)
