"""Decode and prefill speed: what the kernels read and compute, at rates calibrated by measurements.

Decode: one step (a pass of the big model) reads every active weight once, so the ceiling
is rated bandwidth over the active bytes per node (the article: 18B active x 0.5 B / 2 nodes
= 4.5 GB, 273 / 4.5 = ~60 tok/s). The expected time of a step adds what the ceiling leaves
out, each term the product of a physical quantity and a rate fitted per engine:
- weights: the bytes read at the published read-test bandwidth, plus a format's dequantization
  overhead; a batch of n tokens routes to the union of their experts (fewer than independent
  uniform routing would touch: `expert_spread`);
- KV: what the attention kernel reads for each stream (bounded by top-k, windows and
  compression: `KvShape.bytes_read`), at its own rate;
- compute: 2 x active parameters per token verified, which bounds large batches;
- fixed: a cost per step and per layer (kernel tails with CUDA graphs; every launch from
  Python in eager mode);
- speculation: one drafter step per proposed token (one per block for DFlash/DSpark);
- the link: two all-reduces per layer across the TP nodes.
Speculative decoding spreads one step over the tokens it accepts. Per-token tables (PLE,
Engram) are read on every token, but how many bytes is unpublished: they stay an explicit
unknown term.

Prefill is compute-bound: 2 x (dense + expert) parameters per prompt token, the experts at
their own (lower) efficiency, at the effective rate of the tensor path the engine's GEMMs take
for the build (`prefill_precision`: llama.cpp's quantized matmuls are int8 whatever the GGUF
type; vLLM's NVFP4 runs FP4 CUTLASS kernels, its W4A16 formats bf16 Marlin), plus attention
that grows with the context the token attends to: its FLOPs at their own rate, and the cached
K/V it streams (a flash-attention kernel reads the whole cache once per tile of queries, so
each prompt token pays the attended K/V bytes over the tile), plus the link's share under TP.
The rates are each engine's own where it has measurements (core.calibration).
"""

from __future__ import annotations

import math
from dataclasses import field
from functools import lru_cache

from sparkadvisor.core.formats import FORMATS
from sparkadvisor.core.kv import shape_for
from sparkadvisor.core.memo import once
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Attention, DecodeRead, Hardware

DEFAULT_BANDWIDTH_FRACTION = 0.8
"""Share of rated bandwidth a decode step achieves when the hardware has no read test."""

ACTIVATION_BYTES = 2
"""Hidden states cross the link in bf16."""

MIN_BAND = 0.10
"""Narrowest relative range: the article's run-to-run sigma (57.54 +/- 5.61 tok/s, ~10%)."""

# Starting values of the constants calibration fits (core.calibration). Each is a round
# assumption, shown as "assumed" in `show`, until the catalog's own measurements replace it;
# a hardware profile without measurements keeps them.

ASSUMED_FIXED_MS = 2.0
"""Fixed cost of a decode step, ms: the scheduler and sampling."""

ASSUMED_LAYER_MS = 0.05
"""Fixed cost per layer with CUDA graphs, ms: the tails of ~10 kernels a layer."""

ASSUMED_EAGER_MS_PER_LAYER = 0.5
"""Extra cost per layer without CUDA graphs, ms: ~100 launches from Python at ~5 us each."""

ASSUMED_SPEC_MS_PER_STEP = 1.5
"""Cost of one drafter step, ms: its launches and the host sync of rejection sampling."""

ASSUMED_KV_MS_PER_GB = 5.0
"""Attention reads KV at ~200 GB/s: flash-decoding kernels run below the weights' GEMV rate."""

ASSUMED_COMPUTE_MS_PER_GFLOP = 0.03
"""~33 TFLOP/s of decode GEMM for tokens batched in one step."""

ASSUMED_ALLREDUCE_US = 20.0
"""One small all-reduce between two nodes, us, when the link's latency is unpublished."""

ASSUMED_ACCEPTANCE = 0.6
"""Share of drafted tokens accepted when a recipe does not report it."""

ASSUMED_EXPERT_SPREAD = 1.0
"""Routing as independent uniform draws over all experts, until batched measurements say less."""

ASSUMED_PREFILL_MFU = 0.3
"""Share of the dense tensor peak prefill reaches before any measurement calibrates it."""

