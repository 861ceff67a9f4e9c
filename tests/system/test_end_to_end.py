"""One thousand messages through a real name server and broker (``rocketpy dev`` in a
subprocess), consumed exactly as sent; committed offsets and the store survive a restart."""

from __future__ import annotations

import time
from collections import defaultdict

from helpers import Collector, start_consumer, wait_until
from rocketpy import ConsumeFromWhere, Message, MessageExt, Producer, SendStatus

TOPIC = "E2ETopic"
N = 1000


def send_all(namesrv: str) -> dict[str, tuple[bytes, str, str, int, int]]:
    """Sends N messages; returns msg_id -> (body, tags, keys, queue_id, queue_offset)."""
    sent = {}
    with Producer("e2e-producer", namesrv) as producer:
        for i in range(N):
            tags = f"Tag{i % 3}"
            keys = f"key-{i} order-{i // 10}"
            msg = Message(TOPIC, f"body-{i}".encode() * (1 + i % 5), tags=tags, keys=keys)
            r = producer.send(msg)
            assert r.status is SendStatus.SEND_OK
            assert r.message_queue.topic == TOPIC
            assert len(r.offset_msg_id) == 32
            sent[r.msg_id] = (msg.body, tags, keys, r.message_queue.queue_id, r.queue_offset)
    return sent


def check_received(
    received: list[MessageExt], sent: dict[str, tuple[bytes, str, str, int, int]]
) -> None:
    by_id = {m.msg_id: m for m in received}
    assert len(by_id) == N, f"{len(by_id)} distinct of {len(received)} received"
    assert by_id.keys() == sent.keys()
    per_queue: dict[int, list[int]] = defaultdict(list)
    for msg_id, (body, tags, keys, queue_id, queue_offset) in sent.items():
        m = by_id[msg_id]
        assert (m.body, m.tags, m.keys, m.topic) == (body, tags, keys, TOPIC)
        assert (m.queue_id, m.queue_offset) == (queue_id, queue_offset)
        assert m.born_timestamp <= m.store_timestamp
        assert m.properties["TAGS"] == tags
        per_queue[m.queue_id].append(m.queue_offset)
    assert sorted(per_queue) == [0, 1, 2, 3], "round-robin over the 4 auto-created queues"
    for offsets in per_queue.values():
        assert sorted(offsets) == list(range(len(offsets))), "queue offsets are contiguous"


def test_thousand_messages_end_to_end_and_restart(dev_factory, tmp_path):
    store = tmp_path / "store"
    dev = dev_factory(store).start()
    sent = send_all(dev.namesrv)

    collector = Collector()
    consumer = start_consumer(
        "e2e-group",
        dev.namesrv,
        TOPIC,
        collector,
        from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    received = collector.wait_for(N)
    time.sleep(0.5)  # anything delivered twice would show up now
    consumer.shutdown()
    check_received(collector.messages, sent)
    assert len(collector.messages) == N, "no duplicates"
    assert dev.stop() == 0

    # Same store, new process: the group's committed offsets survived.
    dev = dev_factory(store).start()
    again = Collector()
    consumer = start_consumer(
        "e2e-group",
        dev.namesrv,
        TOPIC,
        again,
        from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    assert wait_until(lambda: len([q for q in consumer.assigned_queues() if q.topic == TOPIC]) == 4)
    with Producer("e2e-producer-2", dev.namesrv) as producer:
        fresh = producer.send(Message(TOPIC, b"after restart", tags="Fresh"))
    got = again.wait_for(1)
    time.sleep(1.0)
    consumer.shutdown()
    assert [m.msg_id for m in again.messages] == [fresh.msg_id], "only the new message, nothing old"

    # A new group starting from the first offset reads everything.
    everything = Collector()
    consumer = start_consumer(
        "e2e-new-group",
        dev.namesrv,
        TOPIC,
        everything,
        from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    received = everything.wait_for(N + 1)
    consumer.shutdown()
    old = [m for m in received if m.msg_id != fresh.msg_id]
    check_received(old, sent)
    assert len(received) == N + 1
    assert got and dev.stop() == 0
