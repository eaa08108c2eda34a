"""A bench run held against the plan: the speed model's prediction for every figure. Pure.

The predictions come from the same estimators `show` uses (`estimate_prefill`,
`estimate_decode` with the constants calibrated for this hardware), at the bench's own
context and concurrency, so a measured figure is compared with what the model would have
said, never with another measurement.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from sparkadvisor.core.bench import BenchSpec, Collected, Figure, Rates, Step, figures
from sparkadvisor.core.plan import Plan
from sparkadvisor.core.speed.decode import estimate_decode
from sparkadvisor.core.speed.prefill import estimate_prefill, prefill_inputs, prefill_range
from sparkadvisor.core.stages.decode import decode_inputs
from sparkadvisor.core.stages.first_token import prefill_launch
from sparkadvisor.core.stages.kv_pool import kv_bytes_read

Verdict = Literal["inside", "below", "above", "unknown"]


@dataclass(frozen=True, slots=True)
class Prediction:
    """What the speed model expects for one figure, and its range."""

    expected: float
    low: float
    high: float
    acceptance: float | None = None
    """The draft acceptance it is predicted at when vLLM's counters gave one over the figure's own steps
    (None: the recipe's, as the plan has it)."""
    at_recipe: float | None = None
    """Beside a prediction at a counted acceptance: what the plan's own acceptance predicts."""
    bound: str = ""
    """Why `expected` is only a bound with no range, in a clause (a per-token table of unpublished size left out,
    an engine a caveat reports slow); "" for a prediction."""

    def verdict(self, value: float) -> Verdict:
        """Where a measured value falls against the range; "unknown" against a bound, which has none."""
        if self.bound:
            return "unknown"
        if value < self.low:
            return "below"
        return "above" if value > self.high else "inside"


def predict(plan: Plan, spec: BenchSpec, slow: str | None = None) -> dict[str, Prediction]:
    """Predictions by figure key (`aggregate_tok_s@N` per concurrency); figures the model
    cannot predict (no active parameters, no prefill rate) are absent. `slow`: the caveat reporting the engine
    that serves the run far slower (`caveats.slow_route` on the served engine); None: the plan's own."""
    slow = plan.slow_route if slow is None else slow
    found: dict[str, Prediction] = {}
    found.update(_first_token(plan, spec, slow))
    single = decode_prediction(plan, spec.context_tokens, 1, slow=slow)
    if single is not None:
        found["decode_tok_s"] = single
    for streams in sorted(set(spec.streams)):
        if streams > 1 and (group := decode_prediction(plan, spec.context_tokens, streams, slow=slow)) is not None:
            found[f"aggregate_tok_s@{streams}"] = group
    return found


def _prefill_rate(plan: Plan, attended: float, prompt: float) -> float | None:
    p = plan.model.params
    if p.active_b is None:
        return None
    inputs = plan.pool.inputs
    chunk, ubatches = prefill_launch(plan.constants.engine, plan.recipe, plan.pp, prompt,
                                     inputs.batched_tokens if inputs.batched_set else None)
    point = prefill_inputs(plan.cluster.nodes, p.active_b * 1e9, p.total_b * 1e9, p.routed_experts,
                           p.experts_per_token, plan.build.format, plan.model.attention, attended,
                           engine=plan.constants.engine, kv_cache_dtype=plan.fit.kv_cache_dtype,
                           weight_bytes=plan.weights.transformer_bytes, chunk_tokens=chunk,
                           extra_args=plan.recipe.extra_args if plan.recipe else (), ubatches=ubatches,
                           stages=plan.pp)
    return estimate_prefill(point, plan.constants)


def _first_token(plan: Plan, spec: BenchSpec, slow: str) -> dict[str, Prediction]:
    """Cold: every token computed, attending on average to half the prompt. Warm: only the new
    tokens (all of them when the plan says prefix caching is off), attending to the cached
    prefix plus half of themselves."""
    context = spec.context_tokens
    cold_rate = _prefill_rate(plan, context / 2, context)
    if cold_rate is None:
        return {}
    new = spec.new_tokens if plan.prefix_caching else context
    warm_rate = _prefill_rate(plan, context - new / 2, new) or cold_rate
    low, high = prefill_range(cold_rate, plan.constants)
    warm_low, warm_high = prefill_range(warm_rate, plan.constants)
    ratio = (context / cold_rate) / (new / warm_rate)
    band = 1 + max(plan.constants.prefill_sides)  # both rates err alike, so the wider side bounds the ratio
    bound = plan.first_token_bound_reason(slow)
    return {
        "prefill_tok_s": Prediction(cold_rate, low, high, bound=bound),
        "cold_ttft_s": Prediction(context / cold_rate, context / high, context / low, bound=bound),
        "warm_ttft_s": Prediction(new / warm_rate, new / warm_high, new / warm_low, bound=bound),
        "ratio": Prediction(ratio, ratio / band, ratio * band),
    }


def decode_prediction(plan: Plan, context: int, streams: int, acceptance: float | None = None,
                      slow: str | None = None) -> Prediction | None:
    """Per stream for one stream, all streams together for several (as the figures are), in the plan's
    execution mode; at `acceptance` instead of the recipe's when the plan speculates; a bound on an engine a
    caveat reports slow (`slow`, as `predict` takes it; None: the plan's own)."""
    kv_read = kv_bytes_read(plan.kv, plan.kv_bytes_per_token, context)
    inputs = decode_inputs(plan.model, plan.build.format, plan.weights, plan.recipe, plan.tp, plan.pp, kv_read,
                           streams, plan.decode_read)
    if inputs is None:
        return None
    inputs = replace(inputs, eager=plan.speed.eager)
    counted = acceptance if inputs.spec_tokens else None
    if counted is not None:
        inputs = replace(inputs, acceptance=counted)
    d = estimate_decode(inputs, plan.cluster.hardware.memory_bandwidth_gb_s, plan.constants)
    bound = replace(d, slow_route=plan.slow_route if slow is None else slow).bound_reason
    return Prediction(d.expected_tok_s, d.low_tok_s, d.high_tok_s, counted, bound=bound)


def prediction_for(figure: Figure, predictions: dict[str, Prediction]) -> Prediction | None:
    """The prediction a figure is held against, as made before the run."""
    key = f"{figure.key}@{figure.streams}" if figure.key == "aggregate_tok_s" else figure.key
    return predictions.get(key)


DECODE_FIGURES = ("decode_tok_s", "aggregate_tok_s")
"""The figures a drafter's acceptance moves."""


def held_against(figure: Figure, predictions: dict[str, Prediction], plan: Plan | None,
                 context: int) -> Prediction | None:
    """The prediction a measured figure is held against: like for like, a decode figure of a plan that
    speculates is predicted at the acceptance vLLM counted over the figure's own steps (acceptance moves
    with the text and with the batch, and is not the build's speed), beside what the plan's acceptance
    predicts."""
    found = prediction_for(figure, predictions)
    if found is None or plan is None or figure.acceptance is None or figure.key not in DECODE_FIGURES:
        return found
    at = decode_prediction(plan, context, figure.streams, figure.acceptance)
    if at is None or at.acceptance is None:
        return found
    return replace(at, at_recipe=found.expected, bound=found.bound)


def predicted_rates(predictions: dict[str, Prediction], spec: BenchSpec) -> Rates:
    """The speeds the time left is first estimated from."""
    prefill = predictions.get("prefill_tok_s")
    decode = {1: p.expected} if (p := predictions.get("decode_tok_s")) else {}
    for streams in spec.streams:
        if (group := predictions.get(f"aggregate_tok_s@{streams}")) is not None:
            decode[streams] = group.expected / streams
    return Rates(prefill.expected if prefill else None, decode)


def measured_rates(collected: Collected, fallback: Rates) -> Rates:
    """The speeds measured so far, else the fallback's: the time left sharpens as the run goes."""
    found = {f.key if f.key != "aggregate_tok_s" else f"{f.key}@{f.streams}": f for f in figures(collected)}
    prefill = found["prefill_tok_s"].median if "prefill_tok_s" in found else fallback.prefill_tok_s
    decode = dict(fallback.decode_tok_s)
    if "decode_tok_s" in found:
        single = found["decode_tok_s"].median
        # Streams not yet measured slow down as predicted relative to one stream.
        base = fallback.decode_tok_s.get(1)
        decode = {s: (v * single / base if base else single) for s, v in decode.items()} or {1: single}
        decode.setdefault(1, single)
    for key, figure in found.items():
        if key.startswith("aggregate_tok_s@"):
            decode[figure.streams] = figure.median / figure.streams
    return Rates(prefill, decode)


def time_left(steps: tuple[Step, ...], spec: BenchSpec, rates: Rates) -> float | None:
    """Seconds `steps` should take (None when a rate is unknown)."""
    total = 0.0
    for step in steps:
        seconds = rates.seconds(step, spec)
        if seconds is None:
            return None
        total += seconds
    return total
