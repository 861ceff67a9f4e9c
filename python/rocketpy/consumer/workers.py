"""``WorkerPool``: the threads that run a push consumer's listener.

Unlike :class:`concurrent.futures.ThreadPoolExecutor`, whose threads the interpreter joins at
exit after running every queued task, these threads are daemons: a process that ends (or is
interrupted) while messages are queued exits at once. Queued messages are not lost: their
offsets were never committed, so the group gets them again.

Waking: at most one thread is woken and not yet working (the *searcher*), as in tokio's and
Go's schedulers: a submit wakes a thread only when there is no searcher, and a searcher that
finds work wakes the next one if work is still queued, so a burst of slow (waiting) listener
calls spreads over the whole pool one wake-up after another. Calls that are all short
(:data:`FAST_CALL_S`: the shortest of the last :data:`WINDOW` calls) gain nothing from more
threads — they hold the GIL — so then one thread runs them and the others stay asleep
(measured with a trivial listener: 20 threads spent more on wake-ups, GIL hand-offs and lock
convoys than on the listener, 2 context switches a message against 0.14 with one thread).
A monitor thread, awake only while calls are queued, wakes one more thread whenever none
was taken for :data:`MONITOR_S`: a listener that blocks cannot hold up queued calls while
threads sleep. What must stay true, under ``_lock``: queued calls are taken by a running
thread, a searcher, or (within ``MONITOR_S``) the thread the monitor wakes.

Work goes to the most recently idle thread, and a thread idle for ``idle_timeout`` (60 s)
ends. A pool of ``consumeThreadMax`` (20) threads whose load needs three keeps using the same
three; handing each call to whichever thread wakes first would spread it over all twenty. Each
thread that ever ran the listener keeps its stack pages and its glibc malloc cache (tcache: up
to 7 freed chunks per size class) resident, and those cached chunks pin heap pages that
nothing else uses; a thread that ends gives its cache back. Measured with 5 broadcasting
consumers in one process (RssAnon, minutes 3 to 33, two processes each, same run): idle-last
alone +7.2 % and +8.5 %; with idle threads ending, +6.6 % and +5.2 % from a start 1.7 MB lower
(50-60 threads instead of 120). With glibc's tcache switched off the same process grew +2.2 %,
so what creeps is mostly chunks cached by threads that stay.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

log = logging.getLogger("rocketpy.consumer")

_Task = tuple[Callable[..., Any], tuple[Any, ...]]

#: A call shorter than this (wall time) is a "fast" one: it held the GIL, or waited too
#: little for another thread to overlap it usefully.
FAST_CALL_S = 50e-6
#: Calls per decision: the pool is in fast mode while the shortest of a window of this many
#: calls was fast (the shortest, because calls interrupted by a GIL switch look slow).
WINDOW = 16
#: How long queued calls may wait with none taken before the monitor wakes another thread.
MONITOR_S = 0.005


class WorkerPool:
    """Up to ``size`` daemon threads running submitted calls in order of submission. A call
    goes to the thread that went idle last; a new thread starts only when none is idle (as in
    RocketMQ's consume executor, never more than ``consumeThreadMax``), and a thread idle for
    ``idle_timeout`` seconds ends (RocketMQ keeps its 20 core threads; here the pool follows
    the load, see the module note)."""

    def __init__(self, size: int, name: str, idle_timeout: float = 60.0) -> None:
        self._size = max(1, size)
        self._name = name
        self._idle_timeout = idle_timeout
        self._tasks: collections.deque[_Task] = collections.deque()
        # Gates of idle threads, each held (locked) while its thread is not idle: releasing
        # one wakes its thread (a C-level lock, cheaper than an Event). The last went idle
        # most recently.
        self._idle: list[threading.Lock] = []
        self._threads: list[threading.Thread] = []
        self._searching = 0  # threads woken (or started) that have not taken work yet
        self._running = 0  # threads running a call
        self._taken = 0  # calls taken so far: the monitor's sign of progress
        self._fast = False  # the last window's calls were all fast (see FAST_CALL_S)
        self._window_min = float("inf")
        self._window_n = 0
        self._monitor: threading.Thread | None = None
        self._monitor_gate = threading.Lock()  # released to wake a parked monitor
        self._monitor_gate.acquire()
        self._monitor_parked = False
        self._started = 0
        self._lock = threading.Lock()
        self._closed = False

    @property
    def fast(self) -> bool:
        """Whether recent calls were all short (one thread runs them; see the module note).
        A call that runs several listener calls returns their number (an int), so that the
        mode follows one listener call's time."""
        return self._fast

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Queues ``fn(*args)``; raises ``RuntimeError`` once the pool is shut down."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the worker pool is shut down")
            self._tasks.append((fn, args))
            self._queued()

    def submit_each(self, fn: Callable[..., Any], args: Iterable[tuple[Any, ...]]) -> None:
        """Queues ``fn(*a)`` for each ``a`` of ``args`` (in that order) under one lock;
        raises ``RuntimeError`` once the pool is shut down."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the worker pool is shut down")
            self._tasks.extend((fn, a) for a in args)
            if self._tasks:
                self._queued()

    def _queued(self) -> None:
        """Calls were queued: a thread to take them, and the monitor. With ``_lock`` held."""
        if not self._searching and not (self._fast and self._running):
            self._wake_one()
        if self._monitor_parked:
            self._monitor_parked = False
            self._monitor_gate.release()
        elif self._monitor is None:
            self._monitor = threading.Thread(
                target=self._watch, name=f"{self._name}-monitor", daemon=True
            )
            self._monitor.start()

    def _wake_one(self) -> None:
        """Makes one more searcher: the thread idle last, else a new thread if the pool has
        room. Called with ``_lock`` held."""
        if self._idle:
            self._searching += 1
            self._idle.pop().release()
        elif len(self._threads) < self._size:
            self._searching += 1
            t = threading.Thread(
                target=self._run, name=f"{self._name}-{self._started}", daemon=True
            )
            self._started += 1
            self._threads.append(t)
            t.start()

    def _next(self, gate: threading.Lock, searching: bool, took: float) -> _Task | None:
        """The next queued call; waits (idle) while there is none. ``None`` once shut down or
        after ``idle_timeout`` idle (the thread then leaves the pool). ``searching``: this
        thread was woken (or started) for work and counts as the searcher. ``took``: the
        wall time of the call this thread just ran (negative if none)."""
        while True:
            with self._lock:
                if took >= 0:
                    self._running -= 1
                    self._note_call(took)
                    took = -1.0
                if searching:
                    self._searching -= 1
                    searching = False
                # A fast pool keeps one thread running; the others wait (the monitor wakes
                # one if the running one stops taking calls).
                if self._tasks and not (self._fast and self._running):
                    task = self._tasks.popleft()
                    self._running += 1
                    self._taken += 1
                    if self._tasks and not self._searching and not self._fast:
                        self._wake_one()  # spread slow calls over the pool
                    return task
                if self._closed:
                    return None
                self._idle.append(gate)
            if gate.acquire(timeout=self._idle_timeout):
                searching = True
                continue
            with self._lock:
                if gate in self._idle:  # not woken while timing out
                    self._idle.remove(gate)
                    self._threads.remove(threading.current_thread())
                    return None
            # Woken just as the wait timed out: the waker released the gate already.
            gate.acquire()
            searching = True

    def _note_call(self, took: float) -> None:
        """Counts one call's wall time toward the mode. With ``_lock`` held."""
        if took < self._window_min:
            self._window_min = took
        self._window_n += 1
        if self._window_n >= WINDOW:
            self._fast = self._window_min < FAST_CALL_S
            self._window_min = float("inf")
            self._window_n = 0

    def _run(self) -> None:
        gate = threading.Lock()
        gate.acquire()
        clock = time.monotonic
        task = self._next(gate, True, -1.0)
        while task is not None:
            fn, args = task
            started = clock()
            calls = None
            try:
                calls = fn(*args)
            except BaseException:  # the callables handle listener failures; this is a bug
                log.exception("%s: unexpected error", threading.current_thread().name)
            finally:
                del task, fn, args
            took = clock() - started
            # A call may say it ran several listener calls: the mode goes by one call's time.
            task = self._next(
                gate, False, took / calls if type(calls) is int and calls > 1 else took
            )

    def _watch(self) -> None:
        """The monitor: while calls are queued, wakes another thread each time none was
        taken for ``MONITOR_S``; parks while the queue is empty."""
        while True:
            with self._lock:
                if self._closed:
                    return
                # Decided under the lock and kept: each park takes exactly the one release
                # that ends it (a second release of the gate would raise in submit).
                park = not self._tasks
                if park:
                    self._monitor_parked = True
                taken = self._taken
            if park:
                self._monitor_gate.acquire()
                continue
            time.sleep(MONITOR_S)
            with self._lock:
                if self._tasks and self._taken == taken and not self._searching:
                    self._fast = False  # a call is stuck: spread the queue over the pool
                    self._wake_one()

    def shutdown(self, timeout: float | None = None) -> bool:
        """Drops queued calls, lets running ones finish (waiting at most ``timeout`` seconds,
        forever if None) and stops the threads. Returns whether every thread ended."""
        with self._lock:
            self._closed = True
            self._tasks.clear()
            for gate in self._idle:
                self._searching += 1
                gate.release()
            self._idle.clear()
            if self._monitor_parked:
                self._monitor_parked = False
                self._monitor_gate.release()
            threads = list(self._threads)
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in threads:
            if t is threading.current_thread():
                continue
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            t.join(left)
        return not any(t.is_alive() for t in threads if t is not threading.current_thread())
