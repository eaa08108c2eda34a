"""A bench run as the CLI and the app show it: lines in the style of `show` (label, [basis], the
figure beside its prediction), or JSON whose field names are an API."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparkadvisor.core.units import fmt_seconds

if TYPE_CHECKING:
    from sparkadvisor.benchsession import BenchSession
    from sparkadvisor.core.bench import Figure
    from sparkadvisor.core.benchplan import Prediction
    from sparkadvisor.usercatalog import Recorded


def fmt_value(value: float, unit: str) -> str:
    """A figure in its unit: 4.3 s, 1 min 13 s, 1,634 tok/s, 46.9 tok/s, 17.0x."""
    if unit == "s":
        return f"{value:.2f} s" if value < 1 else fmt_seconds(value)
    if unit == "x":
        return f"{value:.1f}x"
    return f"{value:,.0f} tok/s" if value >= 100 else f"{value:.1f} tok/s"


def _range(p: Prediction, unit: str) -> str:
    """"41-93 s", "1.2x-3.4x", "51 s to 2 min 34 s"."""
    low, high = fmt_value(p.low, unit), fmt_value(p.high, unit)
    if "min" in low + high:
        return f"{low} to {high}"
    return f"{low.removesuffix(' ' + unit) if unit != 'x' else low}-{high}"


def figure_text(figure: Figure, prediction: Prediction | None, why_none: str) -> str:
    """One figure: the median, its spread, and where it falls against the prediction."""
    unit = figure.unit
    n = len(figure.values)
    spread = ""
    if n > 1:
        low, high = fmt_value(figure.low, unit), fmt_value(figure.high, unit)
        sd = f", sd {fmt_value(figure.spread or 0.0, unit)}" if unit != "x" else ""
        spread = f" (median of {n}{f': {low} to {high}' if low != high else ''}{sd})"
    what = " over all streams" if figure.key == "aggregate_tok_s" else ""
    text = f"{fmt_value(figure.median, unit)}{what}{spread}"
    if prediction is None:
        text += f"; no prediction ({why_none})."
    elif prediction.bound:
        edge = "at most" if figure.unit.endswith("/s") else "at least"
        text += (f" beside {edge} {fmt_value(prediction.expected, unit)} by the model{_at_acceptance(prediction, unit)}"
                 f", a bound with no range ({prediction.bound}).")
    else:
        where = prediction.verdict(figure.median)
        where_text = "inside" if where == "inside" else f"OUTSIDE ({where})"
        text += (f" beside {fmt_value(prediction.expected, unit)} predicted{_at_acceptance(prediction, unit)}: "
                 f"{where_text} the predicted range {_range(prediction, unit)}.")
    if figure.hit_share is not None and figure.key in ("cold_ttft_s", "warm_ttft_s", "aggregate_tok_s"):
        tokens = f" ({figure.hit_tokens:,.0f} tokens a request)" if figure.hit_tokens is not None else ""
        text += f" Prefix-cache counters over these requests: {figure.hit_share:.0%} of prompt tokens hit{tokens}."
    return text


def _at_acceptance(prediction: Prediction, unit: str) -> str:
    """" at the 45% of drafted tokens vLLM accepted over these steps (the recipe's acceptance predicts
    40.6 tok/s)", or "" for a prediction at the plan's own acceptance."""
    if prediction.acceptance is None:
        return ""
    recipe = (f" (the recipe's acceptance predicts {fmt_value(prediction.at_recipe, unit)})"
              if prediction.at_recipe is not None else "")
    return f" at the {prediction.acceptance:.0%} of drafted tokens vLLM accepted over these steps{recipe}"


Line = tuple[str, str | None, str]
"""(title, basis, text): a figure line has a basis ("measured"), a plain line has none and no title."""


def report(session: BenchSession, interrupted: bool, recorded: Recorded | None, record_asked: bool) -> list[Line]:
    """The report, line by line."""
    from sparkadvisor.benchsession import spec_text
    from sparkadvisor.core.checkup import drafter_note

    info, spec = session.info, session.collected.spec
    out: list[Line] = []
    if info is not None:
        version = "llama-server" if info.served.engine == "llama.cpp" else f"vLLM {info.version or '(version unknown)'}"
        limit = f" · {info.served.length_text}" if info.served.max_model_len else ""
        out.append(("", None, f"bench {info.served.id} · {version} at {info.url}{limit}"))
    if session.plan is not None and session.match is not None:
        p = session.plan
        out.append(("", None, f"plan  {p.build.id} on {p.cluster.label}, {p.workload.label} ({session.match.how}"
                              f"{drafter_note(p)})"))
    out.append(("", None, spec_text(spec)))
    why = _why_no_prediction(session)
    for figure, prediction in session.rows():
        out.append((figure.label, "measured", figure_text(figure, prediction, why)))
    out += [("KV cache", "vLLM's num_gpu_blocks", f.text) for f in session.kv_cache()]
    out += [("", None, line) for line in _tail(session, interrupted, recorded, record_asked)]
    return out