ASSUMED_EXPERT_PREFILL_FACTOR = 1.5
"""Expert GEMMs are smaller than dense ones and run at ~2/3 of their efficiency in prefill."""

ASSUMED_BAND = 0.3
"""Relative half-width of a range before the model's own errors size it."""

PRECISIONS = ("fp4", "fp8", "int8", "bf16")
"""Compute precisions of the tensor paths prefill can take (formats.FormatInfo.low_precision_compute)."""

GGML_ENGINES = frozenset({"llama.cpp", "ollama"})
"""Engines whose GEMMs are ggml's CUDA kernels (Ollama runs ggml too)."""

GGML_FLOAT_FORMATS = frozenset({"bf16", "fp16", "f16", "f32"})
"""Weight formats ggml multiplies with cuBLAS in floating point rather than with its quantized kernels."""

PREFILL_CHUNK_TOKENS = {"llama.cpp": 512, "ollama": 512, "vllm": 8192}
"""Prompt tokens an engine computes per forward pass unless told otherwise; each pass reads every
weight once. llama.cpp: n_ubatch 512 (common/common.h); Ollama: num_batch 512 (api/types.go,
DefaultOptions); vLLM: max_num_batched_tokens 8192 for `vllm serve` on a GPU with >= 70 GiB
(engine/arg_utils.py, get_batch_defaults). Others unknown."""

CHUNK_FLAGS = ("--max-num-batched-tokens", "--chunked-prefill-size", "--ubatch-size", "-ub")
"""Launch flags that set the prefill chunk (vLLM, SGLang, llama.cpp)."""


@lru_cache(maxsize=256)
def weight_class(weight_format: str) -> str:
    """The dequantization path a format's weights take in a decode GEMV: each has its own overhead."""
    if weight_format.startswith("nvfp4"):
        return "nvfp4"
    if weight_format.startswith("gguf"):
        return "gguf"
    if weight_format in ("awq-int4", "gptq-int4", "int4-w4a16", "exl3"):
        return "int4"
    if weight_format in ("fp8", "int8"):
        return "fp8"
    return weight_format if weight_format == "mxfp4" else "bf16"


@record(kw_only=False)
class SpeedConstants:
    """The free constants of the speed model for one hardware profile and engine."""

    engine: str
    """The serving engine these constants describe (vllm, llama.cpp, sglang, ...)."""
    bandwidth_fraction: float
    """Effective / rated memory bandwidth of a weight read (the published read test where there is one)."""
    weight_penalty: dict[str, float]
    """Extra share of the weight read's time a format's dequantization costs, by `weight_class`."""
    kv_ms_per_gb: float
    """Milliseconds the attention kernel takes per GB of KV it reads."""
    compute_ms_per_gflop: float
    """Milliseconds per GFLOP of the decode GEMMs (what bounds a large batch)."""
    fixed_ms: float
    """Fixed cost of one decode step (scheduler, sampling), in ms."""
    layer_ms: float
    """Fixed cost per layer with CUDA graphs, in ms."""
    eager_ms_per_layer: float
    """Extra cost per layer without CUDA graphs (a launch per kernel), in ms."""
    spec_ms_per_step: float
    """Cost of one drafter step in a speculative pass, in ms."""
    allreduce_us: float
    """Latency of one small all-reduce between two nodes, in microseconds."""
    link_gb_s: float | None
    """Collective bandwidth of the node link, GB/s; None for single-node hardware."""
    acceptance: float
    """Share of proposed tokens accepted (accepted / drafted), when a recipe does not say."""
    expert_spread: float
    """Share of the experts a batch's routing spreads over (1 = independent uniform draws)."""
    prefill_ms_per_gflop: dict[str, float | None]
    """Milliseconds per GFLOP of prefill GEMM by compute precision (None: no rate)."""
    expert_prefill_factor: float
    """How many dense FLOPs an expert FLOP costs in prefill."""
    prefill_attention_ms_per_gflop: float
    """Milliseconds per GFLOP of prefill attention."""
    prefill_kv_ms_per_gb: float
    """Milliseconds per GB of cached K/V a prompt token's attention attends to: 1 / (query tile x
    effective bandwidth), the kernel streaming the cache once per tile of queries."""
    prefill_weight_ms_per_gb: float
    """Milliseconds per GB of weights streamed once per prefill chunk: the published read test
    (not fitted)."""
    decode_band: float
    """How far the single-stream range reaches above the expected figure: high = expected x (1 + band)."""
    aggregate_band: float
    """The same for several streams."""
    prefill_band: float
    """The same for prefill."""
    decode_measurements: int = 0
    """Decode measurements the decode constants were fitted to (0: assumed)."""
    prefill_measurements: int = 0
    """Prefill measurements the prefill rates were fitted to."""
    basis: dict[str, str] = field(default_factory=dict)
    """For each constant, where it comes from ("assumed", "read test", "fitted to 3 measurements")."""
    decode_band_below: float | None = None
    """How far the single-stream range reaches below it: low = expected / (1 + below); None: as far
    as above (a range from the model's errors leans the way they do: calibration.band_from)."""
    aggregate_band_below: float | None = None
    """The same for several streams."""
    prefill_band_below: float | None = None
    """The same for prefill."""

    def decode_range(self, streams: int) -> tuple[float, float]:
        """(below, above) of the decode range for `streams` sequences."""
        if streams == 1:
            return _sides(self.decode_band_below, self.decode_band)
        return _sides(self.aggregate_band_below, self.aggregate_band)

    @property
    def prefill_sides(self) -> tuple[float, float]:
        """(below, above) of the prefill range."""
        return _sides(self.prefill_band_below, self.prefill_band)

    @property
    def prefill_flops_per_node(self) -> float | None:
        """The BF16 prefill rate as FLOP/s of one node (a summary figure)."""
        rate = self.prefill_ms_per_gflop.get("bf16")
        return 1e12 / rate if rate else None


