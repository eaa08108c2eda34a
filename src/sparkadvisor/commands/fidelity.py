"""`sparkadvisor fidelity`: every measurement in the catalog against the model's prediction."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from sparkadvisor.commands.common import add_catalog_option, load, print_json
from sparkadvisor.listing import add_format_option

if TYPE_CHECKING:
    from sparkadvisor.core.fidelity import Report
    from sparkadvisor.listing import Listing

METRIC_LABELS = {"decode_tok_s": "decode, 1 stream", "aggregate_tok_s": "aggregate, N streams",
                 "prefill_tok_s": "prefill", "all": "all speed figures"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_catalog_option(parser)
    add_format_option(parser)


def run(args: argparse.Namespace) -> int:
    from sparkadvisor.core.fidelity import fidelity, report_dict

    report = fidelity(load(args))
    if args.format == "json":
        print_json(report_dict(report))
        return 0
    if args.format != "table":
        from sparkadvisor.listing import print_listing

        print_listing(checks_listing(report), args.format)
        return 0
    from sparkadvisor.core.safetext import safe_text

    for line in text_lines(report):
        print(safe_text(line))
    return 0


CHECK_COLUMNS = ("recipe", "build", "hardware", "engine", "mode", "metric", "streams", "context", "measured",
                 "predicted", "low", "high", "error %", "verdict", "note")


def checks_listing(report: Report) -> Listing:
    """`fidelity --format tsv|md`: one row per measurement and its leave-one-out prediction."""
    from sparkadvisor.listing import Listing

    def figure(value: float | None, spec: str = ".1f") -> str:
        return "" if value is None else format(value, spec)

    rows = tuple((c.recipe, c.build, c.hardware, c.engine, c.mode, c.metric, str(c.streams),
                  "" if c.context_tokens is None else str(c.context_tokens), format(c.measured, "g"),
                  figure(c.predicted), figure(c.low), figure(c.high), figure(c.error_pct, "+.1f"),
                  (("unknown" if c.tables else "skipped") if c.predicted is None
                   else ("inside" if c.inside else "outside")),
                  c.skipped or c.note) for c in report.checks)
    return Listing(CHECK_COLUMNS, rows, frozenset(range(6, 13)))


def text_lines(report: object) -> list[str]:
    """The report as plain lines: one per check, then the summaries and the constants."""
    from sparkadvisor.core.fidelity import Report, constants_dict

    assert isinstance(report, Report)
    lines = ["Each measurement is predicted at its own context, streams, engine and mode, with constants",
             "fitted to the other recipes (leave-one-out). Its range is an 80% range, sized from the errors",
             "on measurements of those other recipes left out of their fit in folds (split-conformal).", ""]
    width = max((len(c.recipe) for c in report.checks), default=10)
    apart = [c for c in report.checks if c.tables]
    for c in report.checks:
        context = f"@{c.context_tokens:,}" if c.context_tokens else ""
        where = f"{c.recipe:<{width}}  {c.engine:<9} {c.mode:<6} {c.metric:<15} x{c.streams:<2} {context:<8}"
        if c.tables:
            continue
        if c.predicted is None:
            lines.append(f"{where} measured {c.measured:>9,.1f}  skipped: {c.skipped}")
            continue
        verdict = "inside" if c.inside else "OUTSIDE"
        note = f"  [{c.note}]" if c.note else ""
        lines.append(f"{where} measured {c.measured:>9,.1f}  predicted {c.predicted:>9,.1f} "
                     f"({c.low:,.1f}-{c.high:,.1f})  {c.error_pct:+6.1f}%  {verdict}{note}")
    if apart:
        lines += ["", f"Unknown, not predicted and not fitted ({len(apart)} rows): the model reads a per-token table "
                  "(PLE, Engram) whose bytes per token are unpublished. Never counted as a pass."]
        for c in apart:
            context = f"@{c.context_tokens:,}" if c.context_tokens else ""
            lines.append(f"{c.recipe:<{width}}  {c.engine:<9} {c.mode:<6} {c.metric:<15} x{c.streams:<2} {context:<8} "
                         f"measured {c.measured:>9,.1f}  {c.tables} table: unknown")
    lines += ["", "Summary (median absolute error; within 20%; off by 2x or more; inside the predicted range):"]
    lines += [_summary_line(s, METRIC_LABELS.get(s.metric, s.metric)) for s in report.summaries]
    if report.by_engine:
        lines += ["", "By engine:"]
        lines += [_summary_line(s, f"{s.engine}: {METRIC_LABELS.get(s.metric, s.metric)}") for s in report.by_engine]
    for f in report.fitted:
        lines += ["", f"Constants fitted to the whole catalog for {f.hardware} ({f.engine}):"]
        lines += [f"  {name:<28} {_value(item['value'])}  ({item['basis']})"  # type: ignore[index]
                  for name, item in constants_dict(f.constants).items()]
    return lines


def _summary_line(s: object, label: str) -> str:
    from sparkadvisor.core.fidelity import Summary

    assert isinstance(s, Summary)
    skipped = f"{s.skipped} skipped" + (f" ({s.unknown_tables} unknown: PLE/Engram)" if s.unknown_tables else "")
    if not s.count:
        return f"  {label:<34} {s.count:>3} predicted, {skipped}"
    median = "n/a" if s.median_abs_error_pct is None else f"{s.median_abs_error_pct:.1f}%"
    return (f"  {label:<34} {s.count:>3} predicted, {skipped}; median |error| {median}; "
            f"within 20% {s.within_20}/{s.count} ({s.within_20_share:.0%}); off 2x {s.off_2x}; "
            f"inside range {s.within_range}/{s.count} ({s.within_range_share:.0%})")


def _value(value: object) -> str:
    return "unknown" if value is None else f"{value:g}"
