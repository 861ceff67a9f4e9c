"""Push consumers against real servers: rebalance after a member dies, ordered consumption,
retries into the DLQ, broadcasting, resuming offsets, flow control."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

from helpers import Collector, dlq_size, fast_config, wait_until
from rocketpy import (
    ConsumeFromWhere,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    Message,
    MessageModel,
    MessageQueue,
    Producer,
    PushConsumer,
    select_by_hash,
)
from rocketpy.admin import Admin


def consumer(dev, group: str, topic: str, listener, **kwargs) -> PushConsumer:  # type: ignore[no-untyped-def]
    kwargs.setdefault("consume_from_where", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    orderly = kwargs.pop("orderly", False)
    expression = kwargs.pop("expression", "*")
    c = PushConsumer(group, client_config=fast_config(dev.namesrv), **kwargs)
    c.subscribe(topic, expression)
    c.register_listener(listener, orderly=orderly)
    c.start()
    return c


def test_three_consumers_one_killed(shared_dev, tmp_path):
    topic, group = "KillTopic", "kill-group"
    with Admin(shared_dev.namesrv) as admin:
        admin.create_topic(topic, queues=8)
    outs = [tmp_path / f"c{i}.txt" for i in range(3)]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).parents[1] / "consumer_proc.py"),
                shared_dev.namesrv,
                group,
                topic,
                str(out),
            ],
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).parents[1],
        )
        for out in outs
    ]
    assignments: list[list[int]] = [[] for _ in procs]

    def watch(i: int, p: subprocess.Popen[str]) -> None:
        for line in p.stdout or []:
            if line.startswith("queues"):
                assignments[i] = (
                    [int(q) for q in line.split()[1].split(",") if q]
                    if len(line.split()) > 1
                    else []
                )

    for i, p in enumerate(procs):
        threading.Thread(target=watch, args=(i, p), daemon=True).start()
    try:
        # All three joined (a slow starter leaves the others 4 queues each for a while).
        assert wait_until(
            lambda: (
                sorted(q for a in assignments for q in a) == list(range(8))
                and all(len(a) in (2, 3) for a in assignments)
            ),
            timeout=60,
        ), assignments
        sent = set()
        with Producer("kill-producer", client_config=fast_config(shared_dev.namesrv)) as p:
            for i in range(400):
                sent.add(p.send(Message(topic, f"m{i}")).msg_id)
            procs[0].send_signal(signal.SIGKILL)
            procs[0].wait()
            for i in range(400, 800):
                sent.add(p.send(Message(topic, f"m{i}")).msg_id)
        survivors = [1, 2]
        assert wait_until(
            lambda: sorted(q for i in survivors for q in assignments[i]) == list(range(8)),
            timeout=60,
        ), assignments

        def received() -> set[str]:
            return {line for out in outs if out.exists() for line in out.read_text().split()}

        assert wait_until(lambda: sent <= received(), timeout=60), len(sent - received())
    finally:
        for p in procs:
            p.kill()
            p.wait()
            if p.stdout:
                p.stdout.close()


def test_ordered_messages_per_key_with_two_consumers(shared_dev):
    topic, group = "OrderTopic", "order-group"
    with Admin(shared_dev.namesrv) as admin:
        admin.create_topic(topic, queues=4)
    seen: dict[str, list[int]] = defaultdict(list)
    lock = threading.Lock()
    in_flight: dict[str, int] = defaultdict(int)
    overlaps = []

    def listener(msgs):  # type: ignore[no-untyped-def]
        for m in msgs:
            order, step = m.body.decode().split(":")
            with lock:
                in_flight[order] += 1
                if in_flight[order] > 1:
                    overlaps.append(order)
            time.sleep(0.001)
            with lock:
                seen[order].append(int(step))
                in_flight[order] -= 1
        return ConsumeOrderlyStatus.SUCCESS

    a = consumer(shared_dev, group, topic, listener, orderly=True, consume_thread_max=4)
    b = consumer(shared_dev, group, topic, listener, orderly=True, consume_thread_max=4)
    try:

        def mine(c: PushConsumer) -> list[MessageQueue]:
            return [q for q in c.assigned_queues() if q.topic == topic]

        assert wait_until(lambda: len(mine(a)) == len(mine(b)) == 2, timeout=60)
        with Producer("order-producer", client_config=fast_config(shared_dev.namesrv)) as p:
            for step in range(15):
                for order in range(12):
                    p.send(
                        Message(topic, f"order-{order}:{step}"),
                        selector=select_by_hash,
                        arg=f"order-{order}",
                    )
        assert wait_until(lambda: sum(len(v) for v in seen.values()) >= 12 * 15, timeout=60)
        for order, steps in seen.items():
            assert steps == list(range(15)), f"{order} consumed out of order: {steps}"
        assert not overlaps, "one thread per queue at a time"
    finally:
        a.shutdown()
        b.shutdown()


def test_failing_listener_ends_in_dlq(shared_dev):
    topic, group = "FailTopic", "fail-group"
    deliveries: list[int] = []

    def always_fail(msgs):  # type: ignore[no-untyped-def]
        deliveries.extend(m.reconsume_times for m in msgs)
        return ConsumeStatus.RECONSUME_LATER

    c = consumer(shared_dev, group, topic, always_fail, max_reconsume_times=2)
    try:
        with Producer("fail-producer", client_config=fast_config(shared_dev.namesrv)) as p:
            p.send(Message(topic, b"doomed"))
        ns = shared_dev.namesrv
        assert wait_until(lambda: dlq_size(ns, group) == 1, timeout=60), deliveries
        time.sleep(1.5)
        assert sorted(deliveries) == [0, 1, 2], "one delivery plus max_reconsume_times retries"
    finally:
        c.shutdown()


def test_orderly_failures_retry_locally_then_dlq(shared_dev):
    topic, group = "OrderFailTopic", "order-fail-group"
    with Admin(shared_dev.namesrv) as admin:
        admin.create_topic(topic, queues=1)
    deliveries: list[int] = []

    def flaky(msgs):  # type: ignore[no-untyped-def]
        deliveries.extend(m.reconsume_times for m in msgs)
        return (
            ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
            if msgs[0].body == b"bad"
            else ConsumeOrderlyStatus.SUCCESS
        )

    c = consumer(
        shared_dev,
        group,
        topic,
        flaky,
        orderly=True,
        max_reconsume_times=3,
        suspend_current_queue_time_ms=100,
    )
    try:
        with Producer("order-fail-producer", client_config=fast_config(shared_dev.namesrv)) as p:
            p.send(Message(topic, b"bad"))
            p.send(Message(topic, b"good"))
        assert wait_until(lambda: len(deliveries) >= 5, timeout=30)
        time.sleep(0.5)
        assert deliveries == [0, 1, 2, 3, 0], (
            "the bad message is retried in place (blocking the queue), then moved to the DLQ"
        )
        with Admin(shared_dev.namesrv) as admin:
            assert admin.max_offset(MessageQueue(f"%DLQ%{group}", "broker-a", 0)) == 1
    finally:
        c.shutdown()


def test_broadcasting_delivers_everything_to_everyone(shared_dev, tmp_path):
    topic, group = "BroadcastTopic", "broadcast-group"
    with Admin(shared_dev.namesrv) as admin:
        admin.create_topic(topic, queues=4)
    collectors = [Collector(), Collector()]
    members = [
        consumer(
            shared_dev,
            group,
            topic,
            col,
            message_model=MessageModel.BROADCASTING,
            offset_store_dir=tmp_path,
        )
        for col in collectors
    ]
    try:
        assert wait_until(lambda: all(len(m.assigned_queues()) == 4 for m in members), timeout=60)
        with Producer("broadcast-producer", client_config=fast_config(shared_dev.namesrv)) as p:
            ids = {p.send(Message(topic, f"b{i}")).msg_id for i in range(40)}
        for col in collectors:
            assert {m.msg_id for m in col.wait_for(40)} == ids
    finally:
        for m in members:
            m.shutdown()
    assert list(tmp_path.rglob("offsets.json")), "broadcasting offsets live in local files"


def test_offsets_resume_after_consumer_restart(shared_dev):
    topic, group = "ResumeTopic", "resume-group"
    first = Collector()
    c = consumer(shared_dev, group, topic, first)
    with Producer("resume-producer", client_config=fast_config(shared_dev.namesrv)) as p:
        old = {p.send(Message(topic, f"old{i}")).msg_id for i in range(30)}
        first.wait_for(30)
        c.shutdown()
        new = {p.send(Message(topic, f"new{i}")).msg_id for i in range(20)}
    second = Collector()
    c = consumer(shared_dev, group, topic, second)
    try:
        got = {m.msg_id for m in second.wait_for(20)}
        time.sleep(1)
        assert got == new and not ({m.msg_id for m in second.messages} & old)
    finally:
        c.shutdown()


def test_flow_control_bounds_the_process_queue(shared_dev):
    topic, group = "SlowTopic", "slow-group"
    with Admin(shared_dev.namesrv) as admin:
        admin.create_topic(topic, queues=1)
    with Producer("slow-producer", client_config=fast_config(shared_dev.namesrv)) as p:
        for i in range(300):
            p.send(Message(topic, f"s{i}"))
    done = Collector()

    def slow(msgs):  # type: ignore[no-untyped-def]
        time.sleep(0.005)
        return done(msgs)

    c = consumer(
        shared_dev,
        group,
        topic,
        slow,
        pull_threshold_for_queue=20,
        consume_thread_max=1,
        pull_batch_size=16,
    )
    peak = 0
    try:
        deadline = time.time() + 60
        while len(done.messages) < 300 and time.time() < deadline:
            for pr in list(c._table.values()):
                peak = max(peak, pr.pq.count)
            time.sleep(0.002)
        assert len(done.messages) == 300
        assert 0 < peak <= 20 + 16, f"process queue peaked at {peak}"
    finally:
        c.shutdown()


def test_fast_listener_runs_with_failures_commit_every_offset(shared_dev):
    """Thousands of one-message calls of a fast listener go as runs of pulled batches (the
    pool's fast mode); failures inside runs still go to the retry topic and come back, and
    the committed offsets cover every message: a restarted member gets only new ones."""
    topic, group = "RunsTopic", "runs-group"
    with Admin(shared_dev.namesrv) as admin:
        admin.create_topic(topic, queues=2)
    ok: set[str] = set()
    retried: list[tuple[str, int]] = []
    lock = threading.Lock()

    def listener(msgs):  # type: ignore[no-untyped-def]
        body = msgs[0].body.decode()
        with lock:
            if int(body[1:]) % 97 == 0 and msgs[0].reconsume_times == 0:
                return ConsumeStatus.RECONSUME_LATER
            if msgs[0].reconsume_times:
                retried.append((body, msgs[0].reconsume_times))
            ok.add(body)
        return ConsumeStatus.CONSUME_SUCCESS

    with Producer("runs-producer", client_config=fast_config(shared_dev.namesrv)) as p:
        p.send_many(topic, [f"m{i}" for i in range(3000)])
        c = consumer(shared_dev, group, topic, listener)
        try:
            assert wait_until(lambda: len(ok) == 3000, timeout=60), len(ok)
            assert c._pool is not None and c._pool.fast, "fast calls: one thread, runs"
            assert sorted(retried) == sorted((f"m{i}", 1) for i in range(0, 3000, 97))
        finally:
            c.shutdown()
        p.send_many(topic, [f"n{i}" for i in range(10)])
    fresh = Collector()
    c = consumer(shared_dev, group, topic, fresh)
    try:
        fresh.wait_for(10)
        time.sleep(1)
        got = sorted(m.body.decode() for m in fresh.messages)
        assert got == sorted(f"n{i}" for i in range(10)), got[:20]
    finally:
        c.shutdown()