def _sides(below: float | None, above: float) -> tuple[float, float]:
    return (above if below is None else below), above


def default_constants(hardware: Hardware, engine: str = "vllm") -> SpeedConstants:
    """Constants before calibration: the hardware's own read test and link latency where
    published, otherwise round assumptions that the catalog's measurements replace."""
    basis = {k: "assumed" for k in ("weight_penalty", "kv_ms_per_gb", "compute_ms_per_gflop", "fixed_ms",
                                    "layer_ms", "eager_ms_per_layer", "spec_ms_per_step", "acceptance",
                                    "expert_spread", "decode_band", "aggregate_band", "prefill_band",
                                    "bandwidth_fraction", "expert_prefill_factor")}
    fraction = DEFAULT_BANDWIDTH_FRACTION
    if hardware.measured_bandwidth_gb_s:
        fraction = min(1.0, hardware.measured_bandwidth_gb_s / hardware.memory_bandwidth_gb_s)
        basis["bandwidth_fraction"] = "published read test"
    latency, basis["allreduce_us"] = ASSUMED_ALLREDUCE_US, "assumed"
    if hardware.link and hardware.link.latency_us:
        latency, basis["allreduce_us"] = hardware.link.latency_us, "published link latency"
    peak = tensor_peak_flops(hardware)
    rates = {p: _assumed_rate(peak_flops(hardware, p)) for p in PRECISIONS}
    basis["prefill_ms_per_gflop"] = f"{ASSUMED_PREFILL_MFU:.0%} of the tensor peak (assumed)" if peak else "unknown"
    basis["prefill_attention"] = "assumed: the bf16 GEMM rate" if peak else "unknown"
    basis["prefill_kv"] = "assumed: no cost beyond the FLOPs"
    basis["prefill_weight"] = ("the published read test" if hardware.measured_bandwidth_gb_s else
                               f"{DEFAULT_BANDWIDTH_FRACTION:.0%} of rated bandwidth (assumed)")
    return SpeedConstants(
        engine=engine, bandwidth_fraction=fraction, weight_penalty={}, kv_ms_per_gb=ASSUMED_KV_MS_PER_GB,
        compute_ms_per_gflop=ASSUMED_COMPUTE_MS_PER_GFLOP, fixed_ms=ASSUMED_FIXED_MS, layer_ms=ASSUMED_LAYER_MS,
        eager_ms_per_layer=ASSUMED_EAGER_MS_PER_LAYER, spec_ms_per_step=ASSUMED_SPEC_MS_PER_STEP,
        allreduce_us=latency, link_gb_s=hardware.link.bandwidth_gb_s if hardware.link else None,
        acceptance=ASSUMED_ACCEPTANCE, expert_spread=ASSUMED_EXPERT_SPREAD, prefill_ms_per_gflop=rates,
        expert_prefill_factor=ASSUMED_EXPERT_PREFILL_FACTOR, prefill_attention_ms_per_gflop=rates.get("bf16") or 0.0,
        prefill_kv_ms_per_gb=0.0, prefill_weight_ms_per_gb=1e3 / (hardware.memory_bandwidth_gb_s * fraction),
        decode_band=ASSUMED_BAND, aggregate_band=ASSUMED_BAND, prefill_band=ASSUMED_BAND, basis=basis)


