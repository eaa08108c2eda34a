"""The command line: `sparkadvisor` opens the TUI; subcommands answer as text or JSON.

Thin on purpose: it builds the parser (`cliparser`) from the modules in `sparkadvisor.commands`,
runs one, and turns the two kinds of bad input into one sentence and an exit code. `--help` is
laid out by `tophelp` from the tables here, without importing argparse.
"""

import os
import sys

TYPE_CHECKING = False
"""typing.TYPE_CHECKING without importing typing, as in commands/common.py (mypy reads the name).
Annotations naming these imports are quoted: `from __future__ import annotations` would import
the `__future__` module, ~1% of `--help`."""

if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Sequence
    from types import ModuleType

    from sparkadvisor.core.catalog import CatalogError

PROG = "sparkadvisor"
DESCRIPTION = ("Which LLM build fits your DGX Sparks, how fast it decodes, and what an agent turn costs. "
               "With no command, opens the terminal app.")
CATALOG_HELP = "merge a catalog over the bundled one (repeatable; before or after the command)"
"""The help of --catalog, before the command and after it (`commands.common.add_catalog_option`)."""

COMMANDS: dict[str, tuple[str, str]] = {
    "rank": ("rank", "rank every build for a cluster and workload"),
    "show": ("show", "the arithmetic for one build, step by step"),
    "check": ("check", "validate a catalog file"),
    "compare": ("compare", "two or three builds side by side: fit, KV pool, speed, first token cached and cold, "
                           "caveats"),
    "export": ("export", "write a launch recipe (vLLM or llama.cpp scripts, vLLM config, compose, Claude Code "
                         "settings, report, JSON)"),
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


def command_module(name: str) -> "ModuleType":
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


def chosen_command(argv: "Sequence[str]") -> str | None:
    """The subcommand named in `argv`, found the way argparse will find it: the first word
    that is neither an option nor the value of --catalog."""
    words = iter(argv)
    for word in words:
        if word == "--catalog":
            next(words, None)
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def main(argv: "Sequence[str] | None" = None) -> int:
    """Entry point of the `sparkadvisor` script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv in (["-h"], ["--help"]):
        _top_help()
    from sparkadvisor.cliparser import build_parser

    args = build_parser(only=chosen_command(argv) or "").parse_args(argv)
    if args.catalog and args.command and not hasattr(args, "sub_catalog"):
        # A command that reads no catalog refuses --catalog before it as after it (argparse's own sentence).
        build_parser(only=args.command).parse_args([*_without_catalog(argv), "--catalog", str(args.catalog[0])])
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
        _own_catalog_hint(error)
        return 1
    except UsageError as error:
        print(f"sparkadvisor: {safe_text(error)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        _say_unsaved()


def _without_catalog(argv: "Sequence[str]") -> list[str]:
    """`argv` without its `--catalog FILE` and `--catalog=FILE`."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--catalog":
            skip = True
        elif not arg.startswith("--catalog="):
            kept.append(arg)
    return kept


def _own_catalog_hint(error: "CatalogError") -> None:
    """When the problems are in the user's own catalog, whose file it is and how to go on without it."""
    from sparkadvisor import paths
    from sparkadvisor.core.safetext import safe_text

    own = str(paths.user_catalog_path())
    if any(problem.file == own for problem in error.problems):
        print(safe_text(f"{own} is your own catalog (imports and recorded bench runs): fix it, or move it aside "
                        "to go on with the bundled catalog alone"), file=sys.stderr)


def _say_unsaved() -> None:
    """What could not be saved (a read-only home), one line each on stderr, after the command's output."""
    unsaved = sys.modules.get("sparkadvisor.unsaved")
    if unsaved is None:
        return
    from sparkadvisor.core.safetext import safe_text

    for note in unsaved.take():
        print(f"sparkadvisor: {safe_text(note)}", file=sys.stderr)


def _reader_left() -> int:
    """The reader of a pipe stopped early (`| head -1`): end quietly, as Unix tools do (128 + SIGPIPE)."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141


def _top_help() -> None:
    """Print the top-level help and exit 0 as argparse's -h does, laid out by `tophelp` where it
    reproduces argparse (argparse answers where it does not)."""
    from sparkadvisor.tophelp import help_text

    text = help_text(terminal_columns() - 2)
    if text is not None:
        stdout = sys.stdout or sys.stderr
        try:
            stdout.write(text)
        except (AttributeError, OSError):
            pass
        sys.exit(0)


def _open_tui(args: "Namespace") -> int:
    from sparkadvisor.tui.app import run

    return int(run(args.catalog))
