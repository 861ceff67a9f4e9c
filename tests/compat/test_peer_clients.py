"""RocketMQ clients this project did not write, each against rocketpy's name server and broker
and with rocketpy's own client on the other end: the Apache RocketMQ C++ client (the core of
the official ``rocketmq-client-python``; PyPI ``rocketmq`` 0.4.4) and rocketmq-client-rust 1.0.
Each peer application runs as its own process (``peerlib``); every test runs once per client.
"""

from __future__ import annotations

import struct
import time
from pathlib import Path

import pytest
from servers import Cluster

from helpers import Collector, fast_config, start_consumer, wait_until
from peerlib import Peer, compat_cluster, start_peer
from rocketpy import ConsumeFromWhere, Message, Producer, PushConsumer
from rocketpy.admin import Admin
from rocketpy.message import MessageQueue

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET

pytestmark = pytest.mark.parametrize("client", ["cpp", "rust"])


def rocketpy_consumer(
    cluster: Cluster, group: str, topic: str, expression: str = "*"
) -> tuple[PushConsumer, Collector]:
    got = Collector()
    config = fast_config(cluster.namesrv)
    c = start_consumer(group, cluster.namesrv, topic, got, expression, FIRST, client_config=config)
    return c, got


@pytest.mark.features(
    "send sync",
    "send async",
    "send oneway",
    "send batch",
    "tags, keys, user properties",
    "born host and timestamps",
)
def test_every_send_mode_reaches_a_rocketpy_consumer(
    client: str, cluster: Cluster, peers: list[Peer], tmp_path: Path
):
    topic = f"Send-{client}"
    sent = {}
    for mode in ["sync", "async", "oneway", "batch"]:
        p = start_peer(
            client, peers, tmp_path, action="produce", namesrv=cluster.namesrv, topic=topic,
            mode=mode, count=5, prefix=f"{client}-{mode}", tags="TagA", keys="key",
            properties={"color": "blue", "中文": "值"},
        )  # fmt: skip
        sent[mode] = [e for e in p.finish() if e["event"] == "sent"]
        assert all(e.get("status", "SEND_OK") == "SEND_OK" for e in sent[mode]), sent[mode]
    assert len(sent["batch"]) == 1, "one answer for the whole batch"
    consumer, got = rocketpy_consumer(cluster, f"rp-reads-{client}", topic)
    try:
        msgs = got.wait_for(20)
    finally:
        consumer.shutdown()
    bodies = sorted(m.body.decode() for m in msgs)
    assert bodies == sorted(f"{client}-{mode}-{i}" for mode in sent for i in range(5))
    for m in msgs:
        i = m.body.decode().rsplit("-", 1)[1]
        assert (m.tags, m.keys) == ("TagA", f"key-{i}")
        assert m.get_property("color") == "blue" and m.get_property("中文") == "值"
        assert m.born_host.startswith("127.0.0.1:")
        assert abs(m.born_timestamp - time.time() * 1000) < 120_000
    by_body = {m.body.decode(): m for m in msgs}
    for e in sent["sync"]:
        m = by_body[f"{client}-sync-{e['i']}"]
        assert e["msg_id"] == m.msg_id, "the client's message id is the one consumers see"
        assert e["offset"] == m.queue_offset
    # The batch's one answer, as the peer read it: its queue offset is the first message's,
    # and its offset ids (reported by the peers that expose them) name each stored message.
    (answer,) = sent["batch"]
    batch = sorted((by_body[f"{client}-batch-{i}"] for i in range(5)), key=lambda m: m.queue_offset)
    assert answer["offset"] == batch[0].queue_offset
    if answer.get("offset_msg_id"):
        assert answer["offset_msg_id"].split(",") == [m.offset_msg_id for m in batch]