def _assumed_rate(peak: float | None) -> float | None:
    """Milliseconds per GFLOP at the assumed share of a tensor peak (None without a peak)."""
    return 1e12 / (peak * ASSUMED_PREFILL_MFU) if peak else None


@record(kw_only=False)
class DecodeInputs:
    """What one decode step reads and runs, per node."""

    active_params: float
    """Active parameters (count, not billions)."""
    total_params: float
    """All transformer parameters (count)."""
    routed_experts: int | None
    """MoE routed experts per layer; None for a dense model or when unknown."""
    experts_per_token: int | None
    """MoE routed experts per token."""
    nominal_bits: float
    """Bits the format is named for (the ceiling's assumption)."""
    stored_bits: float
    """Average stored bits per weight, scales included."""
    tp: int
    pp: int
    kv_bytes_read: float
    """KV bytes one rank reads for one sequence at the context."""
    layers: int | None
    """Decoder layers (fixed costs and all-reduces); None when unknown."""
    eager: bool
    """No CUDA graphs."""
    weight_class: str = "bf16"
    """The dequantization path of the weights (`weight_class`)."""
    spec_tokens: int = 0
    """Tokens proposed per pass (0 without speculation)."""
    drafter_steps: int = 0
    """Sequential drafter steps per pass (k for MTP or an EAGLE head, 1 for a block drafter)."""
    draft_bytes_per_pass: float = 0.0
    """Bytes the drafter reads per pass, per node."""
    acceptance: float | None = None
    """Measured acceptance of the recipe's drafter, when published."""
    hidden_size: int | None = None
    """Width of the residual stream (what an all-reduce moves per token); None when unknown."""
    streams: int = 1
    """Sequences decoded together in one step."""
    tables: str = ""
    """Per-token tables read every token ("PLE", "Engram"), whose bytes are unpublished; "" for none."""

    @property
    def tokens_verified(self) -> int:
        """Tokens one pass runs through the big model: every stream's proposed tokens plus one."""
        return self.streams * (self.spec_tokens + 1)


@record(kw_only=False)
class DecodeEstimate:
    """Ceiling, expected value and range, with where a step's time goes."""

    ceiling_tok_s: float
    """Single stream, active weights only, rated bandwidth (bandwidth only)."""
    expected_tok_s: float
    """All streams together when `streams` > 1."""
    low_tok_s: float
    high_tok_s: float
    weights_ms: float
    kv_ms: float
    draft_ms: float
    fixed_ms: float
    spec_ms: float
    compute_ms: float
    allreduce_ms: float
    tokens_per_pass: float
    """Tokens one pass yields per stream."""
    ceiling_bits: float = 0.0
    """Bits per active weight the ceiling counts (`ceiling_bits`)."""
    streams: int = 1
    tables: str = ""
    """Per-token tables left out of the step (unknown bytes); "" for none."""
    experts_read: float = 0.0
    """Routed experts per layer one pass reads (0 for a dense model)."""
    read_bound_tok_s: float | None = None
    """What no single-stream step without speculation passes: the build's counted read per rank
    (`schema.DecodeRead`) at rated bandwidth, nothing else; None when nobody counted it."""

    @property
    def step_ms(self) -> float:
        """Time of one pass of the big model."""
        return (self.weights_ms + self.kv_ms + self.draft_ms + self.fixed_ms + self.spec_ms + self.compute_ms
                + self.allreduce_ms)

    @property
    def per_stream_tok_s(self) -> float:
        """What each stream sees."""
        return self.expected_tok_s / self.streams


