"""The speed steps: decode ceiling and estimate, what was measured, first token and turn."""

from __future__ import annotations

from sparkadvisor.core.explain.step import Basis, Step, measurement_text, source_text
from sparkadvisor.core.plan import Plan, default_engine
from sparkadvisor.core.schema import DecodeRead, Measurement
from sparkadvisor.core.speed.chunks import prefill_chunk
from sparkadvisor.core.speed.decode import counted_gb_per_pass, counted_parts_gb, drafter_key, weight_class
from sparkadvisor.core.speed.prefill import (
    PrefillInputs,
    indexer_keys_per_token,
    prefill_cost,
    prefill_precision,
    prefill_range,
)
from sparkadvisor.core.stages.decode import DEFAULT_DECODE_CONTEXT
from sparkadvisor.core.stages.first_token import measured_attended
from sparkadvisor.core.targets import turn_bound_text
from sparkadvisor.core.units import fmt_seconds


def decode_steps(plan: Plan) -> list[Step]:
    d, p = plan.decode, plan.model.params
    if d is None:
        return [Step("ceiling", "decode ceiling", "Active parameters are unpublished: the decode ceiling is unknown.",
                     "unknown")]
    bits = d.ceiling_bits
    per_token = p.active_b * bits / 8 if p.active_b else 0
    hw = plan.cluster.hardware
    ceiling = Step("ceiling", "decode ceiling",
                   f"{p.active_b:g}B active x {bits:.3g} bits = {per_token:.1f} GB per token; / {plan.tp} = "
                   f"{per_token / plan.tp:.2f} GB per node; {hw.memory_bandwidth_gb_s:g} GB/s / "
                   f"{per_token / plan.tp:.2f} GB = {d.ceiling_tok_s:.0f} tok/s ceiling (bandwidth only)."
                   + _counted_text(plan), "derived")
    steps = [ceiling, Step("expected", "expected decode", _expected_text(plan), "estimated"),
             Step("constants", "whose constants", _constants_text(plan), "estimated")]
    if plan.tp > 1:
        steps.append(Step("nodes", "what the nodes buy", _nodes_text(plan), "estimated"))
    if plan.decode_measured is not None:
        steps.append(Step("measured", "measured decode", _measured_text(plan, plan.decode_measured), "measured"))
    return steps


def _counted_text(plan: Plan) -> str:
    """The build's read counted tensor by tensor, when someone counted it: the bound a step without
    speculation cannot pass, beside what the expected step counts."""
    d, read = plan.decode, plan.decode_read
    if d is None or d.read_bound_tok_s is None or read is None:
        return ""
    per_rank = read.per_rank_gb(plan.tp)
    whose = " as this recipe's launch loads it" if plan.recipe and plan.recipe.decode_read is read else ""
    return (f" Counted tensor by tensor{whose} ({read.note}), a token reads {read.split_gb:.2f} GB split {plan.tp} "
            f"ways + {read.replicated_gb:.2f} GB every rank keeps whole = {per_rank:.2f} GB per node: "
            f"{plan.cluster.hardware.memory_bandwidth_gb_s:g} GB/s / {per_rank:.2f} GB = {d.read_bound_tok_s:.0f} "
            f"tok/s without speculative decoding (active x average stored bits would say "
            f"{plan.speed.active_gb_per_node:.2f} GB per node). The expected step below reads these counted bytes"
            + _union_text(plan, read) + ".")


def _union_text(plan: Plan, read: DecodeRead) -> str:
    """How a pass of several tokens grows the counted routed experts to the union they route to."""
    d, per_token = plan.decode, plan.model.params.experts_per_token
    if d is None or not read.routed_gb or not per_token or d.experts_read <= per_token:
        return ""
    where = f" ({read.routed_gb / plan.tp:.2f} GB per node)" if plan.tp > 1 else ""
    return (f"; a pass of several tokens reads the union of the experts they route to, {d.experts_read:.1f} of "
            f"{plan.model.params.routed_experts} per layer, so the routed {read.routed_gb:.2f} GB{where} grows "
            f"{d.experts_read / per_token:.1f}x")


def _speculates(plan: Plan) -> bool:
    return bool(plan.recipe and plan.recipe.speculative)


