"""`sparkadvisor fidelity`: every measurement in the catalog against the model's prediction."""

from __future__ import annotations

import argparse

from sparkadvisor.commands.common import add_catalog_option, load, print_json

METRIC_LABELS = {"decode_tok_s": "decode, 1 stream", "aggregate_tok_s": "aggregate, N streams",
                 "prefill_tok_s": "prefill", "all": "all speed figures"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_catalog_option(parser)
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")


def run(args: argparse.Namespace) -> int:
    from sparkadvisor.core.fidelity import fidelity, report_dict

    report = fidelity(load(args))
    if args.json:
        print_json(report_dict(report))
        return 0
    from sparkadvisor.core.safetext import safe_text

    for line in text_lines(report):
        print(safe_text(line))
    return 0


def text_lines(report: object) -> list[str]:
    """The report as plain lines: one per check, then the summaries."""
    from sparkadvisor.core.fidelity import Report, constants_dict

    assert isinstance(report, Report)
    lines = ["Each measurement is predicted with constants fitted to the other recipes (leave-one-out).", ""]
    width = max((len(c.recipe) for c in report.checks), default=10)
    for c in report.checks:
        where = f"{c.recipe:<{width}}  {c.metric:<15} x{c.streams:<2}"
        if c.predicted is None:
            lines.append(f"{where} measured {c.measured:>9,.1f}  skipped: {c.skipped}")
            continue
        verdict = "inside" if c.inside else "OUTSIDE"
        note = f"  [{c.note}]" if c.note else ""
        lines.append(f"{where} measured {c.measured:>9,.1f}  predicted {c.predicted:>9,.1f} "
                     f"({c.low:,.1f}-{c.high:,.1f})  {c.error_pct:+6.1f}%  {verdict}{note}")
    lines += ["", "Summary (median absolute error; share of measured figures inside the predicted range):"]
    for s in report.summaries:
        median = "n/a" if s.median_abs_error_pct is None else f"{s.median_abs_error_pct:.1f}%"
        share = "n/a" if s.within_range_share is None else f"{s.within_range}/{s.count} ({s.within_range_share:.0%})"
        lines.append(f"  {METRIC_LABELS.get(s.metric, s.metric):<22} {s.count:>3} predicted, {s.skipped} skipped; "
                     f"median |error| {median}; inside range {share}")
    for f in report.fitted:
        lines += ["", f"Constants fitted to the whole catalog for {f.hardware} ({f.engine}):"]
        lines += [f"  {name:<24} {_value(name, item['value'])}  ({item['basis']})"  # type: ignore[index]
                  for name, item in constants_dict(f.constants).items()]
    return lines


def _value(name: str, value: object) -> str:
    if value is None:
        return "unknown"
    if name == "prefill_flops_per_node":
        return f"{float(value) / 1e12:.1f} TFLOPS"  # type: ignore[arg-type]
    return f"{value:g}"
