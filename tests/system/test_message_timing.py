"""RocketMQ 5.x message concepts on rocketpy's 4.x producer: ``delivery_timestamp`` (a timer
message, delivered at any chosen time by the broker's timer) and ``message_group`` (FIFO: a
group's messages go to one queue, in send order), on every send path."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import Future

import pytest
from servers import ServerProcess

from helpers import Collector, fast_config, start_consumer, wait_until
from rocketpy import ClientError, Message, MessageExt, Producer, SendResult
from rocketpy.admin import Admin
from rocketpy.producer._selectors import select_by_message_group

#: How far ahead the timer messages are due: long enough to see them absent first.
AHEAD_MS = 2000


@pytest.fixture
def producer(dev_server: ServerProcess) -> Iterator[Producer]:
    with Producer("timing-producer", dev_server.namesrv) as p:
        yield p


def test_delivery_timestamp_delivers_at_that_time(
    dev_server: ServerProcess, producer: Producer
) -> None:
    topic = "TimerTopic"
    with Admin(dev_server.namesrv) as admin:
        # Routed at once (a topic auto-created by a send is routed at the broker's next
        # registration, which a consumer started meanwhile would wait for).
        admin.create_topic(topic, queues=4)
    producer.send(Message(topic, b"now"))
    got = Collector()
    config = fast_config(dev_server.namesrv)
    consumer = start_consumer("timing-group", dev_server.namesrv, topic, got, client_config=config)
    try:
        assert got.wait_for(1)[0].body == b"now"
        due = int(time.time() * 1000) + AHEAD_MS
        # Each send path: synchronous (native), asynchronous (auto-batching must not carry
        # it in a batch, which brokers store at once), oneway.
        producer.send(Message(topic, b"sync", delivery_timestamp=due))
        producer.send_async(Message(topic, b"async", delivery_timestamp=due)).result(10)
        producer.send_oneway(Message(topic, b"oneway", delivery_timestamp=due))

        def timed() -> list[MessageExt]:
            return [m for m in got.messages if m.body != b"now"]

        # Not consumable before its time: nothing arrives while the time has not come.
        early = due - int(time.time() * 1000) - 300
        assert early > 500, "the sends took too long to see the messages absent"
        assert not wait_until(lambda: bool(timed()), early / 1000)
        assert wait_until(lambda: len(timed()) == 3, 30), [m.body for m in got.messages]
        arrived = int(time.time() * 1000)
    finally:
        consumer.shutdown()
    assert sorted(m.body for m in timed()) == [b"async", b"oneway", b"sync"]
    for m in timed():
        assert m.get_property("TIMER_DELIVER_MS") == str(due)
        # Stored in the topic by the timer, at its time (the broker's clock is this one).
        assert due <= m.store_timestamp <= arrived
        assert m.topic == topic


def test_message_group_keeps_one_queue_in_order(producer: Producer) -> None:
    topic = "GroupTopic"
    queues = producer.message_queues(topic)
    assert len(queues) > 1
    groups = ["order-1", "order-2", "order-3"]
    results: dict[str, list[SendResult]] = {g: [] for g in groups}
    futures: list[tuple[str, Future[SendResult]]] = []
    for i in range(6):
        for g in groups:
            results[g].append(producer.send(Message(topic, f"{g}-{i}", message_group=g)))
            futures.append((g, producer.send_async(Message(topic, b"a", message_group=g))))
    for g, f in futures:
        results[g].append(f.result(10))
    for g in groups:
        # One queue, the one RocketMQ's 5.x proxy would pick for the group.
        assert {r.message_queue for r in results[g]} == {select_by_message_group(queues, g)}
    for g in groups:
        sync = [r.queue_offset for r in results[g][:6]]
        assert sync == sorted(sync), "stored in send order"


def test_timed_or_grouped_messages_are_not_batched(producer: Producer) -> None:
    due = int(time.time() * 1000) + 60_000
    with pytest.raises(ClientError, match="delayed"):
        producer.send_batch([Message("T", b"a", delivery_timestamp=due)])
    with pytest.raises(ClientError, match="message_group"):
        producer.send_batch([Message("T", b"a", message_group="g")])