def tokens_per_pass(spec_tokens: int, measured_acceptance: float | None, assumed: float) -> float:
    """Tokens one pass yields: 1 + k x r, with r the share of proposed tokens accepted
    (vLLM's accepted / drafted): the recipe's own when published, else `assumed`."""
    rate = measured_acceptance if measured_acceptance is not None else assumed
    return 1 + spec_tokens * rate


def experts_touched(experts: int, per_token: int, tokens: int, spread: float) -> float:
    """Distinct experts `tokens` tokens route to in one layer. Each picks `per_token` of
    `experts`; routing is not uniform (popular experts are shared), so the draws spread over
    an effective spread x experts: E' (1 - (1 - k/E')^n)."""
    effective = max(float(per_token), spread * experts)
    return min(float(experts), effective * (1 - (1 - per_token / effective) ** tokens))


def params_read_per_pass(inputs: DecodeInputs, tokens_verified: int, spread: float = 1.0) -> tuple[float, float]:
    """(parameters one pass reads, routed experts per layer it touches)."""
    experts, per_token = inputs.routed_experts, inputs.experts_per_token
    if not experts or not per_token or experts <= per_token:
        return inputs.active_params, 0.0
    expert_params = max(inputs.total_params - inputs.active_params, 0.0) / (experts - per_token)
    dense_params = max(inputs.active_params - per_token * expert_params, 0.0)
    touched = experts_touched(experts, per_token, tokens_verified, spread) if tokens_verified > 1 else per_token
    return dense_params + touched * expert_params, touched


def ceiling_bits(inputs: DecodeInputs) -> float:
    """Bits per active weight the ceiling assumes: the nominal bits, or fewer if the file stores fewer."""
    return min(inputs.nominal_bits, inputs.stored_bits)


def read_bound(read: DecodeRead | None, engine: str, tp: int, bandwidth_gb_s: float) -> float | None:
    """Tokens per second a step without speculation cannot pass: the bytes one rank reads per token,
    counted tensor by tensor, at rated bandwidth. None when uncounted, or counted for another engine's
    split of the projections."""
    if read is None or read.engine != engine:
        return None
    return bandwidth_gb_s / read.per_rank_gb(tp)


def decode_ceiling(active_params: float, bits: float, tp: int, bandwidth_gb_s: float) -> float:
    """Tokens per second if only the active weights were read, at rated bandwidth."""
    bytes_per_node = active_params * bits / 8 / tp
    return bandwidth_gb_s * 1e9 / bytes_per_node


def allreduce_us(c: SpeedConstants, nodes: int, message_bytes: float) -> float:
    """One all-reduce across `nodes`: the two-node latency grows with log2(nodes) (a tree;
    NCCL's 48 KB all-reduce takes ~30 us on 2 Sparks and 59 us on 4), plus the bytes a ring
    moves, 2 (n-1)/n x message, at the link's bandwidth."""
    if nodes <= 1:
        return 0.0
    moved = 2 * (nodes - 1) / nodes * message_bytes
    return c.allreduce_us * math.log2(nodes) + (moved / (c.link_gb_s * 1e3) if c.link_gb_s else 0.0)


def link_ms(inputs: DecodeInputs, c: SpeedConstants) -> float:
    """Two all-reduces per layer across the TP nodes, plus one hand-over per pipeline boundary."""
    message = inputs.tokens_verified * (inputs.hidden_size or 0) * ACTIVATION_BYTES
    tp_us = 2 * (inputs.layers or 0) * allreduce_us(c, inputs.tp, message)
    pp_us = (inputs.pp - 1) * c.allreduce_us
    return (tp_us + pp_us) / 1e3


@record(kw_only=False)
class PassCost:
    """What one decode pass costs beside reading the weights: the same for every weight format of a
    model under one recipe, split, context and stream count (a ranking works it out once per model)."""

    params_read: float
    """Parameters the pass reads (the union of the experts a batch routes to)."""
    experts_read: float
    """Routed experts per layer it touches (0 for a dense model)."""
    kv_ms: float
    compute_ms: float
    spec_ms: float
    fixed_ms: float
    allreduce_ms: float
    tokens_per_pass: float
    """Tokens one pass yields per stream."""


