"""Figures a ranking needs once per model rather than once per build, kept while one ranking runs.

A catalog holds several builds of most models (formats, publishers), and much of a plan reads only
the model and its recipe: what a request of max-model-len costs in the KV pool, what a decode step
reads from the cache, a prompt token's attention FLOPs. `core.advisor.advise` runs its plans inside
`per_ranking()`; there `once(key, compute, *args)` computes `compute(*args)` the first time `key` is
asked for and hands back the same figure after. Outside a ranking `once` just computes.

Keys name records by identity (`id()`): hashing a whole record costs about what a lookup saves.
Each entry keeps its arguments, so no identity is reused while the ranking runs; all of it is
dropped when the ranking ends, so nothing outlives the catalog it was computed from, and a second
ranking computes its figures afresh. The memo is a ContextVar: each thread has its own, so the
TUI's worker thread and its UI thread never share one.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

_memo: ContextVar[dict[Hashable, tuple[Any, tuple[Any, ...]]] | None] = ContextVar("sparkadvisor_memo",
                                                                                    default=None)


@contextmanager
def per_ranking() -> Iterator[None]:
    """Keep figures asked for with `once` until the block ends (a nested block shares the outer one's)."""
    if _memo.get() is not None:
        yield
        return
    token = _memo.set({})
    try:
        yield
    finally:
        _memo.reset(token)


def once(key: Hashable, compute: Callable[..., T], *args: Any) -> T:
    """`compute(*args)`, worked out once per `key` inside `per_ranking()` (every time outside it).
    `key` must tell apart every argument the figure depends on."""
    memo = _memo.get()
    if memo is None:
        return compute(*args)
    kept = memo.get(key)
    if kept is None:
        kept = memo[key] = (compute(*args), args)
    return kept[0]
