"""``ProcessQueue``: the messages pulled from one queue and not yet consumed.

Invariants: ``_msgs`` holds messages in offset order (pulls of one queue are sequential, and
messages handed back by an orderly consumer are re-merged in order), so the smallest offset
still in flight is its first key; an orderly consumer moves messages to ``_consuming`` while
its listener runs and commits or returns them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from rocketpy._native import MessageExt

#: A queue lock not renewed within this time is no longer trusted (RocketMQ: 30 s).
LOCK_MAX_LIVE_S = 30.0


class ProcessQueue:
    """Pulled, unconsumed messages of one queue, and its flags."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._msgs: dict[int, MessageExt] = {}
        self._consuming: dict[int, MessageExt] = {}
        self._size = 0
        self.max_offset = -1
        self.dropped = False
        self.last_pull = time.monotonic()
        self.last_consume = time.monotonic()
        # Orderly consumption: broker lock state, and one consuming thread at a time.
        self.locked = False
        self.last_lock = 0.0
        self.consume_lock = threading.Lock()

    def put(self, msgs: Iterable[MessageExt]) -> None:
        """Adds pulled messages (in offset order)."""
        with self._lock:
            for m in msgs:
                off = m.queue_offset
                if off not in self._msgs and off not in self._consuming:
                    self._msgs[off] = m
                    self._size += m.body_size
                    self.max_offset = max(self.max_offset, off)

    def remove(self, msgs: Iterable[MessageExt]) -> int:
        """Removes consumed messages; returns the offset to commit: the smallest offset still
        in flight, or one past the largest seen when none is; -1 if nothing was ever held."""
        with self._lock:
            if self.max_offset < 0:
                return -1
            for m in msgs:
                held = self._msgs.pop(m.queue_offset, None)
                if held is not None:
                    self._size -= held.body_size
            self.last_consume = time.monotonic()
            if self._msgs:
                return next(iter(self._msgs))
            return self.max_offset + 1

    # -- orderly ------------------------------------------------------------------------------

    def take(self, n: int) -> list[MessageExt]:
        """Moves the first ``n`` messages to the consuming set and returns them."""
        with self._lock:
            out = []
            for off in list(self._msgs)[:n]:
                m = self._msgs.pop(off)
                self._consuming[off] = m
                out.append(m)
            self.last_consume = time.monotonic()
            return out

    def commit(self) -> int:
        """The consuming set is done: returns the offset to commit (or -1)."""
        with self._lock:
            if not self._consuming:
                return -1
            offset = max(self._consuming) + 1
            self._size -= sum(m.body_size for m in self._consuming.values())
            self._consuming.clear()
            return offset

    def consume_again(self, msgs: Iterable[MessageExt]) -> None:
        """Puts consuming messages back in front, to be given to the listener again."""
        with self._lock:
            for m in msgs:
                self._consuming.pop(m.queue_offset, None)
                self._msgs[m.queue_offset] = m
            self._msgs = dict(sorted(self._msgs.items()))

    def lock_expired(self) -> bool:
        """Whether the broker lock was last confirmed too long ago to be trusted."""
        return time.monotonic() - self.last_lock > LOCK_MAX_LIVE_S

    # -- flow control -------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Messages waiting to be given to a listener (consuming ones excluded)."""
        return len(self._msgs)

    @property
    def count(self) -> int:
        """Messages held (consuming ones included)."""
        return len(self._msgs) + len(self._consuming)

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
