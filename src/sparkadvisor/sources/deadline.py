"""One time limit for a whole operation made of many blocking requests (and a library's retries).

Libraries such as huggingface_hub apply a timeout per request and retry on their own, so
a stalling server can hold an import for minutes. `Deadline.run` runs the operation in a
daemon thread and gives up when the limit passes, whatever the library is doing; the
requests inside ask `left()` for their own timeouts, so an abandoned thread ends soon too.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")
SHORTEST_S = 0.05
"""Timeout given to a request once the limit has passed (the library refuses 0)."""


class DeadlineExceeded(Exception):
    """The operation did not finish within its limit."""


class Deadline:
    """A limit of `seconds` from now, and what is being waited for."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self._waiting: Counter[str] = Counter()
        self._lock = threading.Lock()

    def left(self) -> float:
        """Seconds until the limit (at least SHORTEST_S, for a request's own timeout)."""
        return max(SHORTEST_S, self.ends - time.monotonic())

    @contextmanager
    def waiting_for(self, what: str) -> Iterator[None]:
        """Mark `what` as awaited while the block runs (for the sentence if the limit passes)."""
        with self._lock:
            self._waiting[what] += 1
        try:
            yield
        finally:
            with self._lock:
                self._waiting[what] -= 1
                if self._waiting[what] <= 0:
                    del self._waiting[what]

    def waiting(self) -> list[str]:
        """What was still awaited, in the order it was asked for."""
        with self._lock:
            return list(self._waiting)

    def run(self, work: Callable[[], T]) -> T:
        """`work()`, or DeadlineExceeded once the limit passes (the thread is left to end on its own)."""
        future: Future[T] = Future()

        def target() -> None:
            try:
                future.set_result(work())
            except BaseException as error:  # noqa: BLE001  (handed to the waiting thread)
                future.set_exception(error)

        threading.Thread(target=target, name="sparkadvisor-deadline", daemon=True).start()
        try:
            return future.result(timeout=max(0.0, self.ends - time.monotonic()))
        except FutureTimeout:
            raise DeadlineExceeded from None
