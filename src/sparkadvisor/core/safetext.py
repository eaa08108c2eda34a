"""Catalog text made safe to print: control characters and escape sequences shown escaped.

A catalog, a hub or a server can put any character in a name, a caveat or an error. Before
such text reaches a terminal (CLI, TUI, an exported script's messages) every character that
could move the cursor, set a title or colours, or reorder what a reader sees is written as an
escape a person can read (`\\x1b`, `\\u202e`), so `ESC]2;pwned` prints as `\\x1b]2;pwned`.
"""

from __future__ import annotations

import json
import math
import unicodedata
from functools import lru_cache
from typing import Any

_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Controls (C0, DEL, C1 such as CSI 0x9b), format characters (bidi overrides, zero-width),
surrogates, private use, unassigned code points, and the Unicode line and paragraph separators."""

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


@lru_cache(maxsize=4096)
def _escape(char: str) -> str:
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _unsafe(char: str) -> bool:
    return unicodedata.category(char) in _UNSAFE_CATEGORIES


def safe_text(text: object, keep_newlines: bool = False) -> str:
    """`text` (made a str) with every control or format character written as an escape.

    With `keep_newlines`, "\\n" stays a line break (for multi-line notes); tabs and
    everything else are escaped either way."""
    value = text if isinstance(text, str) else str(text)
    # str.isprintable() is False for every character of the unsafe categories (and for a few safe
    # ones, such as a no-break space, which then take the character-by-character path).
    if value.isprintable() or (keep_newlines and all(line.isprintable() for line in value.split("\n"))):
        return value
    return "".join(
        _escape(char) if _unsafe(char) and not (keep_newlines and char == "\n") else char for char in value
    )


def _finite(data: Any) -> Any:
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: _finite(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [_finite(value) for value in data]
    return data


def safe_json(data: Any, indent: int | None = 2) -> str:
    """JSON text for a terminal: valid JSON, no NaN or Infinity, and no raw control or format character.

    Strings keep their exact value: unsafe characters are written as JSON `\\uXXXX` escapes,
    which read back as the same string. A number that is not finite is unknown: null."""
    try:  # nearly always every number is finite: no walk over the data first
        text = json.dumps(data, indent=indent, ensure_ascii=False, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(data), indent=indent, ensure_ascii=False, allow_nan=False)
    if text.isascii() and "\x7f" not in text:
        return text
    # json.dumps already escapes C0; DEL and everything above ASCII are left to us.
    return "".join(json.dumps(char)[1:-1] if ord(char) > 0x7E and _unsafe(char) else char for char in text)