def pass_cost(inputs: DecodeInputs, c: SpeedConstants) -> PassCost:
    """The terms of a pass that the weights' format does not change."""
    verified = inputs.tokens_verified
    params, touched = params_read_per_pass(inputs, verified, c.expert_spread)
    # Pipeline stages run one after another for a single stream: each reads its own KV.
    kv_ms = inputs.kv_bytes_read * inputs.streams * inputs.pp / 1e9 * c.kv_ms_per_gb
    compute = verified * 2 * inputs.active_params / inputs.tp / 1e9 * c.compute_ms_per_gflop
    spec = inputs.drafter_steps * c.spec_ms_per_step if inputs.spec_tokens else 0.0
    return PassCost(params, touched, kv_ms, compute, spec, fixed_ms(inputs, c), link_ms(inputs, c),
                    tokens_per_pass(inputs.spec_tokens, inputs.acceptance, c.acceptance))


def read_ms(inputs: DecodeInputs, bandwidth_gb_s: float, c: SpeedConstants,
            cost: PassCost | None = None) -> tuple[float, float, float, float]:
    """(weights, KV, draft milliseconds, routed experts touched) of one pass on one node (`cost`: the
    pass's `pass_cost`, when already worked out)."""
    cost = cost if cost is not None else pass_cost(inputs, c)
    return _read_ms(cost, inputs.stored_bits, inputs.weight_class, inputs.draft_bytes_per_pass, inputs.tp,
                    bandwidth_gb_s, c)


def _read_ms(cost: PassCost, stored_bits: float, weight_class: str, draft_bytes: float, tp: int,
             bandwidth_gb_s: float, c: SpeedConstants) -> tuple[float, float, float, float]:
    """`read_ms` from the pass cost and the fields of the inputs that the weights' format sets."""
    effective = bandwidth_gb_s * 1e9 * c.bandwidth_fraction
    read = cost.params_read * stored_bits / 8 / tp / effective * 1e3
    weights_ms = read * (1 + c.weight_penalty.get(weight_class, 0.0))
    draft_ms = draft_bytes / effective * 1e3
    return weights_ms, cost.kv_ms, draft_ms, cost.experts_read


def fixed_ms(inputs: DecodeInputs, c: SpeedConstants) -> float:
    """The step's fixed cost: one per pipeline stage, and one per layer (more without CUDA graphs)."""
    per_layer = c.layer_ms + (c.eager_ms_per_layer if inputs.eager else 0.0)
    return c.fixed_ms * inputs.pp + per_layer * (inputs.layers or 0)


def estimate_decode(inputs: DecodeInputs, bandwidth_gb_s: float, constants: SpeedConstants,
                    cost: PassCost | None = None) -> DecodeEstimate:
    """The expected decode speed with its range, from the calibrated spread of the model's errors.
    Without speculation the high end never passes the ceiling (nothing beats reading the weights).
    `cost` is the pass's `pass_cost`, when already worked out."""
    cost = cost if cost is not None else pass_cost(inputs, constants)
    return estimate_for_weights(inputs, cost, inputs.nominal_bits, inputs.stored_bits, inputs.weight_class,
                                inputs.draft_bytes_per_pass, bandwidth_gb_s, constants)


def estimate_for_weights(inputs: DecodeInputs, cost: PassCost, nominal_bits: float, stored_bits: float,
                         weight_class: str, draft_bytes: float, bandwidth_gb_s: float,
                         c: SpeedConstants) -> DecodeEstimate:
    """`estimate_decode` for weights of their own format (nominal and stored bits, dequantization
    path, drafter bytes per pass) with the rest of `inputs`: every build of a model shares `inputs`
    and `cost` under one recipe, split, context and stream count, so a ranking makes them once."""
    weights, kv, draft, touched = _read_ms(cost, stored_bits, weight_class, draft_bytes, inputs.tp, bandwidth_gb_s, c)
    compute, spec, fixed, allreduce = cost.compute_ms, cost.spec_ms, cost.fixed_ms, cost.allreduce_ms
    tokens = cost.tokens_per_pass
    bits = min(nominal_bits, stored_bits)  # as `ceiling_bits`
    ceiling = decode_ceiling(inputs.active_params, bits, inputs.tp, bandwidth_gb_s)
    step = weights + kv + draft + fixed + spec + compute + allreduce
    expected = inputs.streams * tokens / step * 1e3
    below, above = c.decode_range(inputs.streams)
    high = expected * (1 + above)
    if inputs.spec_tokens == 0 and inputs.streams == 1:
        high = min(high, max(ceiling, expected))
    return DecodeEstimate(ceiling, expected, expected / (1 + below), high, weights, kv, draft, fixed, spec, compute,
                          allreduce, tokens, bits, inputs.streams, inputs.tables, touched)


