"""Producer send modes (batch, async, oneway, delayed, compressed, selector), asyncio front
ends, and the LitePullConsumer, against real servers."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from helpers import Collector, fast_config
from rocketpy import (
    ClientError,
    ConsumeFromWhere,
    LitePullConsumer,
    Message,
    MessageQueue,
    Producer,
    PushConsumer,
    SendStatus,
    select_by_hash,
)
from rocketpy.admin import Admin
from rocketpy.aio import AsyncConsumer, AsyncProducer


def producer(dev, group: str, **kwargs) -> Producer:  # type: ignore[no-untyped-def]
    p = Producer(group, client_config=fast_config(dev.namesrv), **kwargs)
    p.start()
    return p


def drain(dev, topic: str, n: int, group: str) -> list:  # type: ignore[no-untyped-def]
    col = Collector()
    c = PushConsumer(
        group,
        client_config=fast_config(dev.namesrv),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    c.subscribe(topic)
    c.register_listener(col)
    c.start()
    try:
        return col.wait_for(n)
    finally:
        c.shutdown()


def test_batch_send(shared_dev):
    p = producer(shared_dev, "batch-producer")
    try:
        msgs = [Message("BatchTopic", f"batch-{i}", tags="B", keys=[f"bk{i}"]) for i in range(50)]
        r = (
            p.send_batch(msgs, queue=MessageQueue("BatchTopic", "broker-a", 0))
            if False
            else p.send_batch(msgs)
        )
        assert r.status is SendStatus.SEND_OK
        assert len(r.msg_id.split(",")) == 50 and len(r.offset_msg_id.split(",")) == 50
        got = drain(shared_dev, "BatchTopic", 50, "batch-consumer")
        by_offset = sorted(got, key=lambda m: m.queue_offset)
        assert [m.body for m in by_offset] == [f"batch-{i}".encode() for i in range(50)], (
            "contiguous, in order"
        )
        assert {m.queue_id for m in got} == {r.message_queue.queue_id}
        assert [m.queue_offset for m in by_offset] == list(
            range(r.queue_offset, r.queue_offset + 50)
        )
        with pytest.raises(ClientError, match="one topic"):
            p.send_batch([Message("A", b"x"), Message("B", b"y")])
        with pytest.raises(ClientError, match="delayed"):
            p.send_batch([Message("A", b"x", delay_level=1)])
    finally:
        p.shutdown()


def test_async_oneway_and_callbacks(shared_dev):
    p = producer(shared_dev, "async-producer")
    try:
        called = []
        done = threading.Event()

        def cb(result, error):  # type: ignore[no-untyped-def]
            called.append((result, error))
            if len(called) == 100:
                done.set()

        futures = [p.send_async(Message("AsyncTopic", f"a{i}"), cb) for i in range(100)]
        results = [f.result(timeout=30) for f in futures]
        assert all(r.status is SendStatus.SEND_OK for r in results)
        assert done.wait(10) and all(e is None for _, e in called)
        for i in range(20):
            p.send_oneway(Message("AsyncTopic", f"o{i}"))
        got = drain(shared_dev, "AsyncTopic", 120, "async-consumer")
        assert {m.body for m in got} >= {f"a{i}".encode() for i in range(100)} | {
            f"o{i}".encode() for i in range(20)
        }
        failed = p.send_async(
            Message("AsyncTopic", b"x"), queue=MessageQueue("AsyncTopic", "no-such-broker", 0)
        )
        with pytest.raises(ClientError):
            failed.result(timeout=10)
    finally:
        p.shutdown()


def test_delayed_and_compressed_messages(shared_dev):
    p = producer(shared_dev, "delay-producer")
    try:
        sent_at = time.time()
        p.send(Message("DelayTopic", b"later", delay_level=1))  # 1 s on the shared server
        big = bytes(range(256)) * 80  # 20 KiB: compressed on the way
        p.send(Message("DelayTopic", big))
        got = drain(shared_dev, "DelayTopic", 2, "delay-consumer")
        later = next(m for m in got if m.body == b"later")
        assert later.store_timestamp / 1000 >= sent_at + 0.9, "delivered after its delay"
        assert any(m.body == big and m.sys_flag & 1 for m in got), (
            "stored compressed, read back whole"
        )
    finally:
        p.shutdown()


def test_selector_keeps_keys_on_one_queue(shared_dev):
    p = producer(shared_dev, "selector-producer")
    try:
        queues = {}
        for i in range(40):
            key = f"user-{i % 5}"
            r = p.send(Message("SelectTopic", f"{key}:{i}"), selector=select_by_hash, arg=key)
            assert queues.setdefault(key, r.message_queue) == r.message_queue
        assert len(set(queues.values())) > 1
    finally:
        p.shutdown()


def test_latency_fault_tolerance_avoids_a_dead_broker(shared_dev):
    p = producer(shared_dev, "fault-producer", send_latency_fault_enable=True)
    try:
        p.send(Message("FaultTopic", b"warm"))
        p._faults.update("broker-a", 0, isolation=True)
        # The only broker is avoided, but it is still the least bad choice: sends succeed.
        assert p.send(Message("FaultTopic", b"still")).status is SendStatus.SEND_OK
    finally:
        p.shutdown()


def test_asyncio_producer_and_consumer(shared_dev):
    async def main() -> list[bytes]:
        async with AsyncProducer(
            "aio-producer", client_config=fast_config(shared_dev.namesrv)
        ) as ap:
            results = await asyncio.gather(
                *(ap.send(Message("AioTopic", f"x{i}")) for i in range(30))
            )
            assert all(r.status is SendStatus.SEND_OK for r in results)
            await ap.send_batch([Message("AioTopic", f"y{i}") for i in range(10)])
        consumer = AsyncConsumer("aio-consumer", client_config=fast_config(shared_dev.namesrv),
                                 consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
        consumer.subscribe("AioTopic")
        bodies = []
        async with consumer:
            async for msg in consumer:
                bodies.append(msg.body)
                if len(bodies) == 40:
                    break
        return bodies

    bodies = asyncio.run(main())
    assert sorted(bodies) == sorted(
        [f"x{i}".encode() for i in range(30)] + [f"y{i}".encode() for i in range(10)]
    )


def test_lite_pull_consumer(shared_dev):
    topic = "LiteTopic"
    with Admin(shared_dev.namesrv) as admin:
        admin.create_topic(topic, queues=2)
    p = producer(shared_dev, "lite-producer")
    try:
        mq0, mq1 = MessageQueue(topic, "broker-a", 0), MessageQueue(topic, "broker-a", 1)
        t0 = int(time.time() * 1000)
        for i in range(20):
            p.send(Message(topic, f"q0-{i}"), queue=mq0)
            p.send(Message(topic, f"q1-{i}"), queue=mq1)
        time.sleep(0.05)  # no message shares a millisecond with `mid`
        mid = int(time.time() * 1000)
        time.sleep(0.05)
        for i in range(20, 30):
            p.send(Message(topic, f"q0-{i}"), queue=mq0)

        c = LitePullConsumer("lite-group", client_config=fast_config(shared_dev.namesrv), auto_commit=False,
                             consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
        c.assign([mq0])
        c.start()
        try:
            assert c.fetch_message_queues(topic) == [mq0, mq1]
            got = []
            while len(got) < 30:
                batch = c.poll(timeout_ms=5000)
                assert batch, "timed out"
                got.extend(batch)
            assert [m.body for m in got] == [f"q0-{i}".encode() for i in range(30)], (
                "only the assigned queue, in order"
            )
            assert c.poll(timeout_ms=200) == []
            c.commit()
            assert c.committed(mq0) == 30

            c.seek(mq0, 25)
            assert [m.queue_offset for m in c.poll(5000)] == [25, 26, 27, 28, 29]
            c.seek_to_begin(mq0)
            assert c.poll(5000)[0].queue_offset == 0
            assert c.offset_for_timestamp(mq0, mid) == 20
            c.seek_to_timestamp(mq0, t0 - 1000)
            assert c.poll(5000)[0].queue_offset == 0
            c.seek_to_end(mq0)
            assert c.poll(timeout_ms=300) == []

            c.pause([mq0])
            p.send(Message(topic, b"while-paused"), queue=mq0)
            assert c.poll(timeout_ms=500) == []
            c.resume([mq0])
            assert [m.body for m in c.poll(5000)] == [b"while-paused"]
            with pytest.raises(ClientError):
                c.seek(mq1, 0)  # not assigned
        finally:
            c.shutdown()

        sub = LitePullConsumer("lite-sub-group", client_config=fast_config(shared_dev.namesrv),
                               consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, auto_commit_interval_ms=0)  # fmt: skip
        sub.subscribe(topic)
        sub.start()
        try:
            seen = []
            deadline = time.time() + 30
            while len(seen) < 51 and time.time() < deadline:
                seen.extend(sub.poll(1000))
            assert len(seen) == 51
        finally:
            sub.shutdown()
        with Admin(shared_dev.namesrv) as admin:
            assert admin.consumer_offset("lite-sub-group", mq0) == 31, (
                "auto-commit of what poll returned"
            )
    finally:
        p.shutdown()


def test_send_to_a_chosen_queue_of_a_topic_the_name_servers_do_not_route_yet(shared_dev):
    """A fresh producer knows no broker; the topic has no route yet (as right after its
    creation, before the broker's registration reaches the name server): the broker's
    address comes from the TBW102 template's route, as in RocketMQ's clients, and the broker
    (autoCreateTopicEnable) takes the message."""
    topic = f"Unrouted{int(time.time() * 1000)}"
    p = producer(shared_dev, "unrouted-producer")
    try:
        r = p.send(Message(topic, b"first"), queue=MessageQueue(topic, "broker-a", 0))
        assert r.message_queue == MessageQueue(topic, "broker-a", 0)
    finally:
        p.shutdown()
