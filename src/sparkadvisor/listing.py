"""Tables on stdout in the format asked for: aligned text, TSV, Markdown (JSON is each command's own).

`--format table` (the default) aligns columns. On a terminal it drops the last columns that do
not fit its width and says which; into a pipe or a file every row is one line at its natural
width, so `rank | grep` and `show > file` keep names and URLs whole. TSV and Markdown carry every
column. Every cell goes through `safe_text` here, once, whatever the command put in it.
"""

from __future__ import annotations

import argparse
import sys
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sparkadvisor.core.records import record
from sparkadvisor.core.safetext import safe_text

if TYPE_CHECKING:
    from rich.console import Console

FORMATS = ("table", "tsv", "md", "json")
"""What `--format` accepts; `--json` is `--format json`."""
GAP = "  "
"""Between two columns of aligned text in a pipe or a file."""
TERMINAL_GAP = " "
"""Between two columns on a terminal, where width is scarce (as in the TUI)."""
KEEP = 3
"""Columns a narrow terminal never drops (rank, model, build; or a listing's first ones)."""


@record(kw_only=False)
class Listing:
    """A table as text cells, ready for any format."""

    columns: tuple[str, ...]
    """Headings, left to right, most important first (a narrow terminal drops from the right)."""
    rows: tuple[tuple[str, ...], ...]
    """Cells, one tuple per row, in column order."""
    numeric: frozenset[int] = frozenset()
    """Indexes of the columns aligned right."""
    title: str = ""
    """A line above the table (table and Markdown formats)."""
    notes: tuple[str, ...] = ()
    """Lines below the table (table and Markdown formats)."""
    styles: tuple[tuple[str, ...], ...] = ()
    """A Rich style per cell, parallel to rows, used on a terminal only ("" for none)."""
    keep: int = KEEP
    """Columns a narrow terminal never drops (every build of a comparison)."""
    shrinks: dict[int, int] | None = None
    """Columns a terminal may narrow to this width, cutting their cells with an ellipsis (names)."""
    narrow_notes: tuple[str, ...] = ()
    """Lines a terminal too narrow for every column prints after the notes (what the hidden columns said)."""
    first_word: frozenset[int] = frozenset()
    """Columns whose cells, when too wide, keep their first word whole instead of an ellipsis (the flags:
    the severity glyphs without the badge, as in the TUI)."""
    wrap: bool = False
    """On a terminal too narrow for every kept column, wrap cells onto more lines within their column
    instead of cutting them (a comparison, whose columns are the builds)."""


def add_format_option(parser: argparse.ArgumentParser, json_help: str = "print JSON for scripts") -> None:
    """--format table|tsv|md|json, and --json as its shorthand (the last one given wins)."""
    parser.add_argument("--format", choices=FORMATS, default="table",
                        help="table (aligned; one line per row in a pipe), tsv, md (Markdown) or json")
    parser.add_argument("--json", dest="format", action="store_const", const="json",
                        help=f"{json_help} (same as --format json)")


def print_listing(listing: Listing, fmt: str) -> None:
    """`listing` on stdout as `fmt` ("table", "tsv" or "md")."""
    if fmt == "tsv":
        lines = tsv_lines(listing)
    elif fmt == "md":
        lines = markdown_lines(listing)
    elif sys.stdout.isatty():
        return _print_on_terminal(listing)
    else:
        lines = text_lines(listing)
    sys.stdout.write("".join(line + "\n" for line in lines))


def _cells(listing: Listing) -> list[list[str]]:
    return [[safe_text(c) for c in row] for row in listing.rows]


def tsv_lines(listing: Listing) -> list[str]:
    """A heading line, then one line per row; tabs and newlines inside a cell are escaped by safe_text."""
    return ["\t".join(map(safe_text, listing.columns)), *("\t".join(row) for row in _cells(listing))]


def _md_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|") if ("|" in text or "\\" in text) else text