# --- prefill ------------------------------------------------------------------


def peak_flops(hardware: Hardware, precision: str) -> float | None:
    """Dense peak of one node for `precision` in FLOP/s (sparse vendor figures halved)."""
    compute = hardware.compute
    if compute is None:
        return None
    tflops = {"fp4": compute.fp4_tflops, "fp8": compute.fp8_tflops, "int8": compute.fp8_tflops,
              "bf16": compute.bf16_tflops}.get(precision)
    if not tflops:
        return None
    return tflops * 1e12 / (2 if compute.sparse else 1)


def tensor_peak_flops(hardware: Hardware) -> float:
    """The node's highest dense tensor peak over the precisions it publishes, FLOP/s (0 when none)."""
    return max((peak_flops(hardware, p) or 0.0) for p in ("fp4", "fp8", "bf16"))


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
    """GB of weights each node streams per prompt token: all its weights once per chunk."""
    chunk_tokens: int | None = None
    """Prompt tokens computed per forward pass (None: unknown, the weight stream is not counted)."""
    expert_precision: str | None = None
    """The routed experts' tensor path when the MoE backend differs from the dense GEMMs' (vLLM
    `--moe-backend marlin`: W4A16, bf16 MMA); None: `precision`."""

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
                   extra_args: tuple[str, ...] = ()) -> PrefillInputs:
    """Split the active parameters into dense and routed-expert parts, from the expert counts,
    for the tensor path `engine` takes with `weight_format`; the K/V attended at the cache's dtype;
    the weights (`weight_bytes` across the cluster) streamed once per chunk of `chunk_tokens`."""
    dense, expert = dense_and_expert_params(active_params, total_params, routed_experts, experts_per_token)
    kv_gb = once(("prefill kv", id(attention), attended_tokens, nodes, kv_cache_dtype), prefill_kv_gb,
                 attention, attended_tokens, nodes, kv_cache_dtype)
    return inputs_for_weights(nodes, dense, expert, attention, attended_tokens, kv_gb, chunk_tokens, weight_format,
                              engine, weight_bytes, extra_args)


def dense_and_expert_params(active_params: float, total_params: float, routed_experts: int | None,
                            experts_per_token: int | None) -> tuple[float, float]:
    """(dense, routed-expert) parameters one token computes with, from the expert counts."""
    expert = 0.0
    if routed_experts and experts_per_token and routed_experts > experts_per_token:
        expert = experts_per_token * max(total_params - active_params, 0.0) / (routed_experts - experts_per_token)
    return max(active_params - expert, 0.0), min(expert, active_params)


def inputs_for_weights(nodes: int, dense_params: float, expert_params: float, attention: Attention | None,
                       attended_tokens: float, kv_gb: float, chunk_tokens: int | None, weight_format: str,
                       engine: str, weight_bytes: float, extra_args: tuple[str, ...]) -> PrefillInputs:
    """`prefill_inputs` for weights of their own format and size, with the model's figures already
    worked out: every build of a model shares them at one depth, so a ranking makes them once."""
    weight_gb = weight_bytes / nodes / 1e9 / chunk_tokens if chunk_tokens else 0.0
    return PrefillInputs(nodes, dense_params, expert_params, prefill_precision(weight_format, engine), attention,
                         attended_tokens, kv_gb, weight_gb, chunk_tokens,
                         expert_precision(weight_format, engine, extra_args) if expert_params else None)


