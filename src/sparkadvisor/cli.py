"""The command line: `sparkadvisor` opens the TUI; subcommands answer as text or JSON.

Thin on purpose: it builds the parser from the modules in `sparkadvisor.commands`,
runs one, and turns the two kinds of bad input into one sentence and an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from sparkadvisor import __version__
from sparkadvisor.commands.common import UsageError, add_catalog_option
from sparkadvisor.core.catalog import CatalogError
from sparkadvisor.core.safetext import safe_text

COMMANDS = ("rank", "show", "check", "export", "hub_import", "probe", "bench", "fidelity", "coverage", "catalog")
"""Subcommand modules, in the order help lists them."""


def _modules() -> list[ModuleType]:
    return [importlib.import_module(f"sparkadvisor.commands.{name}") for name in COMMANDS]


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, ModuleType]]:
    """The argument parser, and the module behind each subcommand."""
    parser = argparse.ArgumentParser(
        prog="sparkadvisor",
        description="Which LLM build fits your DGX Sparks, how fast it decodes, and what an agent turn costs. "
                    "With no command, opens the terminal app.")
    parser.add_argument("--version", action="version", version=f"sparkadvisor {__version__}")
    add_catalog_option(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    by_name = {}
    for module in _modules():
        module.add_arguments(sub.add_parser(module.NAME, help=module.HELP, description=module.HELP))
        by_name[module.NAME] = module
    return parser, by_name


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `sparkadvisor` script."""
    parser, commands = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command is None:
            return _open_tui(args)
        return int(commands[args.command].run(args))
    except CatalogError as error:
        print(f"sparkadvisor: the catalog has {len(error.problems)} problem(s):", file=sys.stderr)
        for problem in error.problems:
            print(f"  {safe_text(problem)}", file=sys.stderr)
        return 1
    except UsageError as error:
        print(f"sparkadvisor: {safe_text(error)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _open_tui(args: argparse.Namespace) -> int:
    from sparkadvisor.tui.app import run

    return int(run(args.catalog))