def _speculation_text(plan: Plan) -> str:
    """The speculative configuration a step assumes: the recipe's method and tokens, whose acceptance, and
    whether the recipe's source states it or it is assumed from the checkpoint's default."""
    spec = plan.recipe.speculative if plan.recipe else None
    if spec is None:
        return ""
    c = plan.constants
    if spec.acceptance is not None:
        rate, whose = spec.acceptance, "the recipe's published acceptance"
    else:
        key = drafter_key(plan.recipe.build, spec.method, spec.draft_repo) if plan.recipe else ""
        rate = c.acceptance_for(key)
        whose = c.basis.get(f"acceptance:{key}" if key in c.drafter_acceptance else "acceptance", "assumed")
    text = f"{spec.method} with {spec.tokens_per_pass} tokens per pass at {rate:.0%} accepted ({whose})"
    if spec.assumed:
        text += f"; assumed, not stated by the recipe's source: {spec.assumed}"
    return text


def _constants_text(plan: Plan) -> str:
    """Which engine's constants the estimates used, in which mode, and how many measurements fitted them."""
    c = plan.constants
    mode = _mode(plan, "eager (no CUDA graphs)")
    origin = _engine_origin(plan)
    fitted = (f"fixed costs {c.basis.get('fixed_ms')}; the rates shared by all engines "
              f"{c.basis.get('kv_ms_per_gb')} on this hardware"
              if c.decode_measurements or "fitted" in c.basis.get("fixed_ms", "") else
              f"{c.basis.get('engine') or c.basis.get('fixed_ms', 'assumed')}")
    return (f"{c.engine} ({origin}), {mode}, on {plan.cluster.hardware.name}: {fitted}; prefill "
            f"{c.basis.get('prefill_ms_per_gflop', 'assumed')}. `sparkadvisor fidelity` shows how these constants "
            "predict each measurement left out of the fit.")


def _mode(plan: Plan, eager: str) -> str:
    """The execution mode the fixed costs are taken for: `eager` or CUDA graphs, or, on hardware
    without CUDA, the CUDA-graph costs standing in for its own."""
    if not plan.cluster.hardware.cuda:
        return "no CUDA here: CUDA-graph costs stand in"
    return eager if plan.speed.eager else "CUDA graphs"


def _engine_origin(plan: Plan) -> str:
    """Why the estimates use this engine: the recipe's, the build's default, or the --engine setting."""
    if plan.recipe:
        return "the recipe's engine"
    if plan.constants.engine == default_engine(plan.build, plan.cluster.hardware):
        return "the build's default engine: no recipe for this cluster; --engine picks another"
    return "the --engine setting: no recipe for this cluster"


def _measured_text(plan: Plan, m: Measurement) -> str:
    """The measurement beside the model's prediction at the measurement's own context, streams and mode."""
    d, against = plan.decode, plan.measured_against
    assert d is not None and against is not None
    expected, low, high = against
    where = "inside" if plan.measured_side == "inside" else "OUTSIDE"
    eager = m.enforce_eager if m.enforce_eager is not None else bool(plan.recipe and plan.recipe.enforce_eager)
    conditions = (f"{m.context_tokens or DEFAULT_DECODE_CONTEXT:,} tokens"
                  f"{'' if m.context_tokens else ' (assumed: not stated)'}, {m.streams} stream"
                  f"{'s' if m.streams > 1 else ''}, {'eager' if eager else 'CUDA graphs'}")
    head = (f"Measured {measurement_text(m, lambda v: f'{v:g}')} tok/s ({source_text(m)}) at its own conditions "
            f"({conditions}); ")
    if d.tables:
        return (head + f"the model's {expected:.0f} tok/s there leaves out the {d.tables} table every token reads "
                f"(its bytes per token are unpublished), so it is a bound, not a prediction: unknown, and "
                f"`sparkadvisor fidelity` lists this row apart, never as a pass; {plan.efficiency:.0%} of the ceiling.")
    if d.slow_route:
        return (head + f"the model's {expected:.0f} tok/s there is what the reads allow, and {d.slow_route} reports "
                f"this engine far slower than its reads, so the model gives a bound, not a prediction: `sparkadvisor "
                f"fidelity` lists this row apart and the fit leaves it out; {plan.efficiency:.0%} of the ceiling.")
    text = (head + f"the model predicts {expected:.0f} tok/s there, range {low:.0f}-{high:.0f}: {where} the "
            f"predicted range; {plan.efficiency:.0%} of the ceiling.")
    bound = d.read_bound_tok_s
    above = bound is not None and m.streams == 1 and m.value > bound
    spec = plan.recipe.speculative if plan.recipe else None
    if above and spec is None:
        text += (f" It is above the {bound:.0f} tok/s a step without speculation can reach reading the counted "
                 f"bytes at rated bandwidth, so the measured stack decodes speculatively; the recipe states no "
                 f"speculative configuration, so the model predicts it without one.")
    elif spec is not None and spec.assumed:
        reach = (f" It is above the {bound:.0f} tok/s a step without speculation can reach reading the counted "
                 f"bytes at rated bandwidth, so the measured stack decodes speculatively." if above else "")
        text += (f"{reach} The recipe's source states no speculative configuration: the model assumes "
                 f"{spec.method} with {spec.tokens_per_pass} tokens ({spec.assumed}).")
    return text


