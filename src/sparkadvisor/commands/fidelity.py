"""`sparkadvisor fidelity`: every measurement in the catalog against the model's prediction.

Into a pipe or a file every check is one line (recipe first, for grep). On a terminal too narrow
for those lines, the checks are grouped under their recipe, one short line per figure, and the
prose and summaries wrap under a hanging indent.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from sparkadvisor.commands.common import add_catalog_option, load, print_json
from sparkadvisor.listing import add_format_option, cell_width, wrap_cells

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sparkadvisor.core.fidelity import Check, Report
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

    lines = [safe_text(line) for line in text_lines(report)]
    width = terminal_width()
    if width is not None and max(map(cell_width, lines)) > width:
        lines = [safe_text(line) for line in narrow_lines(report, width)]
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


def terminal_width() -> int | None:
    """The terminal's width in cells, None into a pipe or a file."""
    import shutil

    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


CHECK_COLUMNS = ("recipe", "build", "hardware", "engine", "mode", "metric", "streams", "context", "measured",
                 "predicted", "low", "high", "error %", "verdict", "note")


def checks_listing(report: Report) -> Listing:
    """`fidelity --format tsv|md`: one row per measurement and its leave-one-out prediction."""
    from sparkadvisor.listing import Listing

    def figure(value: float | None, spec: str = ".1f") -> str:
        return "" if value is None else format(value, spec)

    rows = tuple((c.recipe, c.build, c.hardware, c.engine, c.mode, c.metric, str(c.streams),
                  "" if c.context_tokens is None else str(c.context_tokens), _exact(c.measured),
                  figure(c.predicted), figure(c.low), figure(c.high), figure(c.error_pct, "+.1f"),
                  (("unknown" if c.tables else "bound" if c.slow_route else "skipped") if c.predicted is None
                   else ("inside" if c.inside else "outside")),
                  (f"{_bound_text(c)}: {c.skipped}" if c.slow_route else c.skipped or c.note))
                 for c in report.checks)
    return Listing(CHECK_COLUMNS, rows, frozenset(range(6, 13)))


INTRO = ("Each measurement is predicted at its own context, streams, engine and mode, with constants",
         "fitted to the other recipes (leave-one-out). Its range is an 80% range, sized from the errors",
         "on measurements of those other recipes left out of their fit in folds (split-conformal).")


def text_lines(report: object) -> list[str]:
    """The report as plain lines: one per check, then the summaries and the constants."""
    from sparkadvisor.core.fidelity import Report

    assert isinstance(report, Report)
    width = max((len(c.recipe) for c in report.checks), default=10)
    apart = [c for c in report.checks if c.tables]
    bounds = [c for c in report.checks if c.slow_route]
    lines = [*INTRO, ""]
    for c in report.checks:
        where = _where(c, width)
        if c.tables or c.slow_route:
            continue
        if c.predicted is None:
            lines.append(f"{where} measured {c.measured:>9,.1f}  skipped: {c.skipped}")
            continue
        verdict = "inside" if c.inside else "OUTSIDE"
        note = f"  [{c.note}]" if c.note else ""
        lines.append(f"{where} measured {c.measured:>9,.1f}  predicted {c.predicted:>9,.1f} "
                     f"({c.low:,.1f}-{c.high:,.1f})  {c.error_pct:+6.1f}%  {verdict}{note}")
    if apart:
        lines += ["", _apart_sentence(apart)]
        lines += [f"{_where(c, width)} measured {c.measured:>9,.1f}  {c.tables} table: unknown" for c in apart]
    if bounds:
        lines += ["", _bounds_sentence(bounds)]
        lines += [f"{_where(c, width)} measured {c.measured:>9,.1f}  {_bound_text(c)}" for c in bounds]
    return lines + _closing_lines(report)


def _where(c: Check, width: int) -> str:
    """A check's recipe, engine, mode, metric, streams and context, in columns (`width`: the recipe's)."""
    context = f"@{c.context_tokens:,}" if c.context_tokens else ""
    return f"{c.recipe:<{width}}  {c.engine:<9} {c.mode:<6} {c.metric:<15} x{c.streams:<2} {context:<8}"


def _bounds_sentence(bounds: Sequence[Check]) -> str:
    from sparkadvisor.core.units import plural

    return (f"Bounds, not predicted and not fitted ({plural(len(bounds), 'row')}): a caveat reports the engine far "
            "slower here than what the build reads and computes, so the model's figure is only what the reads "
            "allow. Never counted as a pass.")


def _bound_text(c: Check) -> str:
    """"bound ≤29.7 (caveat)": the model's figure for a row on a route reported slow."""
    figure = "" if c.bound is None else f"≤{_short(c.bound)} "
    return f"bound {figure}({c.slow_route})"


def _apart_sentence(apart: Sequence[Check]) -> str:
    return (f"Unknown, not predicted and not fitted ({len(apart)} rows): the model reads a per-token table "
            "(PLE, Engram) whose bytes per token are unpublished. Never counted as a pass.")


def _closing_lines(report: Report, pad: int = 34) -> list[str]:
    """The summaries per metric and per engine (labels padded to `pad`; 0: "label:"), then the constants
    fitted to the whole catalog."""
    from sparkadvisor.core.fidelity import constants_dict

    lines = ["", "Summary (median absolute error; within 20%; off by 2x or more; inside the predicted range):"]
    lines += [_summary_line(s, METRIC_LABELS.get(s.metric, s.metric), pad) for s in report.summaries]
    if report.by_engine:
        lines += ["", "By engine:"]
        lines += [_summary_line(s, f"{s.engine}: {METRIC_LABELS.get(s.metric, s.metric)}", pad)
                  for s in report.by_engine]
    for f in report.fitted:
        lines += ["", f"Constants fitted to the whole catalog for {f.hardware} ({f.engine}):"]
        lines += [f"  {name:<28} {_value(item['value'])}  ({item['basis']})"  # type: ignore[index]
                  for name, item in constants_dict(f.constants).items()]
    return lines


