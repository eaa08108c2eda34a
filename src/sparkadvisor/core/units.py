"""Byte units. The article and vendors mix GB (10^9) and GiB (2^30); the core keeps bytes."""

from __future__ import annotations

GB = 1_000_000_000
"""Bytes in a gigabyte, as disk sizes and bandwidths are printed."""
GiB = 1 << 30
"""Bytes in a gibibyte, as usable memory and vLLM's KV budget are printed."""
KiB = 1 << 10


def to_bytes(value: float, unit: str) -> float:
    """Bytes in `value` of `unit` ("GB" or "GiB")."""
    return value * (GiB if unit == "GiB" else GB)


def from_bytes(n_bytes: float, unit: str) -> float:
    """`n_bytes` expressed in `unit` ("GB" or "GiB")."""
    return n_bytes / (GiB if unit == "GiB" else GB)


def fmt_size(n_bytes: float, unit: str = "GiB", digits: int = 1) -> str:
    """A size for people, e.g. "92.2 GiB"."""
    return f"{from_bytes(n_bytes, unit):,.{digits}f} {unit}"


def fmt_tokens(tokens: float | None) -> str:
    """A token count the way the article writes them: 699k, 1.97M."""
    if tokens is None:
        return "unknown"
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.2f}M"
    if tokens >= 10_000:
        return f"{tokens / 1000:,.0f}k"
    return f"{tokens:,.0f}"


def fmt_seconds(seconds: float | None) -> str:
    """A duration for people: 4.3 s, 1 min 13 s, 2 h 05 min."""
    if seconds is None:
        return "unknown"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours:,} h {minutes:02d} min"


def plural(count: int, word: str, many: str | None = None) -> str:
    """"1 node", "2 nodes", "0 builds" ("many" for irregular plurals)."""
    return f"{count} {word if count == 1 else (many or word + 's')}"
