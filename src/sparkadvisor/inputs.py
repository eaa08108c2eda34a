"""What a person types for a number, read the same way by the CLI's options and the TUI's fields.

Each parser returns the value or raises argparse.ArgumentTypeError with one sentence saying
what was wrong, which argparse prints as is and the TUI shows beside the field.
"""

from __future__ import annotations

import argparse

TYPE_CHECKING = False
"""typing.TYPE_CHECKING without importing typing: `--help` imports this module (mypy reads the name)."""

if TYPE_CHECKING:
    from collections.abc import Callable


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (100_000 and 100,000 allowed)."""
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


MAX_TOKENS = 100_000_000
"""The most tokens a prompt or an answer may be: ten times the longest context window in the catalog
(Llama 4 Scout's 10M); past it no figure means anything and floats lose whole tokens."""

MAX_STREAMS = 256
"""The most concurrent streams: vLLM's default --max-num-seqs."""


def _count_up_to(most: int, unit: str, read: Callable[[str], int] = positive_int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = read(text)
        if value > most:
            raise argparse.ArgumentTypeError(f"{text!r} must be at most {most:,} {unit}")
        return value

    return parse


SUFFIXES = {"k": 10**3, "m": 10**6, "K": 2**10, "M": 2**20}
"""Token-count suffixes as vLLM reads them (human_readable_int): lower case decimal, upper case binary, so
100k is 100,000 and 128K is 131,072."""


def tokens_number(text: str) -> int:
    """A whole number of at least 1, or one with a suffix (`SUFFIXES`): 100k, 1.5k, 128K, 1M."""
    stripped = text.strip()
    factor = SUFFIXES.get(stripped[-1:])
    if factor is None:
        try:
            return positive_int(stripped)
        except argparse.ArgumentTypeError as error:
            if "whole number" not in str(error):
                raise
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of tokens (100000, 100k or 128K)") \
                from None
    digits = stripped[:-1].replace("_", "").replace(",", "")
    decimal = stripped[-1].islower() and digits.count(".") == 1
    if not (digits.replace(".", "", 1) if decimal else digits).isdecimal():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number, or one with k, m (x1,000, x1,000,000) "
                                         "or K, M (x1,024, x1,048,576) after it")
    whole, _, fraction_digits = digits.partition(".")
    scaled, scale = int(whole + fraction_digits) * factor, 10 ** len(fraction_digits)  # exact: 1.001k is 1,001
    if scaled % scale or scaled < scale:
        raise argparse.ArgumentTypeError(f"{text!r} must be a whole number of at least 1")
    return scaled // scale


token_count = _count_up_to(MAX_TOKENS, "tokens", tokens_number)
"""An argparse type: a whole number of tokens from 1 to MAX_TOKENS (100000, 100k, 128K)."""

stream_count = _count_up_to(MAX_STREAMS, "streams")
"""An argparse type: a whole number of streams from 1 to MAX_STREAMS."""


def number_above_zero(most: float, unit: str = "") -> Callable[[str], float]:
    """An argparse type: a number more than 0 and at most `most` (`unit` names it in messages)."""
    what = f" {unit}" if unit else ""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number{' of' + what if unit else ''}") from None
        if not 0 < value <= most:
            raise argparse.ArgumentTypeError(f"{text!r} must be more than 0 and at most {most:g}{what}")
        return value

    return parse


fraction = number_above_zero(1)
"""An argparse type: a number in (0, 1]."""


def share(text: str) -> float:
    """An argparse type: a share in [0, 1], or a percentage such as 95%."""
    try:
        value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1 (or 0% and 100%)")
    return value
