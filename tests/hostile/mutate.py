"""Mutated catalogs, as a hostile or unlucky user writes them: for the fuzz test and scripts/fuzz_catalog.py.

A mutation edits the TOML text of a real catalog: a number made hostile, a string made
hostile, a line dropped, a table repeated, a value given the wrong type, arrays nested.
Each is a (kind, position, choice) triple, so hypothesis can shrink a failing case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NUMBERS = ["0", "-1", "1e-308", "5e-324", "1e300", "1e19", "9223372036854775808", "nan", "inf", "-inf", "0.5",
           "1e6", "3", "1_000_000_000", "-0.0", "2.5e-7"]
STRINGS = ['""', '"\\u001b]2;owned\\u0007\\u001b[2J"', '"- --trust-remote-code"', '"a\\nb: c"', '"x" ',
           '"' + "y" * 3000 + '"', '"\\u202eevil"', '"[bold]x[/]"', '"$(reboot)"']
_NUMBER_LINE = re.compile(r"^([a-z_]+) = (-?[0-9][0-9_.eE+-]*)$")
_STRING_LINE = re.compile(r'^([a-z_]+) = ("[^"\n]*")$')
KINDS = ("number", "string", "drop", "repeat", "type", "nest", "swap")


@dataclass(frozen=True)
class Mutation:
    kind: str
    position: int
    choice: int

    def apply(self, lines: list[str]) -> list[str]:
        """`lines` with this mutation applied (positions wrap around)."""
        return getattr(self, f"_{self.kind}")(list(lines))

    def _pick(self, lines: list[str], pattern: re.Pattern[str]) -> int | None:
        found = [i for i, line in enumerate(lines) if pattern.match(line)]
        return found[self.position % len(found)] if found else None

    def _number(self, lines: list[str]) -> list[str]:
        if (i := self._pick(lines, _NUMBER_LINE)) is not None:
            lines[i] = f"{lines[i].split(' = ')[0]} = {NUMBERS[self.choice % len(NUMBERS)]}"
        return lines

    def _string(self, lines: list[str]) -> list[str]:
        if (i := self._pick(lines, _STRING_LINE)) is not None:
            lines[i] = f"{lines[i].split(' = ')[0]} = {STRINGS[self.choice % len(STRINGS)]}"
        return lines

    def _drop(self, lines: list[str]) -> list[str]:
        if lines:
            del lines[self.position % len(lines)]
        return lines

    def _repeat(self, lines: list[str]) -> list[str]:
        """A [[table]] block written twice (same ids: a duplicate)."""
        starts = [i for i, line in enumerate(lines) if line.startswith("[[") and "." not in line]
        if not starts:
            return lines
        start = starts[self.position % len(starts)]
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("[[") and "." not in lines[i]),
                   len(lines))
        return lines + [""] + lines[start:end]

    def _type(self, lines: list[str]) -> list[str]:
        if (i := self._pick(lines, _NUMBER_LINE)) is not None:
            lines[i] = f"{lines[i].split(' = ')[0]} = {['true', '[1, 2]', '{ a = 1 }', '1979-05-27'][self.choice % 4]}"
        return lines

    def _nest(self, lines: list[str]) -> list[str]:
        depth = [3, 40, 400, 3000][self.choice % 4]
        return lines + ["", "[deep]", "x = " + "[" * depth + "]" * depth]

    def _swap(self, lines: list[str]) -> list[str]:
        """Two number lines of the same table exchange values (a part larger than the whole, and so on)."""
        found = [i for i, line in enumerate(lines) if _NUMBER_LINE.match(line)]
        if len(found) < 2:
            return lines
        a = found[self.position % len(found)]
        b = next((j for j in found if j > a), None)
        if b is None or b - a > 8:
            return lines
        (ka, va), (kb, vb) = lines[a].split(" = "), lines[b].split(" = ")
        lines[a], lines[b] = f"{ka} = {vb}", f"{kb} = {va}"
        return lines


def mutate(text: str, mutations: list[Mutation]) -> str:
    lines = text.splitlines()
    for mutation in mutations:
        lines = mutation.apply(lines)
    return "\n".join(lines) + "\n"
