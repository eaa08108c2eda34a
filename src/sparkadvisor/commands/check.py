"""`sparkadvisor check [FILE]`: validate a catalog; exit 0, or 1 with one sentence per problem."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "check"
HELP = "validate a catalog file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", type=Path, help="catalog TOML (default: the bundled catalog)")


def run(args: argparse.Namespace) -> int:
    from sparkadvisor import paths
    from sparkadvisor.catalogs import check_file, read_catalog

    path = args.file or paths.bundled("catalog.toml")
    problems = check_file(path)
    if problems:
        print(f"{path}: {len(problems)} problem(s):", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    catalog = read_catalog(path)
    print(f"{path}: ok ({len(catalog.hardware)} hardware, {len(catalog.models)} models, {len(catalog.builds)} builds, "
          f"{len(catalog.recipes)} recipes, {len(catalog.caveats)} caveats, {len(catalog.sources)} sources)")
    return 0
