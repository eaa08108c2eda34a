"""The third stage, `decode_speed` -> `DecodeSpeed`: the decode step model (`core.speed.decode`) applied
to this build under its recipe, at the pool's KV read, beside the recipe's measurement.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from sparkadvisor.core.formats import FORMATS
from sparkadvisor.core.memo import once
from sparkadvisor.core.memory import Weights
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import DecodeRead, Hardware, Measurement, Model, Recipe, Speculative
from sparkadvisor.core.speed.constants import SpeedConstants
from sparkadvisor.core.speed.decode import (
    DecodeEstimate,
    DecodeInputs,
    PassCost,
    counted_for,
    drafter_key,
    estimate_decode,
    estimate_for_weights,
    pass_cost,
    read_bound,
    read_under,
    weight_class,
)
from sparkadvisor.core.stages.fit import Fit
from sparkadvisor.core.stages.kv_pool import KvPool, kv_bytes_read
from sparkadvisor.core.stages.recipe import measured
from sparkadvisor.core.units import GB
from sparkadvisor.core.workload import Workload

if TYPE_CHECKING:
    from sparkadvisor.core.index import BuildFacts

BLOCK_DRAFTERS = ("dflash", "dspark")
"""Drafters that propose their whole block in one pass (the others run once per proposed token)."""


@record(kw_only=False)
class DecodeSpeed:
    """Tokens per second for one stream: the model's estimate and the recipe's measurement."""

    estimate: DecodeEstimate | None
    """Ceiling, expected speed (all streams together) and range; None without active parameters."""
    measured: Measurement | None
    """The recipe's decode measurement at the workload's streams (single-stream or aggregate)."""
    tok_s: float | None
    """The speed each stream's turn is costed at: measured when the recipe measured it, else expected
    (`stream_speed`)."""
    eager: bool = False
    """The execution mode the estimate assumed (True: without CUDA graphs)."""
    streams: int = 1
    """Sequences decoding at once."""
    active_gb_per_node: float = 0.0
    """GB of weights the expected step reads per node: active parameters x the build's average stored
    bits / TP (what a build's read counted tensor by tensor is set beside)."""


def stream_speed(estimate: DecodeEstimate | None, measurement: Measurement | None, streams: int) -> float | None:
    """Tokens per second each stream sees: the measurement (single-stream, or aggregate / streams),
    else the estimate's."""
    if measurement is not None:
        return measurement.value if measurement.metric == "decode_tok_s" else measurement.value / streams
    return estimate.per_stream_tok_s if estimate else None


def decode_speed(*, facts: BuildFacts, hardware: Hardware, recipe: Recipe | None, fit: Fit, pool: KvPool,
                 workload: Workload, constants: SpeedConstants, eager: bool | None = None,
                 pass_terms: PassTerms | None = None) -> DecodeSpeed:
    """The decode estimate at the workload's context and streams, in the recipe's mode unless `eager`
    says otherwise, beside the recipe's measurement at those streams (`pass_terms`: the model's
    `shared_decode` at the pool's KV read, when already worked out)."""
    kv_read = pool.bytes_read
    streams = workload.streams
    mode = decode_mode(recipe, eager)
    # The inputs and what a pass costs beside the weights: once per model, recipe, split and KV read in a ranking.
    shared = pass_terms or once(("decode pass", id(facts.model), id(recipe), fit.tp, fit.pp, kv_read, streams, mode,
                                 id(constants)), shared_decode, facts, recipe, fit.tp, fit.pp, kv_read, streams, mode,
                                constants)
    inputs, cost = shared
    estimate = None
    if inputs is not None and cost is not None:
        estimate = _estimate_for_build(facts, recipe, inputs, cost, hardware.memory_bandwidth_gb_s, constants)
    # The measurement of a run in the plan's own mode: a recipe may list an eager run beside its CUDA-graph one.
    found = (measured(recipe, "decode_tok_s", eager=mode) if streams == 1
             else measured(recipe, "aggregate_tok_s", streams, eager=mode))
    active_gb = (facts.model.params.active_b or 0) * facts.weights.stored_bits / 8 / fit.tp
    # Positional (see plan.evaluate): estimate, measured, tok_s, eager, streams, active_gb_per_node.
    return DecodeSpeed(estimate, found, stream_speed(estimate, found, streams), mode, streams, active_gb)


def decode_mode(recipe: Recipe | None, eager: bool | None) -> bool:
    """Whether decode runs without CUDA graphs: the user's --eager/--cuda-graphs, else the recipe's."""
    return eager if eager is not None else bool(recipe and recipe.enforce_eager)


PassTerms = tuple[DecodeInputs, PassCost] | tuple[None, None]
"""(decode inputs, `pass_cost`), or (None, None) without active parameters: `shared_decode`."""


def shared_decode(facts: BuildFacts, recipe: Recipe | None, tp: int, pp: int, kv_read: float, streams: int,
                  eager: bool, constants: SpeedConstants) -> PassTerms:
    """This build's decode inputs in mode `eager` and their `pass_cost`, (None, None) without active
    parameters. Only the weights' own fields differ between builds of the model (`_estimate_for_build`)."""
    inputs = decode_inputs(facts.model, facts.build.format, facts.weights, recipe, tp, pp, kv_read, streams,
                           read_under(facts.build, recipe))
    if inputs is None:
        return None, None
    if inputs.eager != eager:
        inputs = replace(inputs, eager=eager)
    return inputs, pass_cost(inputs, constants)


def _estimate_for_build(facts: BuildFacts, recipe: Recipe | None, inputs: DecodeInputs, cost: PassCost,
                        bandwidth_gb_s: float, constants: SpeedConstants) -> DecodeEstimate:
    """The decode estimate of this build's weights, with the inputs and pass cost of the model's."""
    weight_format, weights, active_b = facts.build.format, facts.weights, facts.model.params.active_b
    spec = recipe.speculative if recipe else None
    draft = (_draft_bytes(spec, weights, active_b / facts.model.params.total_b, inputs.tp)
             if spec and active_b is not None else 0.0)
    read = read_under(facts.build, recipe)
    counted = counted_for(read, constants.engine)
    estimate = estimate_for_weights(inputs, cost, FORMATS[weight_format].nominal_bits, weights.stored_bits,
                                    weight_class(weight_format), draft, bandwidth_gb_s, constants, counted)
    bound = read_bound(read, constants.engine, inputs.tp, bandwidth_gb_s)
    return estimate if bound is None else replace(estimate, read_bound_tok_s=bound)


DEFAULT_DECODE_CONTEXT = 2_000
"""Context assumed for a decode measurement that does not state one (a short prompt)."""


def decode_at(facts_model: Model, weight_format: str, weights: Weights, recipe: Recipe | None, tp: int, pp: int,
              pool: KvPool, hardware: Hardware, constants: SpeedConstants, m: Measurement,
              decode_read: DecodeRead | None = None) -> DecodeEstimate | None:
    """The estimate at a measurement's own context, streams and mode: the like-for-like prediction
    `show` prints beside it."""
    kv_read = kv_bytes_read(pool.shape, pool.bytes_per_token, m.context_tokens or DEFAULT_DECODE_CONTEXT)
    inputs = decode_inputs(facts_model, weight_format, weights, recipe, tp, pp, kv_read, m.streams, decode_read)
    if inputs is None:
        return None
    return estimate_decode(as_measured(inputs, m), hardware.memory_bandwidth_gb_s, constants)


def as_measured(inputs: DecodeInputs, m: Measurement) -> DecodeInputs:
    """The step inputs under the measurement's own conditions where it states them: its execution
    mode, and its own draft acceptance when the step speculates. The fit and `show`'s like-for-like
    prediction both compare a measurement with this."""
    if m.enforce_eager is not None:
        inputs = replace(inputs, eager=m.enforce_eager)
    if m.acceptance is not None and inputs.spec_tokens:
        inputs = replace(inputs, acceptance=m.acceptance)
    return inputs


def decode_inputs(model: Model, weight_format: str, weights: Weights, recipe: Recipe | None,
                  tp: int, pp: int, kv_read: float, streams: int = 1,
                  decode_read: DecodeRead | None = None) -> DecodeInputs | None:
    """What a decode step reads and runs for this build under this recipe (`decode_read`: the build's
    counted read, when it has one)."""
    params = model.params
    if params.active_b is None:
        return None
    spec = recipe.speculative if recipe else None
    attention = model.attention
    return DecodeInputs(  # positional (see plan.evaluate), one field a line in their order
        params.active_b * 1e9,  # active_params
        params.total_b * 1e9,  # total_params
        params.routed_experts,  # routed_experts
        params.experts_per_token,  # experts_per_token
        FORMATS[weight_format].nominal_bits,  # nominal_bits
        weights.stored_bits,  # stored_bits
        tp, pp, kv_read,  # tp, pp, kv_bytes_read
        attention.layers if attention else None,  # layers
        bool(recipe and recipe.enforce_eager),  # eager
        weight_class(weight_format),  # weight_class
        spec.tokens_per_pass if spec else 0,  # spec_tokens
        (1 if spec.method in BLOCK_DRAFTERS else spec.tokens_per_pass) if spec else 0,  # drafter_steps
        _draft_bytes(spec, weights, params.active_b / params.total_b, tp) if spec else 0.0,  # draft_bytes_per_pass
        spec.acceptance if spec else None,  # acceptance
        attention.hidden_size if attention else None,  # hidden_size
        streams,  # streams
        _tables_label(model) if model.tables else "",  # tables
        drafter_key(recipe.build, spec.method, spec.draft_repo) if recipe and spec else "",  # drafter
        counted_for(decode_read, recipe.engine if recipe else "vllm"),  # counted_read (vLLM's split without a recipe)
    )


def _tables_label(model: Model) -> str:
    """"PLE", "Engram" or "PLE + Engram": the per-token tables a decode step reads."""
    return " + ".join(dict.fromkeys(t.kind.upper() if t.kind == "ple" else t.kind.title() for t in model.tables))


def _draft_bytes(spec: Speculative, weights: Weights, active_share: float, tp: int) -> float:
    """Bytes the drafter reads per pass on one node. An MTP head is one more layer of the
    model, so each proposed token reads its active share (the model's active / total); a
    DFlash or DSpark drafter proposes the whole block in one pass; other drafts (a separate
    model under the mtp method too, such as Gemma 4's assistant) run per token."""
    if spec.method == "mtp" and not spec.draft_repo:
        return weights.mtp_bytes * min(active_share, 1.0) / tp * spec.tokens_per_pass
    draft = (spec.draft_size_gb or 0.0) * GB / tp
    return draft if spec.method in BLOCK_DRAFTERS else draft * spec.tokens_per_pass