def markdown_lines(listing: Listing) -> list[str]:
    """A GitHub Markdown table, with the title above and each note below as a paragraph."""
    def row(cells: Sequence[str]) -> str:
        return "| " + " | ".join(_md_cell(c) for c in cells) + " |"

    rule = ["---:" if i in listing.numeric else "---" for i in range(len(listing.columns))]
    head = [safe_text(listing.title), ""] if listing.title else []
    body = [row([safe_text(c) for c in listing.columns]), "| " + " | ".join(rule) + " |",
            *(row(cells) for cells in _cells(listing))]
    tail = [line for note in listing.notes if note.strip() for line in ("", safe_text(note.strip()))]
    return head + body + tail


def cell_width(text: str) -> int:
    """The terminal cells `text` takes: two for a wide (CJK) character, none for a combining mark."""
    if text.isascii():  # O(1) on a str: nearly every cell
        return len(text)
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def _pad(text: str, width: int, right: bool = False) -> str:
    """`text` padded with spaces to `width` cells, on the left when `right`."""
    fill = " " * max(width - cell_width(text), 0)
    return fill + text if right else text + fill


def natural_widths(listing: Listing, cells: list[list[str]]) -> list[int]:
    """Each column's width in terminal cells: its longest cell or its heading."""
    return [max([cell_width(listing.columns[i]), *(cell_width(row[i]) for row in cells)])
            for i in range(len(listing.columns))]


def _aligned(cells: Sequence[str], widths: Sequence[int], numeric: frozenset[int]) -> str:
    parts = [_pad(c, w, i in numeric) for i, (c, w) in enumerate(zip(cells, widths, strict=False))]
    return GAP.join(parts).rstrip()


def text_lines(listing: Listing, shown: int | None = None) -> list[str]:
    """Aligned text, every row on one line: the title, the headings, the rows, the notes.
    With `shown`, only the first `shown` columns."""
    cells = _cells(listing)
    widths = natural_widths(listing, cells)[:shown]
    head = [safe_text(listing.title)] if listing.title else []
    lines = [_aligned([safe_text(c) for c in listing.columns], widths, listing.numeric),
             *(_aligned(row, widths, listing.numeric) for row in cells)]
    return head + lines + [safe_text(note) for note in listing.notes]


def columns_that_fit(widths: Sequence[int], width: int, keep: int = KEEP, gap: int = len(GAP)) -> int:
    """How many columns, from the left, fit in `width` cells (never fewer than `keep`)."""
    used, count = -gap, 0
    for w in widths:
        used += w + gap
        if used > width and count >= keep:
            break
        count += 1
    return count


def terminal_widths(listing: Listing, natural: Sequence[int], width: int) -> list[int]:
    """The columns a terminal of `width` cells shows, and how wide: names narrowed to their
    `shrinks` width while more columns fit, then widened again with the room left."""
    shrinks = listing.shrinks or {}
    narrow = [min(w, shrinks.get(i, w)) for i, w in enumerate(natural)]
    shown = narrow[:columns_that_fit(narrow, width, listing.keep, len(TERMINAL_GAP))]
    room = width - sum(shown) - len(TERMINAL_GAP) * (len(shown) - 1)
    for i in range(len(shown)):
        extra = max(min(room, natural[i] - shown[i]), 0)
        shown[i] += extra
        room -= extra
    return shown


def _cut(text: str, width: int, first_word: bool = False) -> str:
    if cell_width(text) <= width:
        return text
    word = text.split(" ", 1)[0]
    if first_word and cell_width(word) <= width:
        return word
    kept = text[: width - 1]
    while cell_width(kept) > width - 1:  # a double-width character takes two of the cells
        kept = kept[:-1]
    return kept + "…"


