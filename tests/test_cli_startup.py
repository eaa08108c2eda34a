"""Start-up: `--help` and one subcommand load only what they use, and find the same command argparse does."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sparkadvisor.cli import COMMANDS, chosen_command, main, terminal_columns
from sparkadvisor.cliparser import Unbuilt, build_parser


def modules_after(argv: list[str]) -> set[str]:
    script = ("import sys, io, contextlib\nfrom sparkadvisor.cli import main\n"
              "with contextlib.redirect_stdout(io.StringIO()):\n"
              "    try: main(sys.argv[1:])\n    except SystemExit: pass\n"
              "print(' '.join(sys.modules))")
    result = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, check=True)
    return set(result.stdout.split())


def test_help_loads_no_core_module_and_no_other_command():
    loaded = modules_after(["--help"])
    assert not {m for m in loaded if m.startswith(("sparkadvisor.core", "pydantic", "rich", "textual"))}
    assert not {m for m in loaded if m.startswith("sparkadvisor.commands.") and m != "sparkadvisor.commands.common"}
    assert not loaded & {"shutil", "typing", "importlib"}


def test_help_lists_every_command_as_the_fully_built_parser_does(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    full = build_parser().format_help()
    assert build_parser(only="").format_help() == full
    assert build_parser(only="rank").format_help() == full
    assert all(f"    {name}" in full for name in COMMANDS)


def test_a_command_not_built_is_built_when_argparse_hands_it_the_arguments():
    sub = next(a for a in build_parser(only="")._actions if a.dest == "command")
    assert all(isinstance(p, Unbuilt) for p in sub.choices.values())
    argv = ["--catalog", "a.toml", "rank", "--nodes", "3", "--json", "--catalog", "b.toml"]
    assert build_parser(only="").parse_args(argv) == build_parser().parse_args(argv)


@pytest.mark.parametrize("columns", [None, "100", "37", "0", "-4", "wide"])
def test_help_is_as_wide_as_argparse_would_make_it(monkeypatch, columns):
    import shutil

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns


def test_one_command_loads_only_its_own_module():
    loaded = modules_after(["show", "--help"])
    commands = {m for m in loaded if m.startswith("sparkadvisor.commands.")}
    assert commands == {"sparkadvisor.commands.common", "sparkadvisor.commands.show"}


@pytest.mark.parametrize("argv", [
    ["rank"], ["--catalog", "rank", "show", "x"], ["--catalog=a.toml", "rank", "--json"], ["--version"], [],
    ["--catalog", "a.toml"], ["nosuch"], ["-h"], ["probe", "rank"],
])
def test_the_command_found_is_the_one_argparse_finds(argv, monkeypatch):
    import argparse

    class Refused(Exception):
        pass

    def refuse(parser, message):  # a subcommand's parser refusing its arguments: argparse chose that command
        raise Refused(parser.prog.removeprefix("sparkadvisor").strip() or None)

    monkeypatch.setattr(argparse.ArgumentParser, "error", refuse)
    monkeypatch.setattr("sparkadvisor.argerrors.refuse", refuse)  # what the CLI's own parsers call
    try:
        expected = build_parser().parse_known_args(argv)[0].command
    except Refused as refused:
        expected = refused.args[0]
    except SystemExit:
        expected = None
    assert chosen_command(argv) == expected


def test_every_command_builds_its_arguments():
    parser = build_parser()
    for name in COMMANDS:
        with pytest.raises(SystemExit):
            parser.parse_args([name, "--help"])


def test_json_to_a_pipe_is_one_line_that_reads_back(capsys):
    assert main(["rank", "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert json.loads(out)["candidates"]
