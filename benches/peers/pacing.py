"""How long a producer workload goes on: by time, by count, or both."""

from __future__ import annotations

import time
from collections.abc import Iterator


def chunks(seconds: float | None, count: int | None, size: int) -> Iterator[int]:
    """Sizes of the next runs of sends, ``size`` at most each, until ``seconds`` have passed
    (checked between runs) or ``count`` messages are covered; either may be None."""
    deadline = time.perf_counter() + seconds if seconds is not None else float("inf")
    left = count if count is not None else -1
    while left != 0 and time.perf_counter() < deadline:
        n = size if left < 0 else min(size, left)
        yield n
        if left > 0:
            left -= n