def _expected_text(plan: Plan) -> str:
    d, c = plan.decode, plan.constants
    assert d is not None
    eager = plan.speed.eager
    mode = _mode(plan, "eager")
    layers = plan.model.attention.layers if plan.model.attention else None
    per_layer = c.layer_ms + (c.eager_ms_per_layer if eager else 0.0)
    counted = (f"{layers} layers x {per_layer:.2f} ms" if layers is not None
               else f"the {per_layer:.2f} ms a layer not counted: the layer count is unknown")
    fixed_note = (f"{mode}: {c.fixed_ms:.1f} ms + {counted}, {c.engine} constants "
                  f"{c.basis.get('fixed_ms')}" + (f"; eager {c.basis.get('eager_ms_per_layer')}" if eager else ""))
    penalty = c.weight_penalty.get(weight_class(plan.build.format), 0.0)
    read = plan.decode_read if d.read_bound_tok_s is not None else None
    per_token = plan.model.params.experts_per_token
    what = (f"{counted_gb_per_pass(read, plan.tp, d.experts_read, per_token):.2f} GB "
            "counted per node" if read is not None else f"{plan.weights.stored_bits:.2f} stored bits")
    # A counted read pays the format's overhead on its routed experts only (`speed.decode.weights_parts_ms`).
    part = "routed experts" if plan.model.params.routed_experts else "quantized projections"
    on = (f" on the {counted_parts_gb(read, plan.tp, d.experts_read, per_token)[1]:.2f} GB of {part}"
          if read is not None and read.routed_gb else "")
    parts = [("weights", d.weights_ms, f"{what} at {c.bandwidth_fraction:.0%} "
              f"of rated bandwidth, {c.basis.get('bandwidth_fraction')}"
              + (f", +{penalty:.0%} dequantization{on} ({c.basis.get('weight_penalty')})" if penalty else "")),
             ("KV", d.kv_ms, f"what attention reads at {plan.workload.context_tokens:,} tokens"
              f"{' x ' + str(d.streams) + ' streams' if d.streams > 1 else ''}, {c.basis.get('kv_ms_per_gb')}"),
             ("draft", d.draft_ms, ""),
             ("compute", d.compute_ms,
              f"the GEMMs of the tokens one pass verifies, {c.basis.get('compute_ms_per_gflop')}"),
             ("fixed", d.fixed_ms, fixed_note),
             ("speculation", d.spec_ms, c.basis.get("spec_ms_per_step", "")),
             ("all-reduce", d.allreduce_ms, _allreduce_note(plan))]
    shown = [(name, ms, note) for name, ms, note in parts
             if ms > 0 or name in ("weights", "fixed") or (name == "speculation" and d.tokens_per_pass > 1)]
    terms = " + ".join(f"{name} {ms:.1f} ms" + (f" ({note})" if note else "") for name, ms, note in shown)
    text = f"One step: {terms} = {d.step_ms:.1f} ms"
    if d.tables:
        text += f", plus the per-token {d.tables} table, unknown (its bytes per token are unpublished)"
    if d.tokens_per_pass > 1:
        text += f"; it yields {d.tokens_per_pass:.2f} tokens (speculative decoding: {_speculation_text(plan)})"
    shares = ", ".join(f"{name} {ms / d.step_ms:.0%}" for name, ms, _ in shown if ms / d.step_ms >= 0.005)
    if d.bound:
        each = f" across {d.streams} streams" if d.streams > 1 else ""
        why = f"the {d.tables} table's read is left out" if d.tables else d.bound_reason
        return (text + f": at most {d.expected_tok_s:.0f} tok/s{each}, a bound rather than a prediction ({why}), "
                f"so no range, and a target it reaches is unknown. Where the counted step goes: {shares}.")
    if d.streams > 1:
        return (text + f": {d.expected_tok_s:.0f} tok/s expected across {d.streams} streams, "
                f"{d.per_stream_tok_s:.1f} each (range {d.low_tok_s:.0f}-{d.high_tok_s:.0f} in all: "
                f"{c.basis.get('aggregate_band')}). Where the step goes: {shares}.")
    return (text + f": {d.expected_tok_s:.0f} tok/s expected, {d.expected_tok_s / d.ceiling_tok_s:.0%} of the "
            f"ceiling (range {d.low_tok_s:.0f}-{d.high_tok_s:.0f}: {c.basis.get('decode_band')}). "
            f"Where the step goes: {shares}.")


