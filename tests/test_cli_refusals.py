"""A bad option value, a missing or an extra argument: one sentence naming the option and what would
do, exit 2, never argparse's whole usage block (the way the rest of the CLI refuses things)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from sparkadvisor.cli import main
from sparkadvisor.cliparser import build_parser

BAD = "bad value!"
"""A value no typed option or choice of any command takes."""


def refusal(capsys, argv: list[str]) -> list[str]:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    captured = capsys.readouterr()
    assert exit_info.value.code == 2 and captured.out == ""
    assert "Traceback" not in captured.err and "[-h]" not in captured.err and "error:" not in captured.err
    return captured.err.splitlines()


@pytest.mark.parametrize(("argv", "sentence"), [
    (["rank", "--nodes", "abc"], "sparkadvisor: --nodes 'abc' is not a whole number"),
    (["rank", "--nodes", "0"], "sparkadvisor: --nodes '0' must be at least 1"),
    (["rank", "--workload", "foo"], "sparkadvisor: --workload 'foo' is not one of agentic, chat"),
    (["rank", "--workload", "agentc"], "sparkadvisor: --workload 'agentc' is not one of agentic, chat; "
                                       "did you mean agentic?"),
    (["rank", "--streams", "0"], "sparkadvisor: --streams '0' must be at least 1"),
    (["rank", "--format", "xml"], "sparkadvisor: --format 'xml' is not one of table, tsv, md, json"),
    (["rank", "--nodes"], "sparkadvisor: --nodes needs a value: nodes in the cluster (default: 2)"),
    (["rank", "--eager", "--cuda-graphs"], "sparkadvisor: --eager and --cuda-graphs cannot be given together; "
                                           "give one of them"),
    (["probe", "--interval", "-1"], "sparkadvisor: --interval '-1' must be more than 0 and at most 3600 seconds"),
    (["catalog", "update", "--timeout", "soon"], "sparkadvisor: --timeout 'soon' is not a number of seconds"),
    (["catalog", "foo"], "sparkadvisor: 'foo' is not an action of catalog; use one of update, info, rollback"),
    (["rnak"], "sparkadvisor: 'rnak' is not a command; use one of rank, show, check, compare, export, import, probe, "
               "bench, fidelity, coverage, catalog; did you mean rank?"),
])
def test_a_bad_value_is_one_sentence(capsys, argv, sentence) -> None:
    assert refusal(capsys, argv) == [sentence]


@pytest.mark.parametrize(("argv", "sentence", "usage"), [
    (["export"], "sparkadvisor: export needs BUILD and --format (one of sh, yaml, compose, claude, md, json)",
     "usage: sparkadvisor export BUILD --format {sh,yaml,compose,claude,md,json} [OPTIONS]"),
    (["compare"], "sparkadvisor: compare needs BUILD", "usage: sparkadvisor compare BUILD [BUILD ...] [OPTIONS]"),
    (["rank", "--nodez", "2"], "sparkadvisor: rank has no option --nodez; did you mean --nodes?",
     "usage: sparkadvisor rank [OPTIONS]"),
    (["show", "glm-5.3-flash-nvfp4-redhat", "two"], "sparkadvisor: show does not take the argument 'two'",
     "usage: sparkadvisor show BUILD [OPTIONS]"),
    (["--bogus"], "sparkadvisor: there is no option --bogus", "usage: sparkadvisor COMMAND [OPTIONS]"),
])
def test_a_call_of_the_wrong_shape_gets_the_short_usage(capsys, argv, sentence, usage) -> None:
    lines = refusal(capsys, argv)
    assert lines[0] == sentence and len(lines) == 2
    assert lines[1].startswith(usage + "  (`sparkadvisor ") and lines[1].endswith(" --help` for all of them)")


def _typed_options() -> list[tuple[list[str], str]]:
    """Every option of every command (and catalog's actions) that checks its value."""
    found: list[tuple[list[str], str]] = []

    def walk(parser: argparse.ArgumentParser, words: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*words, name])
            elif action.option_strings and action.nargs != 0 and (
                    action.choices or getattr(action.type, "__name__", "path_option") not in ("path_option", "Path")):
                found.append((words, action.option_strings[-1]))

    walk(build_parser(), [])
    return found


TYPED = _typed_options()


def test_the_sweep_covers_every_command() -> None:
    commands = {words[0] for words, _ in TYPED if words}
    assert {"rank", "show", "compare", "export", "import", "probe", "bench", "fidelity", "coverage", "catalog",
            "check"} <= commands, commands
    assert len(TYPED) > 60


@pytest.mark.parametrize(("words", "option"), TYPED, ids=[" ".join([*w, o]) for w, o in TYPED])
def test_every_checked_option_refuses_in_one_sentence(capsys, words, option) -> None:
    lines = refusal(capsys, [*words, option, BAD])
    assert len(lines) == 1 and lines[0].startswith((f"sparkadvisor: {option} ", f"sparkadvisor: {option}: ")), lines


def test_a_terminal_escape_typed_as_a_value_is_shown_escaped(capsys) -> None:
    lines = refusal(capsys, ["rank", "--nodes", "\x1b]2;pwned\x07"])
    assert lines == ["sparkadvisor: --nodes '\\x1b]2;pwned\\x07' is not a whole number"]


def test_the_help_text_is_still_argparse_s(capsys, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["rank", "--help"])
    assert exit_info.value.code == 0 and capsys.readouterr().out.startswith("usage: sparkadvisor rank [-h]")
