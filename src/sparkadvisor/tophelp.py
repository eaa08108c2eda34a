"""`sparkadvisor --help` without argparse: the same text argparse prints, from the same tables.

argparse, and the `textwrap`, `gettext` and `locale` it loads to format a help, cost more than
a third of `--help`. This module lays out the top-level help the way argparse's HelpFormatter
does for `cliparser.build_parser(only="")` (Python 3.11 to 3.13; each version's own rules
where they differ) and wraps text as `textwrap.wrap` does. It returns None where it does not
reproduce argparse (another Python, a text outside printable ASCII or with a `%`), and `cli`
then asks argparse. `tests/test_tophelp.py` holds it to argparse's output at every width.
"""

import os
import sys

from sparkadvisor.cli import CATALOG_HELP, COMMANDS, DESCRIPTION, PROG

TYPE_CHECKING = False
"""typing.TYPE_CHECKING without importing typing (mypy reads the name)."""

if TYPE_CHECKING:
    from collections.abc import Callable

VERSIONS = ((3, 11), (3, 13))
"""The Pythons whose argparse this layout follows (3.14 colours its help)."""

LOCALEDIR = os.path.join(sys.base_prefix, "share", "locale")
"""Where `gettext.gettext`, which argparse calls for its own words, looks for a translation."""

WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
LETTER = WORD - frozenset("0123456789")
WORD_PUNCT = WORD | frozenset("!\"'&.,?")
"""textwrap's `\\w`, `[^\\d\\W]` and `[\\w!"'&.,?]`, for the printable ASCII this module accepts."""


def help_text(width: int) -> str | None:
    """What argparse's `format_help()` returns for the top-level parser `width` columns wide
    (HelpFormatter's width, the terminal's minus 2), or None where argparse should answer."""
    if not VERSIONS[0] <= sys.version_info[:2] <= VERSIONS[1]:
        return None
    words = _argparse_words()
    options = (("-h, --help", "[-h]", words["help"]), ("--version", "[--version]", words["version"]),
               ("--catalog FILE", "[--catalog FILE]", CATALOG_HELP))
    commands = [(name, line) for name, (_, line) in COMMANDS.items()]
    if not all(_plain(text) for text in [words["help"], words["version"], DESCRIPTION, CATALOG_HELP,
                                           *(line for _, line in commands)]):
        return None
    new = sys.version_info >= (3, 13)
    lengths = [len("COMMAND") + 2, *(len(name) + (4 if new else 2) for name, _ in commands),
               *(len(invocation) + 2 for invocation, *_ in options)]
    help_position = min(max(lengths) + 2, min(24, max(width - 20, 4)))
    positionals = "".join(_action(name, line, 4, help_position, width) for name, line in commands)
    text = "".join([
        _usage(words["usage: "], [u for _, u, _ in options], ["COMMAND ..."] if new else ["COMMAND", "..."], width),
        "\n".join(wrap(DESCRIPTION, max(width, 11))) + "\n\n",
        f"\n{words['positional arguments:']}\n  COMMAND\n{positionals}\n",
        f"\n{words['options:']}\n", *(_action(i, h, 2, help_position, width) for i, _, h in options), "\n",
    ])
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.strip("\n") + "\n"


def _plain(text: str) -> bool:
    """Printable ASCII, not blank, without `%` (argparse %-formats a help): a text whose
    whitespace `str.split` and argparse's `\\s+` squeeze alike, for `wrap` to lay out."""
    return text.isascii() and text.isprintable() and bool(text.strip()) and "%" not in text


def _argparse_words() -> dict[str, str]:
    """argparse's own words, through gettext as argparse passes them (3.11 and 3.12 leave the
    version help untranslated). No translation can exist without the locale folder, so gettext
    (and the locale module it loads) is imported only when that folder does."""
    def same(message: str) -> str:
        return message

    translate = same
    if os.path.isdir(LOCALEDIR):
        from gettext import gettext as translate
    new = sys.version_info >= (3, 13)
    return {
        "usage: ": translate("usage: "),
        "help": translate("show this help message and exit"),
        "version": (translate if new else same)("show program's version number and exit"),
        "positional arguments:": _heading(translate, "positional arguments", new),
        "options:": _heading(translate, "options", new),
    }


def _heading(translate: "Callable[[str], str]", title: str, new: bool) -> str:
    """A section's heading: `title:`, through gettext's "%(heading)s:" from 3.13 on."""
    heading = translate(title)
    return translate("%(heading)s:") % {"heading": heading} if new else f"{heading}:"


def _usage(prefix: str, opt_parts: list[str], pos_parts: list[str], text_width: int) -> str:
    """HelpFormatter._format_usage: one line if it fits, else wrapped after the program name."""
    usage = " ".join([PROG, *opt_parts, *pos_parts])
    if len(prefix) + len(usage) > text_width:
        if len(prefix) + len(PROG) <= 0.75 * text_width:
            indent = " " * (len(prefix) + len(PROG) + 1)
            lines = _usage_lines([PROG, *opt_parts], indent, text_width, prefix)
            lines.extend(_usage_lines(pos_parts, indent, text_width))
        else:
            indent = " " * len(prefix)
            lines = _usage_lines(opt_parts + pos_parts, indent, text_width)
            if len(lines) > 1:
                lines = [*_usage_lines(opt_parts, indent, text_width), *_usage_lines(pos_parts, indent, text_width)]
            lines = [PROG, *lines]
        usage = "\n".join(lines)
    return f"{prefix}{usage}\n\n"