def prefill_chunk(engine: str, extra_args: tuple[str, ...], prompt_tokens: float | None,
                  stated: int | None = None) -> int | None:
    """Prompt tokens per forward pass: as stated, else as the launch flags set it, else the engine's
    default (PREFILL_CHUNK_TOKENS); never more than the prompt. None when unknown."""
    chunk = stated or _flag_value(extra_args, CHUNK_FLAGS) or PREFILL_CHUNK_TOKENS.get(engine)
    if chunk is None:
        return None
    return max(1, round(min(chunk, prompt_tokens))) if prompt_tokens else chunk


def _flag_value(args: tuple[str, ...], names: tuple[str, ...]) -> int | None:
    value = launch_flag(args, names)
    return int(value) if value and value.isdecimal() else None


def launch_flag(args: tuple[str, ...], names: tuple[str, ...]) -> str | None:
    """The value launch arguments give the first of `names` they set (`--flag v` or `--flag=v`; a
    long flag's dashes and underscores alike, as vLLM reads them), or None."""
    if not args:
        return None  # most builds have no recipe, so no arguments: skip spelling out the names
    wanted = {_flag_name(name) for name in names}
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if _flag_name(name) in wanted:
            return value if eq else (args[i + 1] if i + 1 < len(args) else None)
    return None


def _flag_name(name: str) -> str:
    return "--" + name[2:].replace("_", "-") if name.startswith("--") else name


def prefill_kv_gb(attention: Attention | None, attended_tokens: float, nodes: int, kv_cache_dtype: str) -> float:
    """GB of cached K/V (or latent and indexer keys) `attended_tokens` occupy on one rank under TP,
    as a decode step would read them (windows, top-k and compression bound it); no linear state."""
    shape = shape_for(attention, kv_cache_dtype, nodes, 1) if attention is not None else None
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


def prefill_link_s_per_token(nodes: int, attention: Attention | None, link_gb_s: float | None) -> float:
    """Seconds of link time per prompt token under TP: two all-reduces per layer, each moving
    2 (n-1)/n x the token's hidden state (bf16)."""
    if nodes <= 1 or not link_gb_s or attention is None or not attention.hidden_size:
        return 0.0
    moved = 2 * attention.layers * 2 * (nodes - 1) / nodes * attention.hidden_size * ACTIVATION_BYTES
    return moved / (link_gb_s * 1e9)


AttentionTerms = tuple[float, float, float, bool, float]
"""(attention GFLOP, indexer GFLOP, indexer logits GB, indexer heads unknown, link ms) of one prompt token
per node (`attention_terms`)."""


@record(kw_only=False)
class PrefillCost:
    """Where one prompt token's time goes, in ms (the nodes work in parallel, so this is per
    token of the cluster's throughput)."""

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

    @property
    def total_ms(self) -> float:
        return (self.gemm_ms + self.attention_ms + self.kv_ms + self.weights_ms + self.link_ms + self.indexer_ms
                + self.logits_ms)


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
        terms = once(("prefill attention", id(p.attention), p.attended_tokens, p.nodes, c.link_gb_s),
                     attention_terms, p.attention, p.attended_tokens, p.nodes, c.link_gb_s)
    attention, indexer, logits_gb, unknown, link_ms = terms
    return PrefillCost(sum(by_path.values()), gemm_ms, attention, attention * c.prefill_attention_ms_per_gflop,
                       p.kv_gb * c.prefill_kv_ms_per_gb, p.weight_gb * c.prefill_weight_ms_per_gb, link_ms,
                       indexer, indexer * c.prefill_attention_ms_per_gflop, logits_gb,
                       logits_gb * c.prefill_weight_ms_per_gb, unknown)


def attention_terms(attention: Attention | None, attended_tokens: float, nodes: int,
                    link_gb_s: float | None) -> AttentionTerms:
    """(attention GFLOP, indexer GFLOP, indexer logits GB, indexer heads unknown, link ms) of one prompt
    token per node: the terms the model's attention decides whatever the build's format."""
    indexer, logits_gb, unknown = _indexer_terms(attention, attended_tokens)
    return (attention_flops_per_token(attention, attended_tokens) / nodes / 1e9, indexer, logits_gb, unknown,
            prefill_link_s_per_token(nodes, attention, link_gb_s) * 1e3)


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
