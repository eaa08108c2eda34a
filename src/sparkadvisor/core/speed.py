"""Decode and prefill speed.

Decode: one step reads every active weight once, so the ceiling is bandwidth over the
active bytes per node (the article: 18B active x 0.5 B / 2 nodes = 4.5 GB, 273 / 4.5 =
~60 tok/s). The expected speed adds what the ceiling leaves out: the scales a real file
stores, the KV cache read at the current context, a draft model or MTP heads, a fixed
cost per step (kernel launches, far larger without CUDA graphs) and two all-reduces per
layer across nodes. Speculative decoding spreads one step over the tokens it accepts.

Prefill is compute-bound: ~2 x active parameters FLOPs per prompt token, plus attention
that grows with the context the token attends to, at an effective FLOP rate per node
that the catalog's prefill measurements calibrate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sparkadvisor.core.schema import Attention, Hardware

DEFAULT_BANDWIDTH_FRACTION = 0.8
"""Share of rated bandwidth a decode step achieves when the hardware has no read test."""


ASSUMED_PREFILL_MFU = 0.3
"""Share of the dense tensor peak prefill reaches before any measurement calibrates it."""


@dataclass(frozen=True, slots=True)
class SpeedConstants:
    """The free constants of the speed model for one hardware profile."""

    bandwidth_fraction: float
    """Effective / rated memory bandwidth during decode."""
    fixed_ms_graphs: float
    """Fixed cost of one decode step with CUDA graphs, in ms."""
    fixed_ms_eager: float
    """Fixed cost of one decode step in eager mode (a launch per kernel), in ms."""
    allreduce_us: float
    """Latency of one all-reduce across the node link, in microseconds."""
    acceptance: float
    """Chance that each further speculative token is accepted, when a recipe does not say."""
    prefill_flops_per_node: float | None
    """Effective prefill FLOP/s of one node; None without a peak or a measurement."""
    basis: dict[str, str]
    """For each constant, where it comes from ("assumed", "read test", "fitted to 3 measurements")."""


def default_constants(hardware: Hardware) -> SpeedConstants:
    """Constants before calibration: the hardware's own read test and link latency where
    published, otherwise round assumptions that the catalog's measurements replace."""
    basis = {"fixed_ms_graphs": "assumed", "fixed_ms_eager": "assumed", "acceptance": "assumed"}
    fraction = DEFAULT_BANDWIDTH_FRACTION
    basis["bandwidth_fraction"] = "assumed"
    if hardware.measured_bandwidth_gb_s:
        fraction = hardware.measured_bandwidth_gb_s / hardware.memory_bandwidth_gb_s
        basis["bandwidth_fraction"] = "published read test"
    latency, basis["allreduce_us"] = 20.0, "assumed"
    if hardware.link and hardware.link.latency_us:
        latency, basis["allreduce_us"] = hardware.link.latency_us, "published link latency"
    peak = max((peak_flops(hardware, p) or 0.0) for p in ("fp4", "fp8", "bf16"))
    prefill = peak * ASSUMED_PREFILL_MFU if peak else None
    basis["prefill_flops_per_node"] = f"{ASSUMED_PREFILL_MFU:.0%} of the tensor peak (assumed)" if peak else "unknown"
    return SpeedConstants(fraction, 4.0, 20.0, latency, 0.7, prefill, basis)


@dataclass(frozen=True, slots=True)
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
    """KV bytes one rank reads for one token at the context."""
    layers: int | None
    """Decoder layers (all-reduce count); None when unknown."""
    eager: bool
    """No CUDA graphs."""
    spec_tokens: int = 0
    """Tokens proposed per pass (0 without speculation)."""
    draft_bytes_per_pass: float = 0.0
    """Bytes the drafter reads per pass, per node."""
    acceptance: float | None = None
    """Measured acceptance of the recipe's drafter, when published."""


@dataclass(frozen=True, slots=True)
class DecodeEstimate:
    """Ceiling, expected value and range, with where a step's time goes."""

    ceiling_tok_s: float
    expected_tok_s: float
    low_tok_s: float
    high_tok_s: float
    weights_ms: float
    kv_ms: float
    draft_ms: float
    fixed_ms: float
    allreduce_ms: float
    tokens_per_pass: float

    @property
    def step_ms(self) -> float:
        """Time of one pass of the big model."""
        return self.weights_ms + self.kv_ms + self.draft_ms + self.fixed_ms + self.allreduce_ms


def tokens_per_pass(spec_tokens: int, measured_acceptance: float | None, assumed: float) -> float:
    """Tokens one pass yields: a measured acceptance rate r gives 1 + k x r (vLLM's
    accepted / drafted); otherwise each further token is accepted with chance `assumed`."""
    if measured_acceptance is not None:
        return 1 + spec_tokens * measured_acceptance
    return 1 + sum(assumed**i for i in range(1, spec_tokens + 1))


