"""`sparkadvisor check [FILE]`: validate a catalog; exit 0, or 1 with one sentence per problem."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sparkadvisor.commands.common import path_option
from sparkadvisor.listing import add_format_option

if TYPE_CHECKING:
    from sparkadvisor.core.catalog import Problem

COUNTED = ("hardware", "models", "builds", "recipes", "caveats", "sources")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", type=path_option, help="catalog TOML (default: the catalog in use)")
    add_format_option(parser, "print the problems (or the counts) as JSON")


def run(args: argparse.Namespace) -> int:
    from sparkadvisor.catalogs import active_catalog, check_file, read_catalog
    from sparkadvisor.core.safetext import safe_text
    from sparkadvisor.core.units import plural

    path = args.file or active_catalog().path
    problems = check_file(path)
    counts = {} if problems else {kind: len(getattr(read_catalog(path), kind)) for kind in COUNTED}
    if args.format != "table":
        _print_data(path, problems, counts, args.format)
    elif problems:
        print(f"{safe_text(path)}: {plural(len(problems), 'problem')}:", file=sys.stderr)
        for problem in problems:
            print(f"  {safe_text(problem)}", file=sys.stderr)
    else:
        print(f"{safe_text(path)}: ok ({', '.join(f'{n} {kind}' for kind, n in counts.items())})")
    return 1 if problems else 0


def _print_data(path: Path, problems: list[Problem], counts: dict[str, int], fmt: str) -> None:
    """The problems as JSON, TSV or Markdown rows (file, line, field, message), on stdout."""
    rows = [{"file": p.file, "line": p.line, "field": p.path, "message": p.message} for p in problems]
    if fmt == "json":
        from sparkadvisor.commands.common import print_json

        print_json({"file": str(path), "ok": not problems, "problems": rows, "counts": counts})
        return
    from sparkadvisor.listing import Listing, print_listing

    cells = tuple(tuple("" if v is None else str(v) for v in row.values()) for row in rows)
    print_listing(Listing(("file", "line", "field", "message"), cells, frozenset({1})), fmt)
