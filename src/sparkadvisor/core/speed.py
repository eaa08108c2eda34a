"""Decode and prefill speed: a roofline with a fixed cost per step, calibrated by measurements.

Decode: one step (a pass of the big model) reads every active weight once, so the ceiling
is rated bandwidth over the active bytes per node (the article: 18B active x 0.5 B / 2 nodes
= 4.5 GB, 273 / 4.5 = ~60 tok/s). The expected time of a step adds what the ceiling leaves
out: the scales a real file stores, the KV cache read at the current context, the drafter,
a fixed cost per step (kernel launches, the scheduler; larger without CUDA graphs), the
bookkeeping of speculative decoding, and two all-reduces per layer across the nodes.
Speculative decoding spreads one step over the tokens it accepts; verifying several
tokens at once routes them to more experts. Per-token tables (PLE, Engram) are read on
every token, but how many bytes is unpublished: they stay an explicit unknown term.

Prefill is compute-bound: ~2 x active parameters FLOPs per prompt token, plus attention
that grows with the context the token attends to, at an effective FLOP rate per node the
catalog's prefill measurements calibrate; across nodes, each token's activations also
cross the link twice per layer.
"""

from __future__ import annotations

import math

from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Attention, Hardware

DEFAULT_BANDWIDTH_FRACTION = 0.8
"""Share of rated bandwidth a decode step achieves when the hardware has no read test."""

ASSUMED_PREFILL_MFU = 0.3
"""Share of the dense tensor peak prefill reaches before any measurement calibrates it."""

ACTIVATION_BYTES = 2
"""Hidden states cross the link in bf16."""

MIN_BAND = 0.10
"""Narrowest relative range: the article's run-to-run sigma (57.54 +/- 5.61 tok/s, ~10%)."""

# Starting values of the constants calibration fits (core.calibration). Each is a round
# assumption, shown as "assumed" in `show`, until the catalog's own measurements replace it;
# a hardware profile without measurements keeps them.

ASSUMED_FIXED_MS_GRAPHS = 4.0
"""Fixed cost of a decode step with CUDA graphs, ms: launches and the scheduler, a few ms in vLLM's step."""

ASSUMED_FIXED_MS_EAGER = 8.0
"""The same in eager mode, ms: every kernel launched from Python roughly doubles it."""

ASSUMED_SPEC_MS = 15.0
"""Extra cost of a speculative step, ms: drafter launches, rejection sampling, a host sync."""

ASSUMED_BATCH_MS_PER_TOKEN = 1.0
"""Extra cost per token a batched step verifies for each further stream, ms."""

ASSUMED_ALLREDUCE_US = 20.0
"""One small all-reduce between two nodes, us, when the link's latency is unpublished
(NCCL's 48 KB all-reduce takes ~30 us on two Sparks; see `allreduce_us`)."""

ASSUMED_ACCEPTANCE = 0.6
"""Share of drafted tokens accepted when a recipe does not report it."""

ASSUMED_BAND = 0.3
"""Relative half-width of a range before the model's own errors size it."""


@record(kw_only=False)
class SpeedConstants:
    """The free constants of the speed model for one hardware profile and engine."""

    bandwidth_fraction: float
    """Effective / rated memory bandwidth during decode (at most 1)."""
    fixed_ms_graphs: float
    """Fixed cost of one decode step with CUDA graphs (launches, scheduler), in ms."""
    fixed_ms_eager: float
    """Fixed cost of one decode step in eager mode (a launch per kernel), in ms."""
    spec_ms: float
    """Extra cost of a step with speculative decoding (drafter launches, rejection, host sync), in ms."""
    batch_ms_per_token: float
    """Extra cost per token a batched step verifies for each further stream, in ms."""
    allreduce_us: float
    """Latency of one small all-reduce between two nodes, in microseconds."""
    link_gb_s: float | None
    """Collective bandwidth of the node link, GB/s; None for single-node hardware."""
    acceptance: float
    """Share of proposed tokens accepted (accepted / drafted), when a recipe does not say."""
    prefill_flops_per_node: float | None
    """Effective prefill FLOP/s of one node; None without a peak or a measurement."""
    decode_band: float
    """Relative half-width of the decode range: low = expected / (1 + band), high = expected x (1 + band)."""
    prefill_band: float
    """The same for prefill."""
    basis: dict[str, str]
    """For each constant, where it comes from ("assumed", "read test", "fitted to 3 measurements")."""


