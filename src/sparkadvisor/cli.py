"""The command line: `sparkadvisor` opens the TUI; subcommands answer as text or JSON.

Thin on purpose: it builds the parser from the modules in `sparkadvisor.commands`,
runs one, and turns the two kinds of bad input into one sentence and an exit code.
"""

from __future__ import annotations

import argparse
import os
import sys

from sparkadvisor import __version__

TYPE_CHECKING = False
"""typing.TYPE_CHECKING without importing typing, as in commands/common.py (mypy reads the name)."""

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType
    from typing import Any

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
    """The module that adds the arguments of subcommand `name` and runs it (`__import__`, as
    importlib.import_module does, without importing importlib on `--help`)."""
    module = f"sparkadvisor.commands.{COMMANDS[name][0]}"
    __import__(module)
    return sys.modules[module]


def terminal_columns() -> int:
    """`shutil.get_terminal_size().columns` (COLUMNS, else the terminal on stdout, else 80),
    worked out without importing shutil: argparse's formatter imports it for this alone, and its
    imports (zlib, bz2, lzma, fnmatch) were a tenth of `--help`."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0 and sys.__stdout__ is not None:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class HelpFormatter(argparse.HelpFormatter):
    """argparse's own formatter, as wide as it would make itself (`terminal_columns`)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         terminal_columns() - 2 if width is None else width)


class Unbuilt:
    """A subcommand this run did not build a parser for: argparse lists its name and help and
    accepts it as a choice, and the parser is built only if argparse hands it the arguments."""

    def __init__(self, command: str, **kwargs: Any) -> None:
        self.command = command
        self.kwargs = kwargs

    def build(self) -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(**self.kwargs)
        command_module(self.command).add_arguments(parser)
        return parser

    def parse_known_args(self, args: Sequence[str] | None = None,
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        return self.build().parse_known_args(args, namespace)


def _subcommand_parser(*, command: str, now: bool, **kwargs: Any) -> argparse.ArgumentParser | Unbuilt:
    """The parser behind subcommand `command`: built `now`, else when argparse needs it."""
    unbuilt = Unbuilt(command, **kwargs)
    return unbuilt.build() if now else unbuilt


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser. Every subcommand is listed; with `only` naming one, only its parser
    is built (its module imported, its options added) and with `only=""` none is, so `--help`
    and a single command start without loading the rest. A subcommand not built is built when
    argparse dispatches to it (`Unbuilt`)."""
    from sparkadvisor.commands.common import add_catalog_option

    parser = argparse.ArgumentParser(
        prog="sparkadvisor", formatter_class=HelpFormatter,
        description="Which LLM build fits your DGX Sparks, how fast it decodes, and what an agent turn costs. "
                    "With no command, opens the terminal app.")
    parser.add_argument("--version", action="version", version=f"sparkadvisor {__version__}")
    add_catalog_option(parser, dest="catalog")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", prog=parser.prog,
                                parser_class=_subcommand_parser)  # type: ignore[call-overload]
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, description=help_text, formatter_class=HelpFormatter,
                       command=name, now=only is None or name == only)
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
    # Textual reads keys from stdin and draws on stderr: without a terminal there (cron, a script,
    # `> out.txt 2>&1`, ssh without -t) it would draw into a file and wait for keys forever.
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        print("sparkadvisor: the app needs a terminal, and stdin or stderr is not one; for text, run "
              "`sparkadvisor rank` (every command: `sparkadvisor --help`)", file=sys.stderr)
        return 2
    from sparkadvisor.tui.app import run

    return int(run(args.catalog))
