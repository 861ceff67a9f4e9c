"""One thread running delayed and periodic jobs (route refresh, heartbeats, delayed pulls)."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger("rocketpy.client")


class Scheduler:
    """Runs callables at given times on one daemon thread. Jobs must be short: anything that
    blocks (network waits) belongs on another thread."""

    def __init__(self, name: str) -> None:
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def call_later(self, delay_s: float, fn: Callable[[], None]) -> None:
        """Runs ``fn`` after ``delay_s`` seconds."""
        with self._cond:
            if self._stopped:
                return
            heapq.heappush(self._heap, (time.monotonic() + delay_s, next(self._seq), fn))
            self._cond.notify()

    def every(self, initial_s: float, period_s: float, fn: Callable[[], None]) -> None:
        """Runs ``fn`` after ``initial_s`` and then every ``period_s`` seconds."""

        def tick() -> None:
            try:
                fn()
            finally:
                self.call_later(period_s, tick)

        self.call_later(initial_s, tick)

    def stop(self) -> None:
        """Drops pending jobs and ends the thread (after the running job)."""
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._cond.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped:
                    if self._heap:
                        delay = self._heap[0][0] - time.monotonic()
                        if delay <= 0:
                            break
                        self._cond.wait(delay)
                    else:
                        self._cond.wait()
                if self._stopped:
                    return
                _, _, fn = heapq.heappop(self._heap)
            try:
                fn()
            except Exception:
                log.exception("scheduled job failed")
