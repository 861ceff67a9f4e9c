"""``WorkerPool``, the push consumer's listener threads: order, shutdown, idle threads, and
how many threads a load wakes (one for short calls, the pool for waiting ones, never a queued
call held up by a stuck one)."""

from __future__ import annotations

import threading
import time

import pytest

from rocketpy.consumer import workers
from rocketpy.consumer.workers import WorkerPool


def _wait_for(cond, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


def test_worker_pool_runs_in_order_drops_the_queue_at_shutdown_and_bounds_the_wait():
    pool = WorkerPool(2, "t")
    done: list[int] = []
    for i in range(10):
        pool.submit(done.append, i)
    deadline = time.monotonic() + 5
    while len(done) < 10 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(done) == list(range(10))
    assert all(t.daemon for t in pool._threads), "daemon threads never hold the exit"

    release = threading.Event()
    started = threading.Semaphore(0)

    def busy() -> None:
        started.release()
        release.wait()

    for _ in range(2):
        pool.submit(busy)
    assert started.acquire(timeout=5) and started.acquire(timeout=5), "both threads busy"
    for i in range(100):
        pool.submit(done.append, 100 + i)  # queued behind them
    t0 = time.monotonic()
    assert pool.shutdown(timeout=0.3) is False, "a listener still running"
    assert time.monotonic() - t0 < 2
    release.set()
    assert pool.shutdown(timeout=5) is True
    assert not [d for d in done if d >= 100], "queued calls were dropped, not run"
    with pytest.raises(RuntimeError):
        pool.submit(done.append, 0)


def test_worker_pool_gives_work_to_the_thread_idle_last():
    """A light load stays on one thread of a whole pool (each thread that runs the listener
    keeps its stack pages and malloc cache resident; spreading calls over all of them made a
    consumer's memory creep)."""
    pool = WorkerPool(8, "t")

    def all_idle() -> None:
        deadline = time.monotonic() + 5
        while len(pool._idle) < 8:
            assert time.monotonic() < deadline
            time.sleep(0.001)

    release = threading.Event()
    started = threading.Semaphore(0)

    def busy() -> None:
        started.release()
        release.wait()

    for _ in range(8):  # the first burst starts the whole pool
        pool.submit(busy)
    for _ in range(8):
        assert started.acquire(timeout=5)
    release.set()
    used: list[str] = []
    for _ in range(50):  # one call at a time
        all_idle()
        pool.submit(lambda: used.append(threading.current_thread().name))
    all_idle()
    assert len(pool._threads) == 8
    assert len(set(used)) == 1, set(used)
    assert pool.shutdown(timeout=5) is True


def test_worker_pool_threads_idle_too_long_end_and_come_back_on_demand():
    """An idle thread ends after idle_timeout (returning its malloc cache); work that comes
    later starts a thread again, never more than the pool's size."""
    pool = WorkerPool(4, "t", idle_timeout=0.2)
    release = threading.Event()
    started = threading.Semaphore(0)

    def busy() -> None:
        started.release()
        release.wait()

    for _ in range(6):
        pool.submit(busy)
    for _ in range(4):
        assert started.acquire(timeout=5)
    assert len(pool._threads) == 4, "at most size threads"
    release.set()
    for _ in range(2):
        assert started.acquire(timeout=5), "the queued calls ran too"
    deadline = time.monotonic() + 5
    while pool._threads and time.monotonic() < deadline:
        time.sleep(0.02)
    assert pool._threads == [], "idle threads ended"
    done = threading.Event()
    pool.submit(done.set)
    assert done.wait(5)
    assert len(pool._threads) == 1
    assert pool.shutdown(timeout=5) is True


def test_short_calls_run_on_one_thread_of_a_big_pool():
    """A trivial listener's calls hold the GIL: more threads would only add wake-ups and lock
    convoys, so once the pool has seen short calls, bursts run on one thread."""
    pool = WorkerPool(20, "t")
    names: list[str] = []
    done = threading.Semaphore(0)

    def call() -> None:
        names.append(threading.current_thread().name)
        done.release()

    for _ in range(3 * workers.WINDOW):  # teach it that calls are short
        pool.submit(call)
    for _ in range(3 * workers.WINDOW):
        assert done.acquire(timeout=5)
    assert pool._fast
    names.clear()
    for _ in range(20):  # bursts, as pulls deliver them
        pool.submit_each(call, [()] * 32)
        for _ in range(32):
            assert done.acquire(timeout=5)
    assert len(set(names)) <= 2, set(names)
    assert pool.shutdown(timeout=5) is True


def test_waiting_calls_spread_over_the_whole_pool():
    """Calls that wait (I/O, a sleep) keep every thread of the pool busy: 64 calls of 50 ms on
    8 threads take about 8 rounds, not 64."""
    pool = WorkerPool(8, "t")
    done = threading.Semaphore(0)
    names: set[str] = set()

    def call() -> None:
        time.sleep(0.05)
        names.add(threading.current_thread().name)
        done.release()

    t0 = time.monotonic()
    pool.submit_each(call, [()] * 64)
    for _ in range(64):
        assert done.acquire(timeout=10)
    assert len(names) == 8
    assert time.monotonic() - t0 < 64 * 0.05 / 2, "the calls overlapped"
    assert not pool._fast
    assert pool.shutdown(timeout=5) is True


def test_a_stuck_call_does_not_hold_up_queued_ones_in_a_fast_pool():
    """In fast mode one thread runs the calls; when it stops taking them (its call blocks),
    the monitor wakes another thread within a few MONITOR_S, so queued calls still run."""
    pool = WorkerPool(4, "t")
    done = threading.Semaphore(0)
    for _ in range(2 * workers.WINDOW):
        pool.submit(done.release)
    for _ in range(2 * workers.WINDOW):
        assert done.acquire(timeout=5)
    assert pool._fast
    release = threading.Event()
    pool.submit(release.wait)  # blocks its thread
    pool.submit_each(done.release, [()] * 10)
    for _ in range(10):
        assert done.acquire(timeout=5), "a queued call waited for the stuck one"
    release.set()
    assert pool.shutdown(timeout=5) is True


def test_submit_each_queues_in_order_and_refuses_after_shutdown():
    pool = WorkerPool(1, "t")
    got: list[int] = []
    pool.submit_each(got.append, [(i,) for i in range(100)])
    _wait_for(lambda: len(got) == 100)
    assert got == list(range(100))
    assert pool.shutdown(timeout=5) is True
    with pytest.raises(RuntimeError):
        pool.submit_each(got.append, [(1,)])


def test_submits_from_many_threads_while_the_queue_empties_and_fills_all_run():
    """The monitor parks each time the queue empties and is woken by the next submit; many
    submitters racing with it (and with calls that sometimes wait) lose no call and never
    fail a submit."""
    import random

    pool = WorkerPool(6, "t")
    done = threading.Semaphore(0)
    errors: list[BaseException] = []

    def call(wait: bool) -> None:
        if wait:
            time.sleep(0.002)
        done.release()

    def submitter(seed: int) -> None:
        rnd = random.Random(seed)
        try:
            for i in range(500):
                if i % 50 == 0:
                    pool.submit_each(call, [(False,)] * 10)
                else:
                    pool.submit(call, rnd.random() < 0.02)
                if rnd.random() < 0.05:
                    time.sleep(0.001)  # let the queue empty, the monitor park
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=submitter, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    expected = 4 * (490 + 10 * 10)
    for _ in range(expected):
        assert done.acquire(timeout=10), "a submitted call never ran"
    assert pool.shutdown(timeout=5) is True