def default_constants(hardware: Hardware) -> SpeedConstants:
    """Constants before calibration: the hardware's own read test and link latency where
    published, otherwise round assumptions that the catalog's measurements replace."""
    basis = {k: "assumed" for k in ("fixed_ms_graphs", "fixed_ms_eager", "spec_ms", "batch_ms_per_token",
                                    "acceptance", "decode_band", "prefill_band", "bandwidth_fraction")}
    fraction = DEFAULT_BANDWIDTH_FRACTION
    if hardware.measured_bandwidth_gb_s:
        fraction = min(1.0, hardware.measured_bandwidth_gb_s / hardware.memory_bandwidth_gb_s)
        basis["bandwidth_fraction"] = "published read test"
    latency, basis["allreduce_us"] = ASSUMED_ALLREDUCE_US, "assumed"
    if hardware.link and hardware.link.latency_us:
        latency, basis["allreduce_us"] = hardware.link.latency_us, "published link latency"
    peak = tensor_peak_flops(hardware)
    basis["prefill_flops_per_node"] = f"{ASSUMED_PREFILL_MFU:.0%} of the tensor peak (assumed)" if peak else "unknown"
    return SpeedConstants(
        bandwidth_fraction=fraction, fixed_ms_graphs=ASSUMED_FIXED_MS_GRAPHS, fixed_ms_eager=ASSUMED_FIXED_MS_EAGER,
        spec_ms=ASSUMED_SPEC_MS, batch_ms_per_token=ASSUMED_BATCH_MS_PER_TOKEN, allreduce_us=latency,
        link_gb_s=hardware.link.bandwidth_gb_s if hardware.link else None, acceptance=ASSUMED_ACCEPTANCE,
        prefill_flops_per_node=peak * ASSUMED_PREFILL_MFU if peak else None, decode_band=ASSUMED_BAND,
        prefill_band=ASSUMED_BAND, basis=basis)


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
    """Decoder layers (all-reduce count); None when unknown."""
    eager: bool
    """No CUDA graphs."""
    spec_tokens: int = 0
    """Tokens proposed per pass (0 without speculation)."""
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
    batch_ms: float
    allreduce_ms: float
    tokens_per_pass: float
    """Tokens one pass yields per stream."""
    ceiling_bits: float = 0.0
    """Bits per active weight the ceiling counts (`ceiling_bits`)."""
    streams: int = 1
    tables: str = ""
    """Per-token tables left out of the step (unknown bytes); "" for none."""

    @property
    def step_ms(self) -> float:
        """Time of one pass of the big model."""
        return (self.weights_ms + self.kv_ms + self.draft_ms + self.fixed_ms + self.spec_ms + self.batch_ms
                + self.allreduce_ms)


def tokens_per_pass(spec_tokens: int, measured_acceptance: float | None, assumed: float) -> float:
    """Tokens one pass yields: 1 + k x r, with r the share of proposed tokens accepted
    (vLLM's accepted / drafted): the recipe's own when published, else `assumed`."""
    rate = measured_acceptance if measured_acceptance is not None else assumed
    return 1 + spec_tokens * rate


def params_read_per_pass(inputs: DecodeInputs, tokens_verified: int) -> float:
    """Parameters one pass reads. Verifying several tokens at once routes them to more
    experts: n tokens each picking k of E experts touch E x (1 - (1 - k/E)^n) of them."""
    experts, per_token = inputs.routed_experts, inputs.experts_per_token
    if not experts or not per_token or experts <= per_token or tokens_verified <= 1:
        return inputs.active_params
    expert_params = max(inputs.total_params - inputs.active_params, 0.0) / (experts - per_token)
    dense_params = max(inputs.active_params - per_token * expert_params, 0.0)
    touched = experts * (1 - (1 - per_token / experts) ** tokens_verified)
    return dense_params + max(touched, per_token) * expert_params


def ceiling_bits(inputs: DecodeInputs) -> float:
    """Bits per active weight the ceiling assumes: the nominal bits, or fewer if the file stores fewer."""
    return min(inputs.nominal_bits, inputs.stored_bits)


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