@pytest.mark.features(
    "push consumer, concurrent", "tag filter expression", "message ids (UNIQ_KEY, offsetMsgId)"
)
def test_consumer_reads_rocketpy_messages_with_tag_filter(
    client: str, cluster: Cluster, peers: list[Peer], tmp_path: Path
):
    topic = f"Filter-{client}"
    c = start_peer(
        client, peers, tmp_path, action="consume", namesrv=cluster.namesrv,
        group=f"filter-{client}", topic=topic, expression="TagA || TagB",
        read_properties=["color"], timeout=90,
    )  # fmt: skip
    assert c.wait_for("ready"), c.stderr
    results = {}
    with Producer(f"rp-to-{client}", cluster.namesrv) as p:
        for i, tag in enumerate(["TagA", "TagB", "TagC"] * 4):
            m = Message(topic, f"rp-{i}".encode(), tags=tag, keys=f"k{i}")
            m.properties["color"] = "green"
            results[f"rp-{i}"] = (tag, p.send(m))
    wanted = {b for b, (tag, _) in results.items() if tag != "TagC"}
    c.wait_for("received", len(wanted), timeout=90)
    time.sleep(2)  # a TagC message would arrive by now
    received = [e for e in c.finish() if e["event"] == "received"]
    assert {e["body"] for e in received} == wanted
    assert len(received) == len(wanted), "each once"
    for e in received:
        tag, result = results[e["body"]]
        assert e["tags"] == tag and e["keys"] == f"k{e['body'][3:]}"
        assert e["properties"] == {"color": "green"}
        assert e["msg_id"] == result.msg_id
        # The offset message id: store address (4 + 4 bytes), then the CommitLog offset.
        raw = bytes.fromhex(result.offset_msg_id)
        assert raw[:4] == bytes([127, 0, 0, 1])
        assert struct.unpack(">q", raw[8:])[0] == e["commit_log_offset"]


@pytest.mark.features(
    "orderly send (queue selector)", "push consumer, orderly (broker queue locks)"
)
def test_orderly_send_and_orderly_consume(
    client: str, cluster: Cluster, peers: list[Peer], tmp_path: Path
):
    topic = f"Order-{client}"
    with Admin(cluster.namesrv) as admin:
        admin.create_topic(topic, queues=4)
    c = start_peer(
        client, peers, tmp_path, action="consume", namesrv=cluster.namesrv,
        group=f"orderly-{client}", topic=topic, mode="orderly", threads=4, timeout=120,
    )  # fmt: skip
    assert c.wait_for("ready")
    p = start_peer(
        client, peers, tmp_path, action="produce", namesrv=cluster.namesrv, topic=topic,
        mode="orderly", count=40, order_keys=4, prefix="ord",
    )  # fmt: skip
    sent = [e for e in p.finish() if e["event"] == "sent"]
    assert len(sent) == 40 and all(e["status"] == "SEND_OK" for e in sent)
    c.wait_for("received", 40, timeout=90)
    received = [e for e in c.finish() if e["event"] == "received"]
    assert sorted(e["body"] for e in received) == sorted(f"ord-{i}" for i in range(40))
    by_queue: dict[int, list[int]] = {}
    for e in received:
        by_queue.setdefault(e["queue_id"], []).append(int(e["body"].split("-")[1]))
    for seq in by_queue.values():
        assert seq == sorted(seq), f"one queue is consumed in order: {seq}"
    for key in range(4):  # one ordering key, one queue
        queues = {e["queue_id"] for e in received if int(e["body"].split("-")[1]) % 4 == key}
        assert len(queues) == 1


