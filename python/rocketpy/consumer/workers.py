"""``WorkerPool``: the threads that run a push consumer's listener.

Unlike :class:`concurrent.futures.ThreadPoolExecutor`, whose threads the interpreter joins at
exit after running every queued task, these threads are daemons: a process that ends (or is
interrupted) while messages are queued exits at once. Queued messages are not lost: their
offsets were never committed, so the group gets them again.

Work goes to the most recently idle thread. A pool of ``consumeThreadMax`` (20) threads whose
load needs three keeps using the same three; handing each call to whichever thread wakes first
would spread it over all twenty, and each thread that ever runs the listener keeps its own
stack pages and malloc cache resident. Measured in the soak (5 broadcasting consumers, 100
listener threads, one process): with calls spread, the heap grew ~75 KiB a minute for as long
as the run lasted, as thread after thread filled its cache.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("rocketpy.consumer")

_Task = tuple[Callable[..., Any], tuple[Any, ...]]


class WorkerPool:
    """``size`` daemon threads running submitted calls in order of submission. As in RocketMQ's
    consume executor (core size = max size = ``consumeThreadMax``), each of the first ``size``
    calls starts a thread: the pool is whole after its first burst, and its memory does not
    step up with later bursts. Later calls wake the thread that went idle last."""

    def __init__(self, size: int, name: str) -> None:
        self._size = max(1, size)
        self._name = name
        self._tasks: collections.deque[_Task] = collections.deque()
        # Wake-up events of idle threads; the last one went idle most recently.
        self._idle: list[threading.Event] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Queues ``fn(*args)``; raises ``RuntimeError`` once the pool is shut down."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the worker pool is shut down")
            if len(self._threads) < self._size:
                t = threading.Thread(
                    target=self._run,
                    args=((fn, args),),
                    name=f"{self._name}-{len(self._threads)}",
                    daemon=True,
                )
                self._threads.append(t)
                t.start()
                return
            self._tasks.append((fn, args))
            if self._idle:
                self._idle.pop().set()

    def _next(self, wake: threading.Event) -> _Task | None:
        """The next queued call; waits (idle) while there is none. ``None`` once shut down."""
        while True:
            with self._lock:
                if self._tasks:
                    return self._tasks.popleft()
                if self._closed:
                    return None
                wake.clear()
                self._idle.append(wake)
            wake.wait()

    def _run(self, first: _Task) -> None:
        wake = threading.Event()
        task: _Task | None = first
        while task is not None:
            fn, args = task
            try:
                fn(*args)
            except BaseException:  # the callables handle listener failures; this is a bug
                log.exception("%s: unexpected error", threading.current_thread().name)
            finally:
                del task, fn, args
            task = self._next(wake)

    def shutdown(self, timeout: float | None = None) -> bool:
        """Drops queued calls, lets running ones finish (waiting at most ``timeout`` seconds,
        forever if None) and stops the threads. Returns whether every thread ended."""
        with self._lock:
            self._closed = True
            self._tasks.clear()
            for wake in self._idle:
                wake.set()
            self._idle.clear()
            threads = list(self._threads)
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in threads:
            if t is threading.current_thread():
                continue
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            t.join(left)
        return not any(t.is_alive() for t in threads if t is not threading.current_thread())