def _allreduce_note(plan: Plan) -> str:
    layers = plan.model.attention.layers if plan.model.attention else None
    if plan.tp == 1:
        return "no tensor parallelism" if plan.pp > 1 else "one node"
    if layers is None:
        return "layer count unknown: not counted"
    return f"2 x {layers} layers across {plan.tp} nodes, {plan.constants.basis.get('allreduce_us')}"


def _nodes_text(plan: Plan) -> str:
    d, c = plan.decode, plan.constants
    assert d is not None
    one_node_ms = d.weights_ms * plan.tp
    read = plan.decode_read if d.read_bound_tok_s is not None else None
    if read is not None:  # a counted read keeps some bytes whole on every rank: one node reads them once, not tp times
        plain, own = counted_parts_gb(read, 1, d.experts_read, plan.model.params.experts_per_token)
        penalty = c.weight_penalty.get(weight_class(plan.build.format), 0.0)
        effective = plan.cluster.hardware.memory_bandwidth_gb_s * c.bandwidth_fraction
        one_node_ms = (plain + own * (1 + penalty)) / effective * 1e3
    return (f"TP={plan.tp} cuts the weights each node reads per step from {one_node_ms:.1f} ms (one node) to "
            f"{d.weights_ms:.1f} ms, and costs {d.allreduce_ms:.1f} ms of all-reduces on the link; the fixed and "
            f"speculation costs ({d.fixed_ms + d.spec_ms:.1f} ms) do not shrink with more nodes.")