@pytest.mark.features("retry with reconsumeTimes", "dead-letter queue after max retries")
def test_retry_with_reconsume_times_and_dlq(
    client: str, cluster: Cluster, peers: list[Peer], tmp_path: Path
):
    # One failing message per group: the C++ client fails a whole pulled batch when one
    # message of it fails, so two failing messages in one group would blur the counts.
    topic = f"Retry-{client}"
    spec = dict(action="consume", namesrv=cluster.namesrv, topic=topic, timeout=150)
    retry = start_peer(
        client, peers, tmp_path, group=f"retry-{client}", fail={"retry-me": 2},
        expression="retry", **spec,
    )  # fmt: skip
    dlq_group = f"dlq-{client}"
    dlq = start_peer(
        client, peers, tmp_path, group=dlq_group, fail={"always-fails": -1},
        expression="dlq", **spec,
    )  # fmt: skip
    assert retry.wait_for("ready") and dlq.wait_for("ready")
    with Producer(f"rp-retry-{client}", cluster.namesrv) as p:
        p.send(Message(topic, b"retry-me", tags="retry"))
        p.send(Message(topic, b"always-fails", tags="dlq"))
    (done,) = retry.wait_for("received", 1, timeout=90)
    assert done["body"] == "retry-me"
    assert done["reconsume_times"] == 2, "redelivered from %RETRY% twice"
    assert [e["reconsume_times"] for e in retry.of("failed")] == [0, 1]
    # After maxReconsumeTimes (16 by default) the broker moves it to the group's DLQ.
    with Admin(cluster.namesrv) as admin:
        queue = MessageQueue(f"%DLQ%{dlq_group}", "broker-a", 0)
        assert wait_until(lambda: admin.topic_route(queue.topic) is not None, timeout=90)
        assert wait_until(lambda: admin.max_offset(queue) == 1, timeout=30)
    retry.finish()
    failures = [e["reconsume_times"] for e in dlq.finish() if e["event"] == "failed"]
    assert failures == list(range(17)), "the first delivery and 16 retries, each counted"


@pytest.mark.features("delay level")
def test_delay_level(client: str, cluster: Cluster, peers: list[Peer], tmp_path: Path):
    topic = f"Delay-{client}"
    consumer, got = rocketpy_consumer(cluster, f"rp-delay-{client}", topic)
    try:
        sent_at = time.time() * 1000
        p = start_peer(
            client, peers, tmp_path, action="produce", namesrv=cluster.namesrv, topic=topic,
            mode="sync", count=1, delay_level=3, prefix="late",
        )  # fmt: skip
        p.finish()
        (m,) = got.wait_for(1, timeout=30)
    finally:
        consumer.shutdown()
    # Level 3 is 1 s on this broker: stored again from SCHEDULE_TOPIC_XXXX when due, with its
    # DELAY property cleared, as RocketMQ's schedule service does.
    assert m.store_timestamp - sent_at >= 900
    assert m.get_property("DELAY") is None and m.topic == topic


@pytest.mark.features("broadcasting", "pull consumer")
def test_broadcasting_and_pull_consumer(
    client: str, cluster: Cluster, peers: list[Peer], tmp_path: Path
):
    topic = f"Broadcast-{client}"
    with Admin(cluster.namesrv) as admin:
        # Broadcasting consumers start at the end of the queues of a topic they know of.
        admin.create_topic(topic, queues=4)
    consumers = [
        start_peer(
            client,
            peers,
            tmp_path,
            action="consume",
            namesrv=cluster.namesrv,
            group=f"broadcast-{client}",
            topic=topic,
            model="broadcasting",
            instance=f"b{i}",
            timeout=90,
        )
        for i in range(2)
    ]
    for c in consumers:
        assert c.wait_for("ready")
    time.sleep(3)
    with Producer(f"rp-broadcast-{client}", cluster.namesrv) as p:
        for i in range(6):
            p.send(Message(topic, f"all-{i}".encode()))
    for c in consumers:
        c.wait_for("received", 6, timeout=60)
        got = sorted(e["body"] for e in c.finish() if e["event"] == "received")
        assert got == [f"all-{i}" for i in range(6)], "every member gets every message"

    puller = start_peer(
        client, peers, tmp_path, action="pull", namesrv=cluster.namesrv,
        group=f"puller-{client}", topic=topic, expect=6,
    )  # fmt: skip
    pulled = sorted(e["body"] for e in puller.finish() if e["event"] == "received")
    assert pulled == [f"all-{i}" for i in range(6)]


