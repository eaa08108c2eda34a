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

COMMANDS: dict[str, tuple[str, str]] = {
    "rank": ("rank", "rank every build for a cluster and workload"),
    "show": ("show", "the arithmetic for one build, step by step"),
    "check": ("check", "validate a catalog file"),
    "compare": ("compare", "two or three builds side by side: fit, KV pool, speed, first token cached and cold, "
                           "caveats"),
    "export": ("export", "write a launch recipe (scripts, vLLM config, compose, Claude Code settings, report, JSON)"),
    "import": ("hub_import",
               "add a Hugging Face repo to your catalog from its config.json and safetensors headers (no weights)"),
    "probe": ("probe",
              "check that vLLM, the gateway and Claude Code's settings are on, and compare the service with the plan"),
    "bench": ("bench", "measure the served build on your cluster (cold and warm first token, decode) beside the "
                       "plan's predictions; --record adds the results to your catalog"),
    "fidelity": ("fidelity", "how far to trust the speed model: each measurement against its leave-one-out prediction"),
    "coverage": ("coverage", "count models, builds, recipes, measurements, caveats and capability scores per family"),
    "catalog": ("catalog", "update the catalog from the project's repository, say which catalog is in use, "
                           "or put the previous one back"),
}
"""Each subcommand: the module in `sparkadvisor.commands` behind it, and its one line of help.
In the order help lists them."""


def command_module(name: str) -> ModuleType:
    """The module that adds the arguments of subcommand `name` and runs it."""
    return importlib.import_module(f"sparkadvisor.commands.{COMMANDS[name][0]}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser. With `only` naming a subcommand, the parser has that one alone (its
    words are all argparse reads); with `only=""`, every subcommand is listed but no module
    imported, so `--help` and a single command start without loading the rest."""
    from sparkadvisor.commands.common import add_catalog_option

    parser = argparse.ArgumentParser(
        prog="sparkadvisor",
        description="Which LLM build fits your DGX Sparks, how fast it decodes, and what an agent turn costs. "
                    "With no command, opens the terminal app.")
    parser.add_argument("--version", action="version", version=f"sparkadvisor {__version__}")
    add_catalog_option(parser, dest="catalog")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        if only and name != only:
            continue
        command = sub.add_parser(name, help=help_text, description=help_text)
        if only is None or name == only:
            command_module(name).add_arguments(command)
    return parser


def chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand named in `argv`, found the way argparse will find it: the first word
    that is neither an option nor the value of --catalog."""
    words = iter(argv)
    for word in words:
        if word == "--catalog":
            next(words, None)
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `sparkadvisor` script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = chosen_command(argv)
    args = build_parser(only=command or "").parse_args(argv)
    args.catalog = [*args.catalog, *getattr(args, "sub_catalog", [])]
    from sparkadvisor.commands.common import UsageError
    from sparkadvisor.core.catalog import CatalogError
    from sparkadvisor.core.safetext import safe_text

    try:
        if args.command is None:
            return _open_tui(args)
        code = int(command_module(args.command).run(args))
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _reader_left()
    except CatalogError as error:
        from sparkadvisor.core.units import plural

        print(f"sparkadvisor: the catalog has {plural(len(error.problems), 'problem')}:", file=sys.stderr)
        for problem in error.problems:
            print(f"  {safe_text(problem)}", file=sys.stderr)
        return 1
    except UsageError as error:
        print(f"sparkadvisor: {safe_text(error)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _reader_left() -> int:
    """The reader of a pipe stopped early (`| head -1`): end quietly, as Unix tools do (128 + SIGPIPE)."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141


def _open_tui(args: argparse.Namespace) -> int:
    from sparkadvisor.tui.app import run

    return int(run(args.catalog))
