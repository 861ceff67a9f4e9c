"""Flow control of pulls: a queue whose consumer holds too many messages stops pulling until
consumption has made room — woken by the consumption itself, or by a back-off timer,
whichever comes first.

RocketMQ retries a flow-controlled pull after a fixed 50 ms. A Python consumer drains its
buffer much faster than that (1,000 messages take ~1 ms to poll), so a fixed wait leaves it
idle most of the time once the buffer is full: here the wait ends as soon as the consumer
took messages, and the timer only covers a wake-up that nothing triggers.

What must stay true: a pull request has at most one pull in flight or one pending wake-up;
the held entry's token decides which of the timer and the consumer's wake-up goes on.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Protocol

from rocketpy.consumer.model import PullRequest


class Timers(Protocol):
    """Where the back-off runs (the consumer's :class:`~rocketpy.client.scheduler.Scheduler`)."""

    def call_later(self, delay_s: float, fn: Callable[[], None]) -> None:
        """Runs ``fn`` after ``delay_s`` seconds."""


class PullGate:
    """Pull requests held back by flow control, each woken once."""

    def __init__(
        self,
        pull: Callable[[PullRequest], None],
        wait_for: Callable[[PullRequest], float],
    ) -> None:
        """``pull`` starts a pull; ``wait_for`` is the flow control's answer for a request
        (0: it may pull now, else seconds to wait)."""
        self._pull = pull
        self._wait_for = wait_for
        self._lock = threading.Lock()
        self._held: dict[int, tuple[PullRequest, int]] = {}
        self._tokens = itertools.count()

    def hold(self, pr: PullRequest, wait_s: float, scheduler: Timers | None) -> None:
        """Holds ``pr`` back for at most ``wait_s`` seconds (``scheduler`` None: the
        consumer stopped, nothing is held)."""
        if scheduler is None:
            return
        token = next(self._tokens)
        with self._lock:
            self._held[id(pr)] = (pr, token)
        scheduler.call_later(wait_s, lambda: self._release(pr, token))
        # Room made between the caller's check and now has woken nothing: look again.
        if not self._wait_for(pr):
            self._release(pr, token)

    def wake(self, pr: PullRequest | None = None) -> None:
        """Consumption made room: held requests (``pr`` only, when given) that may pull
        now pull, from the calling thread. Costs a dict look-up when nothing is held."""
        if not self._held:
            return
        with self._lock:
            if pr is None:
                held = list(self._held.values())
            else:
                entry = self._held.get(id(pr))
                held = [entry] if entry is not None else []
        for p, token in held:
            if not self._wait_for(p):
                self._release(p, token)

    def _release(self, pr: PullRequest, token: int) -> None:
        with self._lock:
            entry = self._held.get(id(pr))
            if entry is None or entry[1] != token:
                return  # woken already (the other of the timer and the consumer)
            del self._held[id(pr)]
        self._pull(pr)