def narrow_lines(report: Report, width: int) -> list[str]:
    """The report for a terminal `width` cells wide: each recipe on a line of its own with its checks
    below it, one short line each; the summaries broken between their figures; prose wrapped."""
    apart = [c for c in report.checks if c.tables]
    bounds = [c for c in report.checks if c.slow_route]
    lines = [*folded(" ".join(INTRO), width), ""] + _grouped([c for c in report.checks
                                                               if not c.tables and not c.slow_route], width)
    if apart:
        lines += ["", *folded(_apart_sentence(apart), width)] + _grouped(apart, width)
    if bounds:
        lines += ["", *folded(_bounds_sentence(bounds), width)] + _grouped(bounds, width)
    for line in _closing_lines(report, pad=0):
        lines += folded(line, width, "; ") if line.startswith("  ") and "; " in line else folded(line, width)
    return lines


def _grouped(checks: Sequence[Check], width: int) -> list[str]:
    """A heading per recipe (and engine), then a line per check: the figure, measured, predicted."""
    figures = [_figure_label(c) for c in checks]
    label = max(map(len, figures), default=6)
    ranges = max((len(_range(c)) for c in checks), default=0)
    lines, heading = [f"  {'figure':<{label}} {'measured':>9}  {'predicted (80% range)':<{ranges + 8}} "
                      "error  verdict"], ""
    for c, figure in zip(checks, figures, strict=True):
        if f"{c.recipe} ({c.engine})" != heading:
            heading = f"{c.recipe} ({c.engine})"
            lines += folded(heading, width)
        start = f"  {figure:<{label}} {_short(c.measured):>9}  "
        if c.predicted is None or c.error_pct is None:
            told = (f"{c.tables} table: unknown" if c.tables else _bound_text(c) if c.slow_route
                    else f"skipped: {c.skipped}")
            parts = wrap_cells(told, max(width - len(start), 20))
            lines += [start + parts[0], *(" " * len(start) + part for part in parts[1:])]
            continue
        note = f" [{c.note}]" if c.note else ""
        lines.append(f"{start}{_short(c.predicted):>7} {_range(c):<{ranges}} {c.error_pct:+6.1f}%  "
                     f"{'inside' if c.inside else 'OUTSIDE'}{note}")
    return lines


def _figure_label(c: Check) -> str:
    """"decode", "aggregate x6 @256", "prefill @262,144 eager": what was measured, in a few words."""
    metric = c.metric.removesuffix("_tok_s").replace("_", " ")
    streams = f" x{c.streams}" if c.streams != 1 else ""
    context = f" @{c.context_tokens:,}" if c.context_tokens else ""
    return f"{metric}{streams}{context}" + (" eager" if c.mode == "eager" else "")


def _range(c: Check) -> str:
    return "" if c.low is None or c.high is None else f"({_short(c.low)}-{_short(c.high)})"


def _short(value: float) -> str:
    """1,899 above a thousand, 54.2 below: the digits that matter in a narrow column."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:,.1f}"


def folded(line: str, width: int, between: str = " ") -> list[str]:
    """`line` in lines of at most `width` cells, broken after `between` (between words, or between the
    figures of a summary: "; "); the lines after the first indented four cells past the line's own."""
    if cell_width(line) <= width:
        return [line]
    indent, glue = len(line) - len(line.lstrip(" ")), between.rstrip()
    first, *pieces = line.strip().split(between)
    lines, current = [], " " * indent + first
    for piece in pieces:
        if cell_width(joined := f"{current}{glue} {piece}") <= width:
            current = joined
            continue
        lines.append(current + glue)
        current = " " * (indent + 4) + piece
    lines.append(current)
    return lines if between == " " else [part for line in lines for part in folded(line, width)]


def _summary_line(s: object, label: str, pad: int) -> str:
    from sparkadvisor.core.fidelity import Summary

    assert isinstance(s, Summary)
    label = f"{label:<{pad}}" if pad else f"{label}:"
    why = [f"{s.unknown_tables} unknown: PLE/Engram"] * bool(s.unknown_tables) + \
        [f"{s.slow_routes} bound: a route reported slow"] * bool(s.slow_routes)
    skipped = f"{s.skipped} skipped" + (f" ({'; '.join(why)})" if why else "")
    if not s.count:
        return f"  {label} {s.count:>3} predicted, {skipped}"
    median = "n/a" if s.median_abs_error_pct is None else f"{s.median_abs_error_pct:.1f}%"
    return (f"  {label} {s.count:>3} predicted, {skipped}; median |error| {median}; "
            f"within 20% {s.within_20}/{s.count} ({s.within_20_share:.0%}); off 2x {s.off_2x}; "
            f"inside range {s.within_range}/{s.count} ({s.within_range_share:.0%})")


def _exact(value: float) -> str:
    """A measured figure as the source gives it, never in scientific notation (3834498, not 3.8345e+06)."""
    return str(int(value)) if value == int(value) else repr(value)


def _value(value: object) -> str:
    return "unknown" if value is None else f"{value:g}"