def _print_on_terminal(listing: Listing) -> None:
    """Aligned text in the terminal's width, the headings bold and each cell in its style; the
    columns that do not fit are named below."""
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False)
    cells = _cells(listing)
    widths = terminal_widths(listing, natural_widths(listing, cells), console.width)
    shown = len(widths)
    if listing.wrap and shown == len(listing.columns):
        return _print_wrapped(listing, cells, narrowed(widths, console.width), console)
    if listing.title:
        console.print(Text(safe_text(listing.title), style="dim"))
    headings = [_cut(safe_text(c), w) for c, w in zip(listing.columns, widths, strict=False)]
    console.print(_styled_row(headings, widths, listing.numeric, ("bold",) * shown, Text), crop=False)
    for r, row in enumerate(cells):
        styles = listing.styles[r] if r < len(listing.styles) else ()
        cut = [_cut(c, w, i in listing.first_word) for i, (c, w) in enumerate(zip(row, widths, strict=False))]
        console.print(_styled_row(cut, widths, listing.numeric, styles, Text), crop=False)
    if shown < len(listing.columns):
        hidden = ", ".join(listing.columns[shown:])
        console.print(Text(f"Not shown at this width: {hidden} (a wider terminal, --format tsv or | cat shows them).",
                           style="dim"))
    for note in listing.notes + (listing.narrow_notes if shown < len(listing.columns) else ()):
        console.print(Text(safe_text(note)))


def _styled_row(row: Sequence[str], widths: Sequence[int], numeric: frozenset[int], styles: Sequence[str],
                text_class: type) -> object:
    line = text_class()
    for i, (cell, width) in enumerate(zip(row, widths, strict=False)):
        if i:
            line.append(TERMINAL_GAP)
        padded = _pad(cell, width, i in numeric)
        line.append(padded, styles[i] if i < len(styles) and styles[i] else "")
    line.rstrip()
    return line


WRAP_MIN = 12
"""Narrowest a wrapped column gets: a number or a short word still fits on one line."""


def narrowed(widths: Sequence[int], width: int) -> list[int]:
    """`widths` with the widest columns narrowed, one cell at a time, until a row fits `width` cells
    (none below WRAP_MIN, or its own width)."""
    shown = list(widths)
    while sum(shown) + len(TERMINAL_GAP) * (len(shown) - 1) > width:
        widest = max(range(len(shown)), key=lambda i: shown[i])
        if shown[widest] <= WRAP_MIN:
            break
        shown[widest] -= 1
    return shown


def _print_wrapped(listing: Listing, cells: list[list[str]], widths: list[int], console: Console) -> None:
    """Every column, each cell wrapped onto as many lines as it needs within its width."""
    from rich.text import Text

    def lines_of(row: Sequence[str]) -> list[list[str]]:
        parts = [wrap_cells(c, w) for c, w in zip(row, widths, strict=False)]
        return [[p[n] if n < len(p) else "" for p in parts] for n in range(max(map(len, parts)))]

    if listing.title:
        console.print(Text(safe_text(listing.title), style="dim"))
    heading = [safe_text(c) for c in listing.columns]
    for r, row in enumerate([heading, *cells]):
        styles = ("bold",) * len(widths) if r == 0 else listing.styles[r - 1] if r - 1 < len(listing.styles) else ()
        for line in lines_of(row):
            console.print(_styled_row(line, widths, listing.numeric, styles, Text), crop=False)
    for note in listing.notes:
        console.print(Text(safe_text(note)))


def wrap_cells(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` terminal cells (a double-width character counts two), broken
    between words, a word wider than the column cut into pieces that fit."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        while cell_width(word) > width:
            if line:
                lines.append(line)
                line = ""
            piece = _cut_to(word, width)
            lines.append(piece)
            word = word[len(piece):]
        joined = f"{line} {word}" if line else word
        if cell_width(joined) <= width:
            line = joined
        else:
            lines.append(line)
            line = word
    return [*lines, line] if line or not lines else lines


def _cut_to(word: str, width: int) -> str:
    """The longest start of `word` that fits `width` cells (at least one character)."""
    end = 1
    while end < len(word) and cell_width(word[:end + 1]) <= width:
        end += 1
    return word[:end]