def _usage_lines(parts: list[str], indent: str, text_width: int, prefix: str | None = None) -> list[str]:
    """`get_lines` inside HelpFormatter._format_usage."""
    lines: list[str] = []
    line: list[str] = []
    line_len = len(prefix if prefix is not None else indent) - 1
    for part in parts:
        if line_len + 1 + len(part) > text_width and line:
            lines.append(indent + " ".join(line))
            line = []
            line_len = len(indent) - 1
        line.append(part)
        line_len += len(part) + 1
    if line:
        lines.append(indent + " ".join(line))
    if prefix is not None:
        lines[0] = lines[0][len(indent):]
    return lines


def _action(invocation: str, help_line: str, indent: int, help_position: int, width: int) -> str:
    """HelpFormatter._format_action for an entry with help: the invocation, then its help from
    `help_position` (on the next line when the invocation is too long)."""
    action_width = help_position - indent - 2
    if len(invocation) <= action_width:
        header, first_indent = " " * indent + invocation.ljust(action_width) + "  ", 0
    else:
        header, first_indent = " " * indent + invocation + "\n", help_position
    lines = wrap(help_line, max(width - help_position, 11))
    rest = [" " * help_position + f"{line}\n" for line in lines[1:]]
    return "".join([header, " " * first_indent, lines[0], "\n", *rest])


def wrap(text: str, width: int) -> list[str]:
    """argparse's `textwrap.wrap(squeezed text, width)` for a `_plain` text (TextWrapper._wrap_chunks)."""
    text = " ".join(text.split())
    if 0 < len(text) <= width:  # every chunk fits the first line
        return [text]
    chunks = chunks_of(text)[::-1]
    lines: list[str] = []
    while chunks:
        line: list[str] = []
        length = 0
        if chunks[-1].isspace() and lines:
            del chunks[-1]
        while chunks and length + len(chunks[-1]) <= width:
            length += len(chunks[-1])
            line.append(chunks.pop())
        if chunks and len(chunks[-1]) > width:
            _break_long_word(chunks, line, width - length)
        if line and line[-1].isspace():
            del line[-1]
        if line:
            lines.append("".join(line))
    return lines


def _break_long_word(chunks: list[str], line: list[str], space_left: int) -> None:
    """TextWrapper._handle_long_word: as much of the word as fits, cut after its last hyphen
    that fits when there is one with something other than hyphens before it."""
    chunk = chunks[-1]
    end = space_left
    if len(chunk) > space_left:
        hyphen = chunk.rfind("-", 0, space_left)
        if hyphen > 0 and chunk[:hyphen].strip("-"):
            end = hyphen + 1
    line.append(chunk[:end])
    chunks[-1] = chunk[end:]


def chunks_of(text: str) -> list[str]:
    """`TextWrapper._split(text)` for printable ASCII: runs of spaces, em-dashes (`--` between words)
    and words, a word cut after each hyphen that joins two letters to two more
    (`textwrap.TextWrapper.wordsep_re`)."""
    chunks = []
    start = 0
    while start < len(text):
        if text[start] == " ":
            end = start + 1
            while end < len(text) and text[end] == " ":
                end += 1
        elif start > 0 and text[start - 1] in WORD_PUNCT and _dashes_then_word(text, start):
            end = start + _dashes_then_word(text, start)
        else:
            end = text.find(" ", start)
            end = len(text) if end < 0 else end
            if "-" in text[start:end]:  # without a hyphen, a word is one chunk
                end = _word_end(text, start)
        chunks.append(text[start:end])
        start = end
    return chunks


def _word_end(text: str, start: int) -> int:
    """Where the word chunk that starts at `start` ends: the alternatives of wordsep_re's third
    branch, tried at each length from one character up (its `+?`)."""
    def letter(at: int) -> bool:
        return 0 <= at < len(text) and text[at] in LETTER

    def char(at: int) -> str:
        return text[at] if 0 <= at < len(text) else ""

    end = start + 1
    while True:
        if (char(end) == "-" and (letter(end - 2) and letter(end - 1)
                                  or letter(end - 3) and char(end - 2) == "-" and letter(end - 1))
                and letter(end + 1) and (letter(end + 2) or char(end + 2) == "-" and letter(end + 3))):
            return end + 1
        if end == len(text) or text[end] == " ":
            return end
        if text[end - 1] in WORD_PUNCT and _dashes_then_word(text, end):
            return end
        end += 1


def _dashes_then_word(text: str, start: int) -> int:
    """The length of a run of two or more hyphens at `start` followed by a word character, else 0."""
    end = start
    while end < len(text) and text[end] == "-":
        end += 1
    return end - start if end - start >= 2 and end < len(text) and text[end] in WORD else 0
