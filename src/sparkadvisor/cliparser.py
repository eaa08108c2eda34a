"""The argparse parser behind `sparkadvisor`: every subcommand listed, only the one run built.

Kept out of `cli.py` so that `--help` (`tophelp`) starts without importing argparse.
"""

from __future__ import annotations

import argparse

from sparkadvisor import __version__
from sparkadvisor.cli import COMMANDS, DESCRIPTION, PROG, command_module, terminal_columns

TYPE_CHECKING = False
"""typing.TYPE_CHECKING without importing typing, as in commands/common.py (mypy reads the name)."""

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


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
        from sparkadvisor.commands.common import SubcommandParser

        parser = SubcommandParser(**self.kwargs)
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
    is built (its module imported, its options added) and with `only=""` none is, so a single
    command starts without loading the rest. A subcommand not built is built when argparse
    dispatches to it (`Unbuilt`). `tophelp` lays out this parser's help without it."""
    from sparkadvisor.commands.common import Parser, add_catalog_option

    parser = Parser(prog=PROG, formatter_class=HelpFormatter, description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    add_catalog_option(parser, dest="catalog")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", prog=parser.prog,
                                parser_class=_subcommand_parser)  # type: ignore[call-overload]
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, description=help_text, formatter_class=HelpFormatter,
                       command=name, now=only is None or name == only)
    return parser
