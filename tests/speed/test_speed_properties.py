"""Properties the speed model must keep whatever the inputs (hypothesis)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.speed.constants import SpeedConstants
from sparkadvisor.core.speed.decode import DecodeInputs, estimate_decode
from sparkadvisor.core.workload import AGENTIC

CONSTANTS = SpeedConstants(
    engine="vllm", bandwidth_fraction=0.85, weight_penalty={"nvfp4": 0.1}, kv_ms_per_gb=5.0,
    compute_ms_per_gflop=0.02, fixed_ms=1.0, layer_ms=0.1, eager_ms_per_layer=0.6, spec_ms_per_step=1.0,
    allreduce_us=30.3, link_gb_s=19.0, acceptance=0.64, expert_spread=0.5, prefill_ms_per_gflop={"bf16": 0.02},
    expert_prefill_factor=2.0, prefill_attention_ms_per_gflop=0.02, prefill_kv_ms_per_gb=0.05,
    prefill_weight_ms_per_gb=4.3, decode_band=0.25, aggregate_band=0.3,
    prefill_band=0.5)


@st.composite
def plain_inputs(draw: st.DrawFn) -> DecodeInputs:
    """Decode inputs without speculation, one stream."""
    total = draw(st.floats(1e9, 1e12))
    experts = draw(st.one_of(st.none(), st.integers(2, 512)))
    return DecodeInputs(
        active_params=draw(st.floats(0.01, 1.0)) * total, total_params=total, routed_experts=experts,
        experts_per_token=draw(st.integers(1, experts)) if experts else None,
        nominal_bits=draw(st.sampled_from([4, 8, 16])), stored_bits=draw(st.floats(2.0, 17.0)),
        tp=draw(st.integers(1, 4)), pp=draw(st.integers(1, 4)), kv_bytes_read=draw(st.floats(0, 1e10)),
        layers=draw(st.one_of(st.none(), st.integers(1, 128))), eager=draw(st.booleans()),
        hidden_size=draw(st.one_of(st.none(), st.integers(256, 16384))),
    )


@st.composite
def constants(draw: st.DrawFn) -> SpeedConstants:
    return replace(CONSTANTS, bandwidth_fraction=draw(st.floats(0.3, 1.0)), fixed_ms=draw(st.floats(0, 50)),
                   layer_ms=draw(st.floats(0, 1)), eager_ms_per_layer=draw(st.floats(0, 2)),
                   decode_band=draw(st.floats(0.1, 1.0)))


@settings(deadline=None)  # pure arithmetic; a loaded 2-core machine can stall one example past 200 ms
@given(plain_inputs(), constants(), st.floats(100, 8000))
def test_ceiling_never_below_expected_without_speculation(inputs: DecodeInputs, c: SpeedConstants,
                                                          bandwidth: float) -> None:
    estimate = estimate_decode(inputs, bandwidth, c)
    assert estimate.expected_tok_s <= estimate.ceiling_tok_s * (1 + 1e-9)
    assert estimate.high_tok_s <= estimate.ceiling_tok_s * (1 + 1e-9)
    assert estimate.low_tok_s <= estimate.expected_tok_s <= estimate.high_tok_s


@settings(deadline=None)
@given(plain_inputs(), st.floats(0, 1e10), st.integers(0, 8))
def test_more_kv_read_never_raises_speed(inputs: DecodeInputs, more_bytes: float, spec_tokens: int) -> None:
    inputs = replace(inputs, spec_tokens=spec_tokens)
    shorter = estimate_decode(inputs, 273, CONSTANTS)
    longer = estimate_decode(replace(inputs, kv_bytes_read=inputs.kv_bytes_read + more_bytes), 273, CONSTANTS)
    assert longer.expected_tok_s <= shorter.expected_tok_s


@settings(max_examples=40, deadline=None)
@given(build=st.integers(0, 1000), nodes=st.integers(1, 4), context=st.integers(1, 1_000_000),
       more=st.integers(1, 1_000_000))
def test_more_context_never_raises_decode_speed(index, build: int, nodes: int, context: int, more: int) -> None:
    chosen = index.catalog.builds[build % len(index.catalog.builds)]
    cluster = Cluster(index.hardware["dgx-spark"], nodes)
    short = evaluate_build(index, chosen, cluster, AGENTIC.changed(context_tokens=context))
    long = evaluate_build(index, chosen, cluster, AGENTIC.changed(context_tokens=context + more))
    if short.decode is not None:
        assert long.decode is not None
        assert long.decode.expected_tok_s <= short.decode.expected_tok_s
        assert long.decode.ceiling_tok_s == short.decode.ceiling_tok_s


@settings(max_examples=30, deadline=None)
@given(build=st.integers(0, 1000), nodes=st.integers(1, 3), more=st.integers(1, 3))
def test_more_nodes_never_raise_weights_per_node(index, build: int, nodes: int, more: int) -> None:
    chosen = index.catalog.builds[build % len(index.catalog.builds)]
    hardware = index.hardware["dgx-spark"]
    few = evaluate_build(index, chosen, Cluster(hardware, nodes), AGENTIC)
    many = evaluate_build(index, chosen, Cluster(hardware, min(nodes + more, hardware.max_nodes)), AGENTIC)
    assert many.weights_per_node <= few.weights_per_node


@given(plain_inputs(), st.integers(1, 8), st.integers(1, 16))
def test_batching_never_raises_per_stream_speed(inputs: DecodeInputs, spec: int, streams: int) -> None:
    inputs = replace(inputs, spec_tokens=spec)
    one = estimate_decode(inputs, 273, CONSTANTS)
    many = estimate_decode(replace(inputs, streams=streams), 273, CONSTANTS)
    assert many.expected_tok_s / streams <= one.expected_tok_s * (1 + 1e-9)


@given(plain_inputs(), st.integers(2, 64))
def test_a_batch_never_reads_fewer_weights_than_one_token(inputs: DecodeInputs, streams: int) -> None:
    one = estimate_decode(inputs, 273, CONSTANTS)
    many = estimate_decode(replace(inputs, streams=streams), 273, CONSTANTS)
    assert many.weights_ms >= one.weights_ms
    if inputs.routed_experts and inputs.experts_per_token:
        assert one.experts_read <= many.experts_read <= inputs.routed_experts


@given(plain_inputs())
def test_eager_mode_is_never_faster_than_cuda_graphs(inputs: DecodeInputs) -> None:
    graphs = estimate_decode(replace(inputs, eager=False), 273, CONSTANTS)
    eager = estimate_decode(replace(inputs, eager=True), 273, CONSTANTS)
    assert eager.expected_tok_s <= graphs.expected_tok_s


@given(plain_inputs())
@settings(max_examples=50, deadline=None)
def test_the_steps_own_cost_is_paid_once_however_the_layers_are_split_into_stages(inputs: DecodeInputs) -> None:
    """vLLM schedules and samples once a step: splitting the layers into pipeline stages moves no fixed cost
    (the hand-overs are the link's; it used to multiply the step's own cost by the stages, so four Sparks in a
    pipeline came out slower than one)."""
    one = estimate_decode(replace(inputs, pp=1), 273, CONSTANTS)
    split = estimate_decode(replace(inputs, pp=4), 273, CONSTANTS)
    assert split.fixed_ms == one.fixed_ms