def _prefill_terms(plan: Plan, precision: str, tflops: float) -> str:
    """Where one prompt token's time goes, each term with its physical quantity, rate and basis."""
    c, p = plan.constants, plan.first.prefill_inputs
    cost = prefill_cost(p, c) if p is not None else None
    if p is None or cost is None:
        return "no rate for its tensor path"
    experts = f", experts at {c.expert_prefill_factor:g}x the cost" if p.expert_params else ""
    per_node = " per node" if p.nodes > 1 else ""
    terms = [f"GEMM {cost.gemm_ms:.3f} ms ({cost.gemm_gflop:.1f} GFLOP{per_node}{experts}, at {tflops:.0f} "
             f"TFLOPS on the {precision} tensor path {c.engine} takes for {plan.build.format}: "
             f"{c.basis.get(f'prefill:{precision}') or c.basis.get('prefill_ms_per_gflop')})"]
    if cost.attention_gflop:
        rate = c.prefill_attention_ms_per_gflop
        terms.append(f"attention FLOPs {cost.attention_ms:.3f} ms ({cost.attention_gflop:.2f} GFLOP attending to "
                     f"~{p.attended_tokens:,.0f} tokens, at {1 / rate if rate else 0:.0f} TFLOPS: "
                     f"{c.basis.get('prefill_attention', 'assumed')})")
    if cost.indexer_gflop:
        a = p.attention
        assert a is not None
        pool = f" (one key per {a.indexer_pool} tokens)" if a.indexer_pool > 1 else ""
        terms.append(f"indexer scoring {cost.indexer_ms:.3f} ms ({cost.indexer_gflop:.2f} GFLOP per node: "
                     f"{indexer_keys_per_token(a, p.attended_tokens):,.0f} earlier keys{pool} summed over its "
                     f"layers x {a.indexer_heads} heads x {a.indexer_head_dim}, FP8 in vLLM and replicated on every "
                     f"rank; at the attention rate, no FP8 speed-up assumed) + its FP32 logits {cost.logits_ms:.3f} ms "
                     f"({cost.logits_gb * 1e3:.1f} MB written and read back, at the read test)")
    elif cost.indexer_unknown:
        terms.append("indexer scoring unknown (index_n_heads is not in the catalog): not counted, so this rate "
                     "is optimistic at depth")
    if p.kv_gb:
        terms.append(f"K/V stream {cost.kv_ms:.3f} ms ({p.kv_gb:.2f} GB attended, read once per tile of queries, "
                     f"at {c.prefill_kv_ms_per_gb:.3f} ms/GB: {c.basis.get('prefill_kv', 'assumed')})")
    if p.chunk_tokens:
        terms.append(f"weights {cost.weights_ms:.3f} ms ({p.weight_gb * p.chunk_tokens:.1f} GB{per_node} read "
                     f"once per {p.chunk_tokens:,}-token chunk, at {c.prefill_weight_ms_per_gb:.2f} ms/GB: "
                     f"{c.basis.get('prefill_weight', 'the read test')})")
    else:
        terms.append("weights per chunk not counted (the engine's prefill chunk is unknown)")
    if cost.link_ms:
        hows = ["two all-reduces per layer"] if p.nodes > p.stages else []
        if p.stages > 1:
            hows.append("the hidden state handed to the next stage's layers")
        terms.append(f"link {cost.link_ms:.3f} ms ({' and '.join(hows)})")
    if p.ubatches:
        terms.append(_pipeline_text(p, cost.pipeline_ms, c.engine))
    return f"per prompt token {cost.total_ms:.3f} ms = " + " + ".join(terms)


def _pipeline_text(p: PrefillInputs, pipeline_ms: float, engine: str) -> str:
    """The pipeline's fill and drain: how many ubatches a batch keeps in flight over how many stages."""
    stages = p.stages
    if p.ubatches == 1:
        why = {"ollama": "Ollama hands llama.cpp one ubatch of a prompt at a time",
               "vllm": "the new tokens fill one chunk"}
        return (f"pipeline {pipeline_ms:.3f} ms ({why.get(engine, 'a batch holds one ubatch')}, so the {stages} "
                "stages take turns: one stage's pace)")
    if engine == "vllm":
        how = f"{p.ubatches} chunks of the prompt flow through them (vllm #38726), which fills and drains them once"
    else:
        how = f"{p.ubatches} ubatches a batch, each batch filling and draining them"
    return (f"pipeline {pipeline_ms:.3f} ms ({stages} stages, {how}: (ubatches + stages - 1) / ubatches = "
            f"{p.stage_factor:.2f}x a stage's time)")


def _chunks(m: Measurement, plan: Plan) -> str:
    """", chunk X tokens here vs Y there" when the prefill chunks differ."""
    here = plan.first.prefill_inputs.chunk_tokens if plan.first.prefill_inputs else None
    recipe = plan.recipe
    there = prefill_chunk(plan.constants.engine, recipe.extra_args if recipe else (), m.context_tokens,
                          m.chunk_tokens)
    return f", {here:,}-token chunks vs {there:,} measured" if here and there and here != there else ""


def _after(depth: int | None) -> str:
    return f" after {depth:,} cached tokens" if depth else ""


