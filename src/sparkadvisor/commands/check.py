"""`sparkadvisor check [FILE]`: validate a catalog; exit 0, or 1 with one sentence per problem."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", type=Path, help="catalog TOML (default: the catalog in use)")


def run(args: argparse.Namespace) -> int:
    from sparkadvisor.catalogs import active_catalog, check_file, read_catalog
    from sparkadvisor.core.safetext import safe_text

    path = args.file or active_catalog().path
    problems = check_file(path)
    if problems:
        print(f"{safe_text(path)}: {len(problems)} problem(s):", file=sys.stderr)
        for problem in problems:
            print(f"  {safe_text(problem)}", file=sys.stderr)
        return 1
    catalog = read_catalog(path)
    counts = ", ".join(f"{len(getattr(catalog, kind))} {kind}" for kind in
                       ("hardware", "models", "builds", "recipes", "caveats", "sources"))
    print(f"{safe_text(path)}: ok ({counts})")
    return 0
