"""Where things are in a TOML text: the line of every table and key, and of a construct left open.

One pass over the characters, no regular expressions, so the time grows with the size of
the file and nothing else (a backtracking pattern once made a 4 KB file take a minute).
Strings, comments and multi-line arrays are followed, so a line inside a string that
happens to start with `[` is not taken for a table header.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Loc = tuple[Any, ...]
"""A location as validation reports it: ("builds", 2, "size", "value")."""

_BARE_KEY = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


@dataclass
class TomlLines:
    """Line numbers (1-based) of each table and key, and of the construct the text leaves open."""

    lines: dict[Loc, int] = field(default_factory=dict)
    unclosed: tuple[int, str] | None = None
    """(line, what) of a string, array or inline table still open at the end of the text."""
    last_line: int = 0
    """The last line that holds anything but white space."""

    def find(self, loc: Loc) -> int | None:
        """The line of `loc`, or of the nearest enclosing table or key that has one."""
        for end in range(len(loc), 0, -1):
            if loc[:end] in self.lines:
                return self.lines[loc[:end]]
        return None


def index_lines(text: str) -> TomlLines:
    """Scan `text` once; see `TomlLines`."""
    return _Scanner(text).run()


class _Scanner:
    def __init__(self, text: str):
        self.text, self.pos, self.line = text, 0, 1
        self.result = TomlLines()
        self.open: list[tuple[str, int]] = []
        """Brackets and braces open in a value, with their line."""
        self.table: Loc = ()
        self.counts: dict[Loc, int] = {}

    def run(self) -> TomlLines:
        text = self.text
        while self.pos < len(text):
            if self.open:
                self._value_chars(stop_at_newline=False)
                continue
            self._skip_blank()
            if self.pos >= len(text):
                break
            self._statement()
        if self.open and self.result.unclosed is None:
            kind, line = self.open[0]
            self.result.unclosed = (line, "an array '['" if kind == "[" else "an inline table '{'")
        return self.result

    # --- statements -----------------------------------------------------------

    def _skip_blank(self) -> None:
        text = self.text
        while self.pos < len(text) and text[self.pos] in " \t\r\n":
            self._advance()

    def _advance(self) -> None:
        if self.text[self.pos] == "\n":
            self.line += 1
        else:
            self.result.last_line = self.line
        self.pos += 1

    def _statement(self) -> None:
        char = self.text[self.pos]
        line = self.result.last_line = self.line
        if char == "#":
            self._skip_to_newline()
        elif char == "[":
            array = self.text.startswith("[[", self.pos)
            self.pos += 2 if array else 1
            names = self._key()
            self._header(names, array, line)
            self._skip_to_newline()
        else:
            names = self._key()
            if names:
                self.result.lines.setdefault(self.table + tuple(names), line)
            if self.pos < len(self.text) and self.text[self.pos] == "=":
                self.pos += 1
                self._value_chars(stop_at_newline=True)
            else:
                self._skip_to_newline()

    def _header(self, names: list[str], array: bool, line: int) -> None:
        loc: Loc = ()
        for position, name in enumerate(names):
            loc += (name,)
            if array and position == len(names) - 1:
                self.counts[loc] = self.counts.get(loc, -1) + 1
                self.result.lines.setdefault(loc, line)
                loc += (self.counts[loc],)
            elif loc in self.counts:
                loc += (self.counts[loc],)
            # A table written as [hardware.x] names `hardware` too: a problem there finds this line.
            self.result.lines.setdefault(loc, line)
        self.table = loc

    def _key(self) -> list[str]:
        """A dotted key (bare or quoted parts); stops at '=', ']', a newline or a comment."""
        text, names, part = self.text, [], []
        while self.pos < len(text):
            char = text[self.pos]
            if char in "\"'":
                part.append(self._string_on_line(char))
                continue
            if char == ".":
                names.append("".join(part).strip())
                part = []
            elif char in "=]\n#":
                break
            elif char in _BARE_KEY or char in " \t":
                part.append(char)
            else:
                break
            self.pos += 1
        names.append("".join(part).strip())
        return names if any(names) else []

    def _skip_to_newline(self) -> None:
        end = self.text.find("\n", self.pos)
        self.pos = len(self.text) if end < 0 else end

    # --- values ---------------------------------------------------------------

    def _value_chars(self, stop_at_newline: bool) -> None:
        """Follow a value: strings, comments and brackets, to the end of the statement."""
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char == "\n" and stop_at_newline and not self.open:
                return
            if char == "#":
                self._skip_to_newline()
            elif char in "\"'":
                self._string(char)
            elif char in "[{":
                self.open.append((char, self.line))
                self._advance()
            elif char in "]}":
                if self.open:
                    self.open.pop()
                self._advance()
            else:
                self._advance()

    def _string(self, quote: str) -> None:
        if self.text.startswith(quote * 3, self.pos):
            self._multiline(quote)
        else:
            self._string_on_line(quote)

    def _string_on_line(self, quote: str) -> str:
        """A one-line string from its opening quote; the text between the quotes."""
        text, start = self.text, self.pos + 1
        self.pos = start
        while self.pos < len(text) and text[self.pos] not in (quote, "\n"):
            self.pos += 2 if quote == '"' and text[self.pos] == "\\" else 1
        value = text[start:min(self.pos, len(text))]
        if self.pos < len(text) and text[self.pos] == quote:
            self.pos += 1
        self.result.last_line = self.line
        return value

    def _multiline(self, quote: str) -> None:
        text, line = self.text, self.line
        self.pos += 3
        while self.pos < len(text):
            if text.startswith(quote * 3, self.pos):
                self.pos += 3
                while self.pos < len(text) and text[self.pos] == quote:  # up to two quotes end the content
                    self.pos += 1
                return
            if quote == '"' and text[self.pos] == "\\" and self.pos + 1 < len(text) and text[self.pos + 1] != "\n":
                self.pos += 1
            self._advance()
        what = 'a multi-line string """' if quote == '"' else "a multi-line string '''"
        self.result.unclosed = (line, what)
