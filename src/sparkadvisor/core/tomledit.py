"""Change a TOML text in place: add a table, replace one table, set one key, and leave the rest as written.

Pure: text in, text out. Where things are comes from `core.tomllines` (the scanner that follows
strings, comments and multi-line arrays); what is put in is TOML text a serializer made (the
caller's `tomli_w`), so every value is quoted by the serializer. An array that grows keeps its
comments where they are (`extend_array`); comments inside a table or key that is replaced are
kept, moved above the new text; everything outside it is kept byte for byte.
The caller re-parses the result and checks it holds what it meant to write: these edits find
places, they do not prove the outcome.
"""

from __future__ import annotations

from sparkadvisor.core.tomllines import Loc, Statement, TomlLines, index_lines


class EditError(Exception):
    """The text cannot be changed in place; one sentence (with a line when there is one)."""


def append_table(text: str, block: str) -> str:
    """`block` (one or more tables) at the end of `text`, after one blank line."""
    if not text.strip():
        return text + block
    return text.rstrip("\n") + "\n\n" + block


def set_root_key(text: str, line: str) -> str:
    """A root `key = value` line before the first table header (or at the end when there is none)."""
    headers = [s for s in index_lines(text).statements if s.header]
    if not headers:
        return append_table(text, line)
    at = _line_start(text, headers[0].start)
    return text[:at] + line + "\n" + text[at:]


def replace_table(text: str, loc: Loc, block: str, what: str) -> str:
    """The table at `loc` (its header, its keys and its sub-tables) replaced by `block`."""
    lines = index_lines(text)
    header = _header(lines, loc, what)
    inside = _table_statements(lines, header, nested=True)
    start, end = _line_start(text, header.start), inside[-1].end
    return text[:start] + _kept_comments(text, lines, start, end) + block.rstrip("\n") + text[end:]


def append_to_table(text: str, loc: Loc, block: str, what: str) -> str:
    """`block` (sub-tables of the table at `loc`) after that table's last sub-table."""
    lines = index_lines(text)
    end = _table_statements(lines, _header(lines, loc, what), nested=True)[-1].end
    return text[:end] + "\n\n" + block.rstrip("\n") + text[end:]


def set_key(text: str, table: Loc, key: str, statement: str, what: str) -> str:
    """`key = ...` in the table at `table` replaced by `statement` (or added after the table's last key)."""
    lines = index_lines(text)
    header = _header(lines, table, what)
    own = _table_statements(lines, header, nested=False)
    found = [s for s in own if not s.header and s.loc == (*table, key)]
    if found:
        old = found[0]
        kept = _kept_comments(text, lines, old.start, old.end)
        return text[:old.start] + kept + statement.rstrip("\n") + text[old.end:]
    if any(not s.header and s.loc[:len(table) + 1] == (*table, key) for s in own):
        raise EditError(f"{what} (line {header.line}) sets {key!r} with dotted keys rather than one `{key} = ...`")
    after = own[-1].end
    return text[:after] + "\n" + statement.rstrip("\n") + text[after:]


def written_as_key(text: str, table: Loc, key: str) -> bool:
    """True when the table at `table` sets `key` with `key = ...` (not as sub-tables of its own)."""
    return any(not s.header and s.loc == (*table, key) for s in index_lines(text).statements)


def extend_array(text: str, table: Loc, key: str, items: list[str], what: str) -> str:
    """`items` (TOML values a serializer wrote) added at the end of the array `key = [...]` in the table at
    `table`, in place: every comment inside the array stays where it is, and a multi-line array gets one
    item a line, indented as its last item."""
    lines = index_lines(text)
    header = _header(lines, table, what)
    found = [s for s in _table_statements(lines, header, nested=False) if not s.header and s.loc == (*table, key)]
    if not found:
        raise EditError(f"{what} (line {header.line}) does not set {key!r} with one `{key} = [...]`")
    old, comments = found[0], _comment_spans(text, lines, found[0])
    opening = _outside(text, comments, text.index("=", old.start) + 1, old.end, forward=True)
    closing = _outside(text, comments, old.start, old.end, forward=False)
    if opening is None or closing is None or text[opening] != "[" or text[closing] != "]":
        raise EditError(f"{what} (line {old.line}) sets {key!r} to a value that is not an array")
    last = _outside(text, comments, opening + 1, closing, forward=False)
    if last is None:  # an empty array
        return text[:closing] + ", ".join(items) + text[closing:]
    trailing = text[last] == ","
    line_start = _line_start(text, closing)
    if "\n" in text[last:closing] and not text[line_start:closing].strip():
        item_line = text[_line_start(text, last):]
        indent = item_line[:len(item_line) - len(item_line.lstrip(" \t"))]
        new = "".join(f"{indent}{item}{',' if trailing or n < len(items) - 1 else ''}\n"
                      for n, item in enumerate(items))
        comma = "" if trailing else ","
        return text[:last + 1] + comma + text[last + 1:line_start] + new + text[line_start:]
    added = ", ".join(items)
    return text[:last + 1] + (f" {added}," if trailing else f", {added}") + text[last + 1:]


def _comment_spans(text: str, lines: TomlLines, statement: Statement) -> list[tuple[int, int]]:
    """Where each comment inside `statement` runs: from its `#` to the end of its line."""
    spans = []
    for at in lines.comments:
        if statement.start <= at < statement.end:
            stop = text.find("\n", at, statement.end)
            spans.append((at, statement.end if stop < 0 else stop))
    return spans


def _outside(text: str, comments: list[tuple[int, int]], start: int, end: int, *, forward: bool) -> int | None:
    """The first (or last) offset in [start, end) that is neither white space nor in a comment."""
    positions = range(start, end) if forward else range(end - 1, start - 1, -1)
    for at in positions:
        if text[at] in " \t\r\n" or any(a <= at < b for a, b in comments):
            continue
        return at
    return None


def _header(lines: TomlLines, loc: Loc, what: str) -> Statement:
    for statement in lines.statements:
        if statement.header and statement.loc == loc:
            return statement
    where = lines.find(loc)
    at = f" (line {where})" if where else ""
    raise EditError(f"{what}{at} is not written under a table header of its own")


def _table_statements(lines: TomlLines, header: Statement, *, nested: bool) -> list[Statement]:
    """The header and what follows it up to the next header: another table's (or, with `nested`,
    one outside this table's sub-tables)."""
    statements = lines.statements
    first = statements.index(header)
    found = [header]
    for statement in statements[first + 1:]:
        if statement.header and not (nested and statement.loc[:len(header.loc)] == header.loc):
            break
        found.append(statement)
    return found


def _kept_comments(text: str, lines: TomlLines, start: int, end: int) -> str:
    """The comments between `start` and `end`, each on its own line, to stand above new text."""
    kept = []
    for at in lines.comments:
        if start <= at < end:
            stop = text.find("\n", at, end)
            kept.append(text[at:end if stop < 0 else stop].rstrip())
    return "".join(f"{comment}\n" for comment in kept)


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1
