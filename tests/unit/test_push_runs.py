"""``PushConsumer._consume_run``: a pulled batch given to the listener slice by slice on one
thread (the pool's fast mode), its consumed messages removed once; a slow call hands the
slices not yet given back to the pool, a failed one goes the failure path."""

from __future__ import annotations

import threading
import time

from rocketpy import ConsumeStatus, MessageModel, PushConsumer
from rocketpy.consumer.model import PullRequest
from rocketpy.consumer.process_queue import ProcessQueue
from rocketpy.consumer.workers import WorkerPool
from rocketpy.message import MessageQueue
from rocketpy.store import MessageStore


def _setup(tmp_path, n: int, listener):  # type: ignore[no-untyped-def]
    with MessageStore(tmp_path / "s") as store:
        for i in range(n):
            store.put("RunT", f"m{i}".encode())
        msgs = store.get("RunT", queue_id=0, offset=0, max_nums=n).messages
    c = PushConsumer("run-group", "127.0.0.1:1", message_model=MessageModel.BROADCASTING)
    c.register_listener(listener)
    c._pool = WorkerPool(4, "t")
    pq = ProcessQueue()
    pq.put(msgs)
    pr = PullRequest(MessageQueue("RunT", "b", 0), pq, n)
    return c, pr, msgs


def test_a_run_calls_the_listener_per_slice_and_removes_what_it_consumed(tmp_path):
    seen: list[list[str]] = []

    def listener(msgs):  # type: ignore[no-untyped-def]
        seen.append([m.body.decode() for m in msgs])
        return ConsumeStatus.CONSUME_SUCCESS

    c, pr, msgs = _setup(tmp_path, 6, listener)
    try:
        calls = c._consume_run([msgs[i : i + 2] for i in range(0, 6, 2)], pr)
        assert calls == 3
        assert seen == [["m0", "m1"], ["m2", "m3"], ["m4", "m5"]]
        assert pr.pq.count == 0, "all consumed, removed at the end of the run"
    finally:
        assert c._pool is not None and c._pool.shutdown(timeout=5)


def test_a_slow_call_hands_the_rest_of_the_run_to_other_threads(tmp_path):
    """The first call blocks: the slices after it must not wait for it."""
    release = threading.Event()
    threads: dict[str, str] = {}

    def listener(msgs):  # type: ignore[no-untyped-def]
        body = msgs[0].body.decode()
        threads[body] = threading.current_thread().name
        if body == "m0":
            release.wait(10)
        return ConsumeStatus.CONSUME_SUCCESS

    c, pr, msgs = _setup(tmp_path, 8, listener)
    try:
        runner = threading.Thread(target=c._consume_run, args=([[m] for m in msgs], pr))
        runner.start()
        time.sleep(0.05)  # m0 blocks: the rest is handed back only once it returns
        assert set(threads) == {"m0"}, "a run is in order on its thread"
        release.set()
        runner.join(5)
        deadline = time.monotonic() + 5
        while len(threads) < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(threads) == 8
        assert all(threads[f"m{i}"] != runner.name for i in range(1, 8)), (
            "the slices after the slow call went back to the pool"
        )
        deadline = time.monotonic() + 5
        while pr.pq.count and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pr.pq.count == 0
    finally:
        assert c._pool is not None and c._pool.shutdown(timeout=5)


def test_a_failed_call_in_a_run_takes_the_failure_path_and_the_rest_goes_on(tmp_path):
    """Broadcasting drops failed messages (logged), so the failure path ends here without a
    broker: the failed slice is removed too and the run goes on."""
    seen: list[str] = []

    def listener(msgs):  # type: ignore[no-untyped-def]
        seen.append(msgs[0].body.decode())
        return ConsumeStatus.RECONSUME_LATER if msgs[0].body == b"m1" else None

    c, pr, msgs = _setup(tmp_path, 4, listener)
    try:
        assert c._consume_run([[m] for m in msgs], pr) == 4
        assert seen == ["m0", "m1", "m2", "m3"]
        assert pr.pq.count == 0
    finally:
        assert c._pool is not None and c._pool.shutdown(timeout=5)
