"""Quoting and comment helpers shared by the renderers.

Catalog and hub values are untrusted: in a shell script they appear only shell-quoted,
in comments and messages only on one line with every control character escaped, so no value can
end a comment or a quoted word.
"""

from __future__ import annotations

import shlex
import textwrap
from collections.abc import Sequence

from sparkadvisor.core.safetext import safe_text
from sparkadvisor.export.argv import Arg, EnvRef


def one_line(text: str) -> str:
    """`text` on one line: runs of white space made one space, every other control character escaped."""
    return safe_text(" ".join(text.split()))


def comment(text: str, prefix: str = "# ", width: int = 110) -> list[str]:
    """`text` as comment lines, wrapped."""
    lines = textwrap.wrap(one_line(text), width - len(prefix), break_on_hyphens=False) or [""]
    return [(prefix + line).rstrip() for line in lines]


def sh_arg(arg: Arg) -> str:
    """One shell word: a literal quoted with shlex.quote, an EnvRef as "$NAME". A literal holding a control
    or format character (a terminal escape, a bidi override) is written in bash's $'...' with those
    characters as \\xHH bytes of their UTF-8, so the script reads the same string and `cat` shows no escape."""
    if isinstance(arg, EnvRef):
        return f'"${arg.name}"'
    if safe_text(arg) == arg:
        return shlex.quote(arg)
    return "$'" + "".join(_c_escaped(ch) for ch in arg) + "'"


def _c_escaped(char: str) -> str:
    if char in "'\\":
        return "\\" + char
    return char if safe_text(char) == char else "".join(f"\\x{byte:02x}" for byte in char.encode("utf-8"))


def sh_words(args: Sequence[Arg]) -> str:
    """Shell words joined by spaces."""
    return " ".join(sh_arg(a) for a in args)


def md_cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return one_line(text).replace("\\", "\\\\").replace("|", "\\|")


def md_fence(body: str) -> str:
    """A fence longer than any run of backticks in `body`."""
    longest, run = 0, 0
    for ch in body:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)
