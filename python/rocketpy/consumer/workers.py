"""``WorkerPool``: the threads that run a push consumer's listener.

Unlike :class:`concurrent.futures.ThreadPoolExecutor`, whose threads the interpreter joins at
exit after running every queued task, these threads are daemons: a process that ends (or is
interrupted) while messages are queued exits at once. Queued messages are not lost: their
offsets were never committed, so the group gets them again.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("rocketpy.consumer")


class WorkerPool:
    """``size`` daemon threads running submitted calls in order of submission. As in RocketMQ's
    consume executor (core size = max size = ``consumeThreadMax``), each of the first ``size``
    calls starts a thread: the pool is whole after its first burst, and its memory does not
    creep up with later bursts."""

    def __init__(self, size: int, name: str) -> None:
        self._size = max(1, size)
        self._name = name
        self._tasks: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...]] | None] = (
            queue.SimpleQueue()
        )
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Queues ``fn(*args)``; raises ``RuntimeError`` once the pool is shut down."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the worker pool is shut down")
            self._tasks.put((fn, args))
            if len(self._threads) < self._size:
                t = threading.Thread(
                    target=self._run, name=f"{self._name}-{len(self._threads)}", daemon=True
                )
                self._threads.append(t)
                t.start()

    def _run(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            fn, args = task
            try:
                fn(*args)
            except BaseException:  # the callables handle listener failures; this is a bug
                log.exception("%s: unexpected error", threading.current_thread().name)
            finally:
                del task, fn, args

    def shutdown(self, timeout: float | None = None) -> bool:
        """Drops queued calls, lets running ones finish (waiting at most ``timeout`` seconds,
        forever if None) and stops the threads. Returns whether every thread ended."""
        with self._lock:
            self._closed = True
            while True:
                try:
                    self._tasks.get_nowait()
                except queue.Empty:
                    break
            threads = list(self._threads)
            for _ in threads:
                self._tasks.put(None)
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in threads:
            if t is threading.current_thread():
                continue
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            t.join(left)
        return not any(t.is_alive() for t in threads if t is not threading.current_thread())