def estimate_decode(inputs: DecodeInputs, bandwidth_gb_s: float, constants: SpeedConstants) -> DecodeEstimate:
    """The expected decode speed with its range, from the calibrated spread of the model's errors.
    Without speculation the high end never passes the ceiling (nothing beats reading the weights)."""
    return _decode(inputs, bandwidth_gb_s, constants, constants.decode_band)


def read_ms(inputs: DecodeInputs, bandwidth_gb_s: float, c: SpeedConstants) -> tuple[float, float, float]:
    """(weights, KV, draft) milliseconds one pass spends reading memory on one node."""
    effective = bandwidth_gb_s * 1e9 * c.bandwidth_fraction
    verified = inputs.streams * (inputs.spec_tokens + 1)
    weights_ms = params_read_per_pass(inputs, verified) * inputs.stored_bits / 8 / inputs.tp / effective * 1e3
    # Pipeline stages run one after another for a single stream: each reads its own KV.
    kv_ms = inputs.kv_bytes_read * inputs.streams * inputs.pp / effective * 1e3
    draft_ms = inputs.draft_bytes_per_pass / effective * 1e3
    return weights_ms, kv_ms, draft_ms


def link_ms(inputs: DecodeInputs, c: SpeedConstants) -> float:
    """Two all-reduces per layer across the TP nodes, plus one hand-over per pipeline boundary."""
    message = inputs.streams * (inputs.spec_tokens + 1) * (inputs.hidden_size or 0) * ACTIVATION_BYTES
    tp_us = 2 * (inputs.layers or 0) * allreduce_us(c, inputs.tp, message)
    pp_us = (inputs.pp - 1) * c.allreduce_us
    return (tp_us + pp_us) / 1e3


def _decode(inputs: DecodeInputs, bandwidth_gb_s: float, c: SpeedConstants, band: float = 0.0) -> DecodeEstimate:
    weights_ms, kv_ms, draft_ms = read_ms(inputs, bandwidth_gb_s, c)
    fixed_ms = (c.fixed_ms_eager if inputs.eager else c.fixed_ms_graphs) * inputs.pp
    spec_ms = c.spec_ms if inputs.spec_tokens else 0.0
    batch_ms = (inputs.streams - 1) * (inputs.spec_tokens + 1) * c.batch_ms_per_token
    allreduce = link_ms(inputs, c)
    tokens = tokens_per_pass(inputs.spec_tokens, inputs.acceptance, c.acceptance)
    bits = ceiling_bits(inputs)
    ceiling = decode_ceiling(inputs.active_params, bits, inputs.tp, bandwidth_gb_s)
    step_ms = weights_ms + kv_ms + draft_ms + fixed_ms + spec_ms + batch_ms + allreduce
    expected = inputs.streams * tokens / step_ms * 1e3
    high = expected * (1 + band)
    if inputs.spec_tokens == 0 and inputs.streams == 1:
        high = min(high, max(ceiling, expected))
    return DecodeEstimate(ceiling, expected, expected / (1 + band), high, weights_ms, kv_ms, draft_ms, fixed_ms,
                          spec_ms, batch_ms, allreduce, tokens, bits, inputs.streams, inputs.tables)


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


def prefill_link_s_per_token(nodes: int, attention: Attention | None, link_gb_s: float | None) -> float:
    """Seconds of link time per prompt token under TP: two all-reduces per layer, each moving
    2 (n-1)/n x the token's hidden state (bf16)."""
    if nodes <= 1 or not link_gb_s or attention is None or not attention.hidden_size:
        return 0.0
    moved = 2 * attention.layers * 2 * (nodes - 1) / nodes * attention.hidden_size * ACTIVATION_BYTES
    return moved / (link_gb_s * 1e9)


def estimate_prefill(nodes: int, active_params: float, attention: Attention | None,
                     attended_tokens: float, constants: SpeedConstants) -> float | None:
    """Prompt tokens per second across the cluster, or None without an effective rate."""
    if constants.prefill_flops_per_node is None:
        return None
    flops = prefill_flops_per_token(active_params, attention, attended_tokens)
    seconds = flops / (nodes * constants.prefill_flops_per_node)
    return 1 / (seconds + prefill_link_s_per_token(nodes, attention, constants.link_gb_s))


def prefill_range(rate: float, constants: SpeedConstants) -> tuple[float, float]:
    """(low, high) prompt tok/s around an estimated rate, from the calibrated spread."""
    return rate / (1 + constants.prefill_band), rate * (1 + constants.prefill_band)
