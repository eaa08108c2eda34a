"""argparse's refusals said the way the rest of the CLI says them: one sentence, exit 2.

argparse prints the whole usage block and then "prog: error: argument --nodes: 'abc' is not a
whole number". A person needs the sentence: which option, what was wrong, what would do. A call
of the wrong shape (an argument missing or one too many) also gets the command's short usage.
Runs only on the error path, so its imports cost a good command line nothing.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import NoReturn

from sparkadvisor.cli import PROG
from sparkadvisor.core.safetext import safe_text

_CHOICE = re.compile(r"argument (?P<opt>.+?): invalid choice: (?P<value>'.*') \(choose from (?P<choices>.*)\)", re.S)
_ARGUMENT = re.compile(r"argument (?P<opt>.+?): (?P<rest>.*)", re.S)
_REQUIRED = "the following arguments are required: "
_UNRECOGNIZED = "unrecognized arguments: "


def refuse(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    """Print `message` (argparse's) as one sentence on stderr, with the short usage when the call
    has the wrong shape, and exit 2 as argparse does."""
    text, shape = _sentence(parser, message)
    usage = f"\nusage: {short_usage(parser)}" if shape else ""
    sys.stderr.write(f"sparkadvisor: {safe_text(text)}{safe_text(usage, keep_newlines=True)}\n")
    sys.exit(2)


def _sentence(parser: argparse.ArgumentParser, message: str) -> tuple[str, bool]:
    """The sentence, and whether the short usage belongs under it."""
    if message.startswith(_REQUIRED):
        names = message[len(_REQUIRED):].split(", ")
        return f"{_command(parser)} needs {_and([_described(parser, n) for n in names])}", True
    if message.startswith(_UNRECOGNIZED):
        return _unrecognized(parser, message[len(_UNRECOGNIZED):].split(" ")), True
    if found := _CHOICE.fullmatch(message):
        return _bad_choice(parser, found["opt"], found["value"], found["choices"]), False
    if found := _ARGUMENT.fullmatch(message):
        return _bad_value(parser, found["opt"], found["rest"]), False
    return message, False


def _bad_choice(parser: argparse.ArgumentParser, option: str, value: str, choices: str) -> str:
    names = [c.strip().strip("'") for c in choices.split(", ")]
    hint = _did_you_mean(value.strip("'"), names)
    if option.startswith("-"):
        return f"{option} {value} is not one of {', '.join(names)}{hint}"
    what = option.lower()
    article = "an" if what[:1] in tuple("aeiou") else "a"
    of = "" if parser.prog == PROG else f" of {_command(parser)}"
    return f"{value} is not {article} {what}{of}; use one of {', '.join(names)}{hint}"


def _bad_value(parser: argparse.ArgumentParser, option: str, rest: str) -> str:
    if rest == "expected one argument":
        return f"{option} needs a value: {_valid(parser, option)}"
    if rest == "expected at least one argument":
        return f"{option} needs at least one value: {_valid(parser, option)}"
    if found := re.fullmatch(r"not allowed with argument (.+)", rest):
        return f"{found[1]} and {option} cannot be given together; give one of them"
    if found := re.fullmatch(r"invalid (\S+) value: (.*)", rest, re.S):
        kind = {"int": "a whole number", "float": "a number"}.get(found[1], f"a valid {found[1]}")
        return f"{option} {found[2]} is not {kind}"
    return f"{option} {rest}" if rest.startswith("'") else f"{option}: {rest}"


def _unrecognized(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    first = extras[0]
    if first.startswith("-"):
        options = [s for a in parser._actions for s in a.option_strings]
        name = first.split("=", 1)[0]
        where = "there is no option" if parser.prog == PROG else f"{_command(parser)} has no option"
        return f"{where} {name}{_did_you_mean(name, options)}"
    more = f" (and {len(extras) - 1} more)" if len(extras) > 1 else ""
    return f"{_command(parser)} does not take the argument {first!r}{more}"


def _command(parser: argparse.ArgumentParser) -> str:
    """The command as the user typed it after `sparkadvisor`: "rank", "catalog update"."""
    return parser.prog.removeprefix(PROG).strip() or PROG


def _did_you_mean(typed: str, names: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(typed, names, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def _action(parser: argparse.ArgumentParser, name: str) -> argparse.Action | None:
    for action in parser._actions:
        if name in action.option_strings or name in (action.dest, action.metavar):
            return action
    return None


def _valid(parser: argparse.ArgumentParser, name: str) -> str:
    """What the option takes: its choices, else its help."""
    action = _action(parser, name)
    if action is None:
        return "see --help"
    if action.choices:
        return "one of " + ", ".join(map(str, action.choices))
    help_text = action.help or "see --help"
    return help_text.replace("%(default)s", str(action.default)).replace("%%", "%")


def _described(parser: argparse.ArgumentParser, name: str) -> str:
    """A missing argument as the sentence names it: "--format (one of sh, yaml, ...)", "BUILD"."""
    action = _action(parser, name)
    if action is not None and action.choices:
        return f"{name} ({_valid(parser, name)})"
    return name.upper() if action is not None and not action.option_strings else name


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def short_usage(parser: argparse.ArgumentParser) -> str:
    """The command with what it needs and nothing else: "sparkadvisor export BUILD --format FORMAT [OPTIONS]"."""
    parts = [parser.prog]
    for action in parser._actions:
        if not action.option_strings and not isinstance(action, argparse._SubParsersAction):
            name = (action.metavar if isinstance(action.metavar, str) else action.dest).upper()
            parts.append(f"{name} [{name} ...]" if action.nargs in ("+", "*") else name)
        elif isinstance(action, argparse._SubParsersAction):
            parts.append(action.metavar if isinstance(action.metavar, str) else "COMMAND")
        elif action.required:
            metavar = action.metavar or (("{" + ",".join(map(str, action.choices)) + "}") if action.choices
                                         else action.dest.upper())
            parts.append(f"{action.option_strings[-1]} {metavar}")
    return " ".join([*parts, "[OPTIONS]"]) + f"  (`{parser.prog} --help` for all of them)"