@pytest.mark.features("offsets kept across consumer restart")
def test_offsets_survive_a_consumer_restart(
    client: str, cluster: Cluster, peers: list[Peer], tmp_path: Path
):
    topic = f"Restart-{client}"
    spec = dict(
        action="consume", namesrv=cluster.namesrv, group=f"restart-{client}", topic=topic,
        timeout=90,
    )  # fmt: skip
    with Producer(f"rp-restart-{client}", cluster.namesrv) as p:
        first = start_peer(client, peers, tmp_path, **spec)
        assert first.wait_for("ready")
        for i in range(8):
            p.send(Message(topic, f"one-{i}".encode()))
        first.wait_for("received", 8, timeout=90)
        time.sleep(6)  # the clients commit offsets every 5 s
        assert len([e for e in first.finish() if e["event"] == "received"]) == 8
        for i in range(8):
            p.send(Message(topic, f"two-{i}".encode()))
    second = start_peer(client, peers, tmp_path, **spec)
    second.wait_for("received", 8, timeout=90)
    time.sleep(2)
    got = sorted(e["body"] for e in second.finish() if e["event"] == "received")
    assert got == sorted(f"two-{i}" for i in range(8)), "resumed from the committed offsets"


@pytest.mark.features("transactional messages (commit, rollback, check)", clients=["rust"])
def test_transactional_messages_with_a_broker_check(client: str, peers: list[Peer], tmp_path: Path):
    if client != "rust":
        pytest.skip("the C++ peer program has no transactional producer")
    # A broker that asks about an open transaction 1 s after its half message was stored.
    cluster = compat_cluster(
        tmp_path / "store", {"transactionCheckInterval": "300", "transactionTimeOut": "1000"}
    )
    try:
        topic = "Transact-rust"
        states = ["commit", "rollback", "unknown"]
        p = start_peer(
            client, peers, tmp_path, action="transact", namesrv=cluster.namesrv,
            group="rust-transactions", topic=topic, count=6, prefix="tx", keys="txkey",
            tags="TagT", execute=states, check="commit", timeout=120,
        )  # fmt: skip
        sent = p.wait_for("sent", 6, timeout=60)
        assert len(sent) == 6, (p.events, p.stderr)
        local = {"commit": "COMMIT_MESSAGE", "rollback": "ROLLBACK_MESSAGE", "unknown": "UNKNOW"}
        for e in sent:
            assert e["status"] == "SEND_OK" and e["local_state"] == local[states[e["i"] % 3]]
            # The transaction id the listener saw is the message's UNIQ_KEY.
            assert e["transaction_id"] == e["msg_id"]
        wanted = {e["i"] for e in sent if states[e["i"] % 3] != "rollback"}
        unknown = {e["i"] for e in sent if states[e["i"] % 3] == "unknown"}
        consumer, got = rocketpy_consumer(cluster, "rp-reads-transactions", topic)
        try:
            got.wait_for(len(wanted), timeout=60)
            # Further checks (every 0.3 s) and rolled-back messages would show by now.
            time.sleep(3)
            msgs = list(got.messages)
        finally:
            consumer.shutdown()
        p.wait_for("checked", len(unknown), timeout=30)
        events = p.finish()
    finally:
        cluster.stop()
    checked = [e for e in events if e["event"] == "checked"]
    bodies = sorted(m.body.decode() for m in msgs)
    assert bodies == sorted(f"tx-{i}" for i in wanted), "committed ones, each once"
    by_index = {e["i"]: e for e in sent}
    for m in msgs:
        e = by_index[int(m.body.decode().rsplit("-", 1)[1])]
        assert m.msg_id == e["msg_id"] and m.queue_id == e["queue_id"]
        assert (m.topic, m.tags, m.keys) == (topic, "TagT", f"txkey-{e['i']}")
        # The transaction's marks stay on the broker.
        for prop in ["TRAN_MSG", "REAL_TOPIC", "REAL_QID"]:
            assert m.get_property(prop) is None, prop
        if e["i"] in unknown:  # committed by the check, after transactionTimeOut
            assert m.store_timestamp - m.born_timestamp >= 900
    # Only the open transactions were asked about, and each answered commit.
    assert {int(c["body"].rsplit("-", 1)[1]) for c in checked} == unknown
    for c in checked:
        e = by_index[int(c["body"].rsplit("-", 1)[1])]
        assert c["transaction_id"] == e["msg_id"] == c["msg_id"]
        assert (c["topic"], c["tags"], c["keys"]) == (topic, "TagT", f"txkey-{e['i']}")
        assert c["state"] == "COMMIT_MESSAGE"
    assert [e["event"] for e in events][-2:] == ["done", "exit"]