def params_read_per_pass(inputs: DecodeInputs, tokens_verified: int) -> float:
    """Parameters one pass reads. Verifying several tokens at once routes them to more
    experts: n tokens each picking k of E experts touch E x (1 - (1 - k/E)^n) of them."""
    experts, per_token = inputs.routed_experts, inputs.experts_per_token
    if not experts or not per_token or experts <= per_token or tokens_verified <= 1:
        return inputs.active_params
    expert_params = (inputs.total_params - inputs.active_params) / (experts - per_token)
    dense_params = inputs.active_params - per_token * expert_params
    touched = experts * (1 - (1 - per_token / experts) ** tokens_verified)
    return dense_params + touched * expert_params


def decode_ceiling(active_params: float, nominal_bits: float, tp: int, bandwidth_gb_s: float) -> float:
    """Tokens per second if only the active weights were read, at rated bandwidth."""
    bytes_per_node = active_params * nominal_bits / 8 / tp
    return bandwidth_gb_s * 1e9 / bytes_per_node


def estimate_decode(inputs: DecodeInputs, bandwidth_gb_s: float, constants: SpeedConstants) -> DecodeEstimate:
    """The expected decode speed with its range (pessimistic and optimistic constants)."""
    expected = _decode(inputs, bandwidth_gb_s, constants)
    low = _decode(inputs, bandwidth_gb_s, _pessimistic(constants))
    high = _decode(inputs, bandwidth_gb_s, _optimistic(constants))
    return replace(expected, low_tok_s=low.expected_tok_s, high_tok_s=high.expected_tok_s)


def _pessimistic(c: SpeedConstants) -> SpeedConstants:
    return replace(c, bandwidth_fraction=c.bandwidth_fraction * 0.9, fixed_ms_graphs=c.fixed_ms_graphs * 1.5,
                   fixed_ms_eager=c.fixed_ms_eager * 1.5, allreduce_us=c.allreduce_us * 1.5,
                   acceptance=max(0.0, c.acceptance - 0.2))


def _optimistic(c: SpeedConstants) -> SpeedConstants:
    return replace(c, bandwidth_fraction=min(1.0, c.bandwidth_fraction * 1.05),
                   fixed_ms_graphs=c.fixed_ms_graphs * 0.6, fixed_ms_eager=c.fixed_ms_eager * 0.6,
                   allreduce_us=c.allreduce_us * 0.6, acceptance=min(0.95, c.acceptance + 0.15))


def read_ms(inputs: DecodeInputs, bandwidth_gb_s: float, c: SpeedConstants) -> tuple[float, float, float, float]:
    """(weights, KV, draft, all-reduce) milliseconds of one pass: everything but the fixed cost."""
    effective = bandwidth_gb_s * 1e9 * c.bandwidth_fraction
    read_params = params_read_per_pass(inputs, inputs.spec_tokens + 1)
    weights_ms = read_params * inputs.stored_bits / 8 / inputs.tp / effective * 1e3
    # Pipeline stages run one after another for a single stream: each reads its own KV.
    kv_ms = inputs.kv_bytes_read * inputs.pp / effective * 1e3
    draft_ms = inputs.draft_bytes_per_pass / effective * 1e3
    allreduce_ms = 2 * inputs.layers * c.allreduce_us / 1e3 if inputs.tp > 1 and inputs.layers else 0.0
    return weights_ms, kv_ms, draft_ms, allreduce_ms


def _decode(inputs: DecodeInputs, bandwidth_gb_s: float, c: SpeedConstants) -> DecodeEstimate:
    weights_ms, kv_ms, draft_ms, allreduce_ms = read_ms(inputs, bandwidth_gb_s, c)
    fixed_ms = (c.fixed_ms_eager if inputs.eager else c.fixed_ms_graphs) * inputs.pp
    tokens = tokens_per_pass(inputs.spec_tokens, inputs.acceptance, c.acceptance)
    step = weights_ms + kv_ms + draft_ms + fixed_ms + allreduce_ms
    ceiling = decode_ceiling(inputs.active_params, inputs.nominal_bits, inputs.tp, bandwidth_gb_s)
    expected = tokens / step * 1e3
    return DecodeEstimate(ceiling, expected, expected, expected, weights_ms, kv_ms, draft_ms,
                          fixed_ms, allreduce_ms, tokens)


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


def prefill_flops_per_token(active_params: float, attention: Attention | None, attended_tokens: float) -> float:
    """FLOPs to prefill one token that attends to `attended_tokens` earlier tokens."""
    flops = 2 * active_params
    if attention is None or not attention.heads or not attention.head_dim:
        return flops
    per_layer = 4 * attention.heads * attention.head_dim  # QK^T and AV, multiply-add
    linear = attention.linear.layers if attention.linear else 0
    full_layers = attention.layers - attention.sliding_layers - linear
    full_span = min(attended_tokens, attention.sparse_topk or attended_tokens)
    window_span = min(attended_tokens, attention.sliding_window or 0)
    return flops + per_layer * (full_layers * full_span + attention.sliding_layers * window_span)


def estimate_prefill(nodes: int, active_params: float, attention: Attention | None,
                     attended_tokens: float, constants: SpeedConstants) -> float | None:
    """Prompt tokens per second across the cluster, or None without an effective rate."""
    if constants.prefill_flops_per_node is None:
        return None
    flops = prefill_flops_per_token(active_params, attention, attended_tokens)
    return nodes * constants.prefill_flops_per_node / flops
