"""Decode: one step (a pass of the big model) reads every active weight once, so the ceiling
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
"""

from __future__ import annotations

import math
from functools import lru_cache

from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Build, DecodeRead, Recipe
from sparkadvisor.core.speed.constants import ACTIVATION_BYTES, SpeedConstants


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
    drafter: str = ""
    """Whose drafter proposes the tokens (`drafter_key`): recipes of one drafter share its published
    acceptance; "" without speculation."""
    counted_read: DecodeRead | None = None
    """The build's bytes per token counted tensor by tensor for this engine's split, when counted: the
    weights term reads these instead of active parameters x average stored bits."""

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
    slow_route: str = ""
    """The caveat (its cite) reporting this build's engine far slower than its reads (`caveats.slow_route`);
    "" for none."""

    @property
    def bound(self) -> bool:
        """The expected figure is an upper bound, not a prediction (no range): a per-token table's read is left
        out, or a caveat reports the route slower than the model's reads."""
        return bool(self.tables or self.slow_route)

    @property
    def bound_reason(self) -> str:
        """Why the expected figure is a bound, in a clause; "" when it is a prediction."""
        if self.tables:
            return f"the {self.tables} table every token reads is left out: its bytes are unpublished"
        if self.slow_route:
            return f"{self.slow_route} reports this engine far slower than what the model reads"
        return ""

    @property
    def step_ms(self) -> float:
        """Time of one pass of the big model."""
        return (self.weights_ms + self.kv_ms + self.draft_ms + self.fixed_ms + self.spec_ms + self.compute_ms
                + self.allreduce_ms)

    @property
    def per_stream_tok_s(self) -> float:
        """What each stream sees."""
        return self.expected_tok_s / self.streams


def drafter_key(build: str, method: str, draft_repo: str | None) -> str:
    """The drafter a recipe speculates with: its draft model's repo, else the build's own heads (MTP
    layers or a fused DSpark block shipped in the checkpoint) under the method that runs them."""
    return draft_repo or f"{build}:{method}"


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
    counted = counted_for(read, engine)
    return None if counted is None else bandwidth_gb_s / counted.per_rank_gb(tp)


def read_under(build: Build, recipe: Recipe | None) -> DecodeRead | None:
    """The counted read in force: the recipe's, where its launch loads another layout than the checkpoint's,
    else the build's (None when nobody counted it)."""
    return recipe.decode_read if recipe is not None and recipe.decode_read is not None else build.decode_read


def counted_for(read: DecodeRead | None, engine: str) -> DecodeRead | None:
    """The build's counted read where it was counted for `engine`'s split of the projections, else None."""
    return read if read is not None and read.engine == engine else None


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
                    tokens_per_pass(inputs.spec_tokens, inputs.acceptance, c.acceptance_for(inputs.drafter)))


def read_ms(inputs: DecodeInputs, bandwidth_gb_s: float, c: SpeedConstants,
            cost: PassCost | None = None) -> tuple[float, float, float, float]:
    """(weights, KV, draft milliseconds, routed experts touched) of one pass on one node (`cost`: the
    pass's `pass_cost`, when already worked out)."""
    cost = cost if cost is not None else pass_cost(inputs, c)
    return _read_ms(cost, inputs.stored_bits, inputs.weight_class, inputs.draft_bytes_per_pass, inputs.tp,
                    bandwidth_gb_s, c, inputs.counted_read, inputs.experts_per_token)


def counted_gb_per_pass(read: DecodeRead, tp: int, experts_read: float, per_token: int | None) -> float:
    """GB one rank reads in a pass from the build's counted read: the routed experts' share grows to the
    union of experts the pass's tokens route to (`experts_read` of `per_token` per layer), the rest is
    read once whatever the number of tokens."""
    return sum(counted_parts_gb(read, tp, experts_read, per_token))


def counted_parts_gb(read: DecodeRead, tp: int, experts_read: float, per_token: int | None) -> tuple[float, float]:
    """(GB read as stored beside the experts, GB of routed experts) one rank reads in a pass from a counted
    read; a read that does not count its experts apart is all in the second part."""
    routed = read.routed_gb
    if not routed:
        return 0.0, read.split_gb / tp + read.replicated_gb
    scale = experts_read / per_token if experts_read and per_token else 1.0
    return (read.split_gb - routed) / tp + read.replicated_gb, routed * scale / tp