def lines(session: BenchSession, interrupted: bool, recorded: Recorded | None, record_asked: bool) -> list[str]:
    """The report, one string per line."""
    return [f"{title} [{basis}] {text}" if basis else text
            for title, basis, text in report(session, interrupted, recorded, record_asked)]


def _why_no_prediction(session: BenchSession) -> str:
    if session.match is not None and session.match.build is None:
        return session.match.how
    return "the speed model lacks this build's active parameters or a prefill rate"


def _tail(session: BenchSession, interrupted: bool, recorded: Recorded | None, record_asked: bool) -> list[str]:
    collected = session.collected
    out: list[str] = []
    if not collected.results:
        out.append("nothing was measured")
    if collected.stopped:
        out.append(f"stopped early: {collected.stopped}")
    if interrupted:
        out.append(f"interrupted: {len(collected.results)} of {len(session.steps)} steps ran")
    elif recorded is not None:
        out.append(f"recorded {recorded.count} measurements as recipe {recorded.recipe_id} (source "
                   f"{recorded.source_id}) in {recorded.path}; show, rank, the TUI and fidelity use them now")
    elif record_asked:
        out.append("nothing to record")
    else:
        out.append("add --record to keep these as measurements of this build on this cluster")
    return out


def as_json(session: BenchSession, interrupted: bool, recorded: Recorded | None, record_asked: bool) -> dict[str, Any]:
    """The stable JSON shape of `bench --json`."""
    info, spec = session.info, session.collected.spec
    return {
        "vllm_url": info.url if info else session.options.config.vllm_url,
        "vllm_version": info.version if info else None,
        "served_model": info.served.id if info else None,
        "served_engine": info.served.engine if info else None,
        "max_model_len": info.served.max_model_len if info else None,
        "server_settings": info.labels if info else {},
        "build": session.match.build.id if session.match and session.match.build else None,
        "build_match": session.match.how if session.match else None,
        "hardware": session.options.cluster.hardware.id, "nodes": session.options.cluster.nodes,
        "context_tokens": spec.context_tokens, "shared_tokens": spec.shared_tokens, "new_tokens": spec.new_tokens,
        "output_tokens": spec.output_tokens, "repetitions": spec.repetitions, "streams": list(spec.streams),
        "figures": [_figure_json(f, p) for f, p in session.rows()],
        "kv_cache": [{"severity": f.severity, "text": f.text} for f in session.kv_cache()],
        "prompt_tokens_seen": sorted({s.prompt_tokens for r in session.collected.results for s in r.samples}),
        "steps_run": len(session.collected.results), "steps_planned": len(session.steps),
        "stopped": session.collected.stopped, "interrupted": interrupted,
        "record_asked": record_asked, "recorded": recorded.as_json() if recorded else None,
    }


def _figure_json(figure: Figure, prediction: Prediction | None) -> dict[str, Any]:
    def r(value: float | None) -> float | None:
        return None if value is None else round(value, 4)

    return {
        "metric": figure.key, "label": figure.label, "unit": figure.unit, "streams": figure.streams,
        "median": r(figure.median), "low": r(figure.low), "high": r(figure.high), "spread": r(figure.spread),
        "values": [r(v) for v in figure.values], "prefix_cache_hit_share": r(figure.hit_share),
        "cached_tokens": r(figure.hit_tokens), "acceptance": r(figure.acceptance),
        "predicted": None if prediction is None else {
            "expected": r(prediction.expected), "low": None if prediction.bound else r(prediction.low),
            "high": None if prediction.bound else r(prediction.high),
            "verdict": prediction.verdict(figure.median), "bound": prediction.bound or None,
            "at_acceptance": r(prediction.acceptance),
            "expected_at_recipe_acceptance": r(prediction.at_recipe)},
    }
