"""``ProcessQueue``: the messages pulled from one queue and not yet consumed.

Messages arrive in offset order (pulls of one queue are sequential), so insertion order is
offset order: the smallest offset still in flight is always the first key.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from rocketpy._native import MessageExt


class ProcessQueue:
    """Pulled, unconsumed messages of one queue, and its flags."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._msgs: dict[int, MessageExt] = {}
        self._size = 0
        self.max_offset = -1
        self.dropped = False
        self.last_pull = time.monotonic()
        self.last_consume = time.monotonic()

    def put(self, msgs: Iterable[MessageExt]) -> None:
        """Adds pulled messages (in offset order)."""
        with self._lock:
            for m in msgs:
                off = m.queue_offset
                if off not in self._msgs:
                    self._msgs[off] = m
                    self._size += len(m.body)
                    if off > self.max_offset:
                        self.max_offset = off

    def remove(self, msgs: Iterable[MessageExt]) -> int:
        """Removes consumed messages; returns the offset to commit (the smallest offset still
        in flight, or one past the largest seen when none is), -1 if nothing was held."""
        with self._lock:
            if not self._msgs and self.max_offset < 0:
                return -1
            for m in msgs:
                held = self._msgs.pop(m.queue_offset, None)
                if held is not None:
                    self._size -= len(held.body)
            self.last_consume = time.monotonic()
            if self._msgs:
                return next(iter(self._msgs))
            return self.max_offset + 1

    @property
    def count(self) -> int:
        """Messages held."""
        return len(self._msgs)

    @property
    def size(self) -> int:
        """Body bytes held."""
        return self._size

    def span(self) -> int:
        """Largest minus smallest offset held (0 when empty)."""
        with self._lock:
            if not self._msgs:
                return 0
            return self.max_offset - next(iter(self._msgs))
