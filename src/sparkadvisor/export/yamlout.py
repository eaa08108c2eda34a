"""A YAML emitter for what exports write: block mappings and sequences of quoted strings.

Every string, keys included, is a double-quoted scalar with each non-printable character
escaped, so no catalog value can end a scalar, start a key, or be read as a number, a
boolean or null (YAML 1.1's `yes`, `on`, `0x10`). Booleans and integers are written bare
because they are written on purpose; floats are refused (exports write figures as text).
PyYAML is not a runtime dependency: this is the whole of the YAML an export needs, and the
test suite loads every file it writes with PyYAML's safe loader.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def quoted(value: str) -> str:
    """A YAML double-quoted scalar that reads back as exactly `value`."""
    out = []
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable() and ch not in "\x85\u2028\u2029\ufeff":
            out.append(ch)
        elif ord(ch) <= 0xFF:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def scalar(value: Any) -> str:
    """One scalar: a quoted string, true/false, an integer, or null."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return quoted(value)
    if value is None:
        return "null"
    raise TypeError(f"the YAML emitter writes strings, booleans and integers, not {type(value).__name__}")


def dump(data: Mapping[str, Any]) -> str:
    """`data` as a YAML document (block style), ending in a newline."""
    return "\n".join(_mapping(data, "")) + "\n"


def _mapping(data: Mapping[str, Any], pad: str) -> list[str]:
    if not data:
        return [pad + "{}"]
    lines = []
    for key, value in data.items():
        if not isinstance(key, str):
            raise TypeError("YAML keys written by an export are strings")
        lines += _entry(f"{pad}{quoted(key)}:", value, pad + "  ")
    return lines


def _sequence(items: Sequence[Any], pad: str) -> list[str]:
    lines = []
    for item in items:
        if isinstance(item, Mapping) and item:
            block = _mapping(item, pad + "  ")
            lines += [f"{pad}- {block[0][len(pad) + 2:]}", *block[1:]]
        else:
            lines += _entry(f"{pad}-", item, pad + "  ")
    return lines


def _entry(head: str, value: Any, pad: str) -> list[str]:
    """`head` followed by `value`: inline when it is a scalar or empty, else as a block below."""
    if isinstance(value, Mapping) and value:
        return [head] + _mapping(value, pad)
    if isinstance(value, (list, tuple)) and value:
        return [head] + _sequence(value, pad)
    if isinstance(value, Mapping):
        return [f"{head} {{}}"]
    if isinstance(value, (list, tuple)):
        return [f"{head} []"]
    return [f"{head} {scalar(value)}"]
