"""``ProcessQueue``: the messages pulled from one queue and not yet consumed, and the queue's
flags.

Invariants (kept by the native table, ``rocketpy._native.PendingMessages``): messages are held
by queue offset, so the smallest offset still in flight is the one to commit; an orderly
consumer moves messages to a consuming set while its listener runs and commits or returns
them.
"""

from __future__ import annotations

import threading
import time

from rocketpy._native import MessageExt, PendingMessages

#: A queue lock not renewed within this time is no longer trusted (RocketMQ: 30 s).
LOCK_MAX_LIVE_S = 30.0


class ProcessQueue:
    """Pulled, unconsumed messages of one queue, and its flags."""

    def __init__(self) -> None:
        self._held = PendingMessages()
        self.dropped = False
        self.last_pull = time.monotonic()
        self.last_consume = time.monotonic()
        # Orderly consumption: broker lock state, and one consuming thread at a time.
        self.locked = False
        self.last_lock = 0.0
        self.consume_lock = threading.Lock()

    @property
    def max_offset(self) -> int:
        """The largest offset pulled (-1 before any)."""
        return self._held.max_offset

    def put(self, msgs: list[MessageExt]) -> None:
        """Adds pulled messages (offsets already held are skipped)."""
        self._held.put(msgs)

    def remove(self, msgs: list[MessageExt]) -> int:
        """Removes consumed messages; returns the offset to commit: the smallest offset still
        in flight, or one past the largest seen when none is; -1 if nothing was ever held."""
        self.last_consume = time.monotonic()
        return self._held.remove(msgs)

    # -- orderly ------------------------------------------------------------------------------

    def take(self, n: int) -> list[MessageExt]:
        """Moves the first ``n`` messages to the consuming set and returns them."""
        self.last_consume = time.monotonic()
        return self._held.take(n)

    def commit(self) -> int:
        """The consuming set is done: returns the offset to commit (or -1)."""
        return self._held.commit()

    def consume_again(self, msgs: list[MessageExt]) -> None:
        """Puts consuming messages back in front, to be given to the listener again."""
        self._held.consume_again(msgs)

    def lock_expired(self) -> bool:
        """Whether the broker lock was last confirmed too long ago to be trusted."""
        return time.monotonic() - self.last_lock > LOCK_MAX_LIVE_S

    # -- flow control -------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Messages waiting to be given to a listener (consuming ones excluded)."""
        return self._held.pending

    @property
    def count(self) -> int:
        """Messages held (consuming ones included)."""
        return self._held.count

    @property
    def size(self) -> int:
        """Body bytes held."""
        return self._held.size

    def span(self) -> int:
        """Largest offset pulled minus the smallest waiting (0 when none waits)."""
        return self._held.span()