def first_token_steps(plan: Plan) -> list[Step]:
    w = plan.workload
    if plan.prefix_caching:
        reuse = (f"Prefix caching works: {w.prefix_reuse:.0%} of the {w.context_tokens:,}-token prompt is reused, "
                 f"{plan.uncached_tokens:,} {'token is' if plan.uncached_tokens == 1 else 'tokens are'} computed "
                 "per turn.")
    else:
        reuse = (f"Prefix caching is OFF ({plan.prefix_caching_note}): every turn recomputes all "
                 f"{w.context_tokens:,} tokens.")
    steps = [Step("prefix", "prefix caching", reuse, "stated" if not plan.prefix_caching else "assumed")]
    if plan.prefill_tok_s is None:
        steps.append(Step("ttft", "first token", "Prefill speed is unknown, so the first token is too.", "unknown"))
        return steps
    if plan.prefill_measured is not None:
        m = plan.prefill_measured
        rate = f"measured prefill {measurement_text(m, lambda v: f'{v:,.0f}')} tok/s ({source_text(m)})"
        basis: Basis = "measured"
        depth = measured_attended(m)
        if plan.prefill_basis == "scaled" and depth is not None and plan.first.prefill_inputs is not None:
            scale, here = plan.prefill_tok_s / m.value, plan.first.prefill_inputs.attended_tokens
            factor = f"{scale:.2f}" if scale >= 0.01 else f"{scale:.2g}"
            rate = (f"{plan.prefill_tok_s:,.0f} tok/s derived: the {rate} holds at its own depth (a "
                    f"{m.context_tokens:,}-token prompt{_after(m.depth_tokens)}, ~{depth:,.0f} attended tokens per "
                    f"prompt token); the model's own rate at this depth (~{here:,.0f}"
                    f" attended{_chunks(m, plan)}) over its rate there scales it x{factor} (depth moves the "
                    f"attention and indexer FLOPs and the K/V read; the chunk moves the weights read per token)")
            basis = "derived"
        elif depth is None:
            rate += ("; its prompt length is unstated, so its depth is unknown and it is used as measured at "
                     "this depth, unscaled")
    else:
        low, high = prefill_range(plan.prefill_tok_s, plan.constants)
        c = plan.constants
        precision = prefill_precision(plan.build.format, c.engine)
        rate_ms = c.prefill_ms_per_gflop.get(precision)
        tflops = 1 / rate_ms if rate_ms else 0.0
        span = ("no range: a bound" if plan.first_token_bound
                else f"range {low:,.0f}-{high:,.0f}: {c.basis.get('prefill_band', 'assumed')}")
        kind = "prefill at most" if plan.first_token_bound else "estimated prefill"
        rate = f"{kind} {plan.prefill_tok_s:,.0f} tok/s ({span}; {_prefill_terms(plan, precision, tflops)})"
        basis = "estimated"
    tokens = plan.uncached_tokens
    text = (f"{tokens:,} token{'' if tokens == 1 else 's'} / {rate} = {fmt_seconds(tokens / plan.prefill_tok_s)} "
            "to the first token.")
    if plan.ttft_measured is not None:
        m = plan.ttft_measured
        text = (f"Measured {measurement_text(m, fmt_seconds)} to the first token ({source_text(m)}) with "
                f"{m.cached_tokens:,} of {w.context_tokens:,} prompt tokens from the prefix cache; the arithmetic "
                f"gives: {text}")
        basis = "measured"
    if plan.first_token_bound:
        text += (f" {plan.first_token_bound_reason(plan.slow_route)}, so this is the soonest the first token comes, a "
                 "bound rather than a prediction: a target it reaches is unknown.")
    cold_s = plan.cold_ttft_s
    if plan.prefix_caching and cold_s is not None:
        text += (f" Uncached (a cold {w.context_tokens:,}-token prompt): {'at least ' * plan.first_token_bound}"
                 f"{fmt_seconds(cold_s)}.")
    steps.append(Step("ttft", "first token", text, basis))
    return steps


def turn_step(plan: Plan) -> Step:
    if plan.turn_s is None or plan.ttft_s is None or not plan.decode_tok_s:
        return Step("turn", "time per turn", "Time per turn is unknown.", "unknown")
    w = plan.workload
    if plan.turn_bound:
        first = f"at least {fmt_seconds(plan.ttft_s)}" if plan.first_token_bound else fmt_seconds(plan.ttft_s)
        speed = f"at most {plan.decode_tok_s:.1f}" if plan.decode_bound else f"{plan.decode_tok_s:.1f}"
        return Step("turn", "time per turn",
                    f"{first} + {w.output_tokens:,} tokens / {speed} tok/s = at least {fmt_seconds(plan.turn_s)} per "
                    f"turn ({turn_bound_text(plan)}).", "derived")
    return Step("turn", "time per turn",
                f"{fmt_seconds(plan.ttft_s)} + {w.output_tokens:,} tokens / {plan.decode_tok_s:.1f} tok/s = "
                f"{fmt_seconds(plan.turn_s)} per turn.", "derived")