def weights_parts_ms(cost: PassCost, stored_bits: float, tp: int, bandwidth_gb_s: float, c: SpeedConstants,
                     counted: DecodeRead | None = None, per_token: int | None = None) -> tuple[float, float]:
    """(ms reading weights no dequantization overhead applies to, ms reading weights in the build's own
    format) of one pass on one node, at the effective bandwidth. Without a counted read every weight is in
    the format; with one, the format is the routed experts' (the quantized part the build is named for),
    and the rest (BF16 or FP8 projections beside them) is read at the plain rate."""
    effective = bandwidth_gb_s * 1e9 * c.bandwidth_fraction
    if counted is None:
        return 0.0, cost.params_read * stored_bits / 8 / tp / effective * 1e3
    plain, own = counted_parts_gb(counted, tp, cost.experts_read, per_token)
    return plain * 1e9 / effective * 1e3, own * 1e9 / effective * 1e3


def _read_ms(cost: PassCost, stored_bits: float, weight_class: str, draft_bytes: float, tp: int,
             bandwidth_gb_s: float, c: SpeedConstants, counted: DecodeRead | None = None,
             per_token: int | None = None) -> tuple[float, float, float, float]:
    """`read_ms` from the pass cost and the fields of the inputs that the weights' format sets; a counted
    read (`schema.DecodeRead`) replaces parameters x average stored bits, and only its routed experts pay
    the format's dequantization overhead."""
    plain, own = weights_parts_ms(cost, stored_bits, tp, bandwidth_gb_s, c, counted, per_token)
    weights_ms = plain + own * (1 + c.weight_penalty.get(weight_class, 0.0))
    draft_ms = draft_bytes / (bandwidth_gb_s * 1e9 * c.bandwidth_fraction) * 1e3
    return weights_ms, cost.kv_ms, draft_ms, cost.experts_read


def fixed_ms(inputs: DecodeInputs, c: SpeedConstants) -> float:
    """The step's fixed cost: once a step, and one per layer (more without CUDA graphs). The step's own cost is
    not paid again per pipeline stage: vLLM's engine schedules and samples once a step however many stages the
    layers are split into (each stage's layers pay their own per-layer cost, and `link_ms` the hand-overs)."""
    per_layer = c.layer_ms + (c.eager_ms_per_layer if inputs.eager else 0.0)
    return c.fixed_ms + per_layer * (inputs.layers or 0)


def estimate_decode(inputs: DecodeInputs, bandwidth_gb_s: float, constants: SpeedConstants,
                    cost: PassCost | None = None) -> DecodeEstimate:
    """The expected decode speed with its range, from the calibrated spread of the model's errors.
    Without speculation the high end never passes the ceiling (nothing beats reading the weights).
    `cost` is the pass's `pass_cost`, when already worked out."""
    cost = cost if cost is not None else pass_cost(inputs, constants)
    return estimate_for_weights(inputs, cost, inputs.nominal_bits, inputs.stored_bits, inputs.weight_class,
                                inputs.draft_bytes_per_pass, bandwidth_gb_s, constants, inputs.counted_read)


def estimate_for_weights(inputs: DecodeInputs, cost: PassCost, nominal_bits: float, stored_bits: float,
                         weight_class: str, draft_bytes: float, bandwidth_gb_s: float,
                         c: SpeedConstants, counted: DecodeRead | None = None) -> DecodeEstimate:
    """`estimate_decode` for weights of their own format (nominal and stored bits, dequantization
    path, drafter bytes per pass, counted read) with the rest of `inputs`: every build of a model shares
    `inputs` and `cost` under one recipe, split, context and stream count, so a ranking makes them once."""
    weights, kv, draft, touched = _read_ms(cost, stored_bits, weight_class, draft_bytes, inputs.tp, bandwidth_gb_s, c,
                                           counted, inputs.experts_per_token)
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
