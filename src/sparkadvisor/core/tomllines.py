"""Where things are in a TOML text: the line of every table and key, and of a construct left open.

One pass over the text that jumps between the characters that matter with single-character
classes (never a pattern that can backtrack), so the time grows with the size of the file
and nothing else (a backtracking header pattern once made a 4 KB file take a minute).
Strings, comments and multi-line arrays are followed, so a line inside a string that
happens to start with `[` is not taken for a table header.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

Loc = tuple[Any, ...]
"""A location as validation reports it: ("builds", 2, "size", "value")."""

_VALUE_STOP = re.compile(r"[#\"'\[\]{}\n]")
"""Characters that change what a value's scan is inside."""
_NOT_BLANK = re.compile(r"[^ \t\r\n]")
_BASIC_STOP = re.compile(r'[\\"\n]')
_BARE_KEY = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


@dataclass(frozen=True, slots=True)
class Statement:
    """A table header or a key-value pair: where it is in the text, as offsets."""

    loc: Loc
    """The table a header opens, or the key a pair sets (its table's loc, then the key's parts)."""
    start: int
    """Offset of its first character (the `[` of a header, the key of a pair)."""
    end: int
    """Offset of the newline that ends it (or the text's length)."""
    header: bool
    line: int


@dataclass
class TomlLines:
    """Line numbers (1-based) of each table and key, and of the construct the text leaves open."""

    lines: dict[Loc, int] = field(default_factory=dict)
    unclosed: tuple[int, str] | None = None
    """(line, what) of a string, array or inline table still open at the end of the text."""
    last_line: int = 0
    """The last line that holds anything but white space."""
    deepest: tuple[int, int] = (0, 0)
    """(depth, line): the most arrays and inline tables open at once, and where."""
    statements: list[Statement] = field(default_factory=list)
    """Every table header and key-value pair, in the order written (for `core.tomledit`)."""
    comments: list[int] = field(default_factory=list)
    """The offset of every `#` that starts a comment."""

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
        found = _NOT_BLANK.search(self.text, self.pos)
        end = found.start() if found else len(self.text)
        self._move_to(end)

    def _move_to(self, end: int) -> None:
        """Jump to `end`, counting the lines passed."""
        self.line += self.text.count("\n", self.pos, end)
        self.pos = end

    def _advance(self) -> None:
        if self.text[self.pos] == "\n":
            self.line += 1
        else:
            self.result.last_line = self.line
        self.pos += 1

    def _statement(self) -> None:
        char = self.text[self.pos]
        line = self.result.last_line = self.line
        start = self.pos
        if char == "#":
            self.result.comments.append(self.pos)
            self._skip_to_newline()
        elif char == "[":
            array = self.text.startswith("[[", self.pos)
            self.pos += 2 if array else 1
            names = self._key()
            self._header(names, array, line)
            after = self.pos
            self._skip_to_newline()
            if (comment := self.text.find("#", after, self.pos)) >= 0:
                self.result.comments.append(comment)
            self.result.statements.append(Statement(self.table, start, self.pos, True, line))
        else:
            names = self._key()
            loc = self.table + tuple(names)
            if names:
                self.result.lines.setdefault(loc, line)
            if self.pos < len(self.text) and self.text[self.pos] == "=":
                self.pos += 1
                self._value_chars(stop_at_newline=True)
            else:
                self._skip_to_newline()
            if names:
                self.result.statements.append(Statement(loc, start, self.pos, False, line))

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
            found = _VALUE_STOP.search(text, self.pos)
            if found is None:
                self.result.last_line = self.line if text[self.pos:].strip() else self.result.last_line
                self.pos = len(text)
                return
            if text[self.pos:found.start()].strip():
                self.result.last_line = self.line
            self.pos = found.start()
            char = text[self.pos]
            if char == "\n":
                if stop_at_newline and not self.open:
                    return
                self._advance()
            elif char == "#":
                self.result.comments.append(self.pos)
                self._skip_to_newline()
            elif char in "\"'":
                self._string(char)
            elif char in "[{":
                self.open.append((char, self.line))
                if len(self.open) > self.result.deepest[0]:
                    self.result.deepest = (len(self.open), self.line)
                self._advance()
            else:
                if self.open:
                    self.open.pop()
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
        stop = _BASIC_STOP if quote == '"' else None
        while self.pos < len(text):
            if stop is None:
                ends = [i for i in (text.find(quote, self.pos), text.find("\n", self.pos)) if i >= 0]
                self.pos = min(ends) if ends else len(text)
            else:
                found = stop.search(text, self.pos)
                self.pos = found.start() if found else len(text)
            if self.pos < len(text) and text[self.pos] == "\\":
                self.pos += 2
                continue
            break
        self.pos = min(self.pos, len(text))
        value = text[start:self.pos]
        if self.pos < len(text) and text[self.pos] == quote:
            self.pos += 1
        self.result.last_line = self.line
        return value

    def _multiline(self, quote: str) -> None:
        text, line, delimiter = self.text, self.line, quote * 3
        search = self.pos + 3
        while (end := text.find(delimiter, search)) >= 0:
            if quote == '"' and _escaped(text, end):
                search = end + 1
                continue
            end += 3
            for _ in range(2):  # a closing """" or """"" ends the content with one or two quotes
                if end < len(text) and text[end] == quote:
                    end += 1
            self._move_to(end)
            self.result.last_line = self.line
            return
        self._move_to(len(text))
        what = 'a multi-line string """' if quote == '"' else "a multi-line string '''"
        self.result.unclosed = (line, what)


def _escaped(text: str, position: int) -> bool:
    """An odd number of backslashes stands before `position`."""
    count = 0
    while position - count - 1 >= 0 and text[position - count - 1] == "\\":
        count += 1
    return count % 2 == 1
