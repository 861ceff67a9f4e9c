"""The Apache RocketMQ C++ client (the core of the official ``rocketmq-client-python``; PyPI
``rocketmq`` 0.4.4) against rocketpy's name server and broker, and interoperating with
rocketpy's own client. Each C++ application runs as its own process (``peers/cpp_client.py``).
"""

from __future__ import annotations

import struct
import time
from pathlib import Path

from helpers import Collector, fast_config, start_consumer, wait_until
from peerlib import Cluster, Peer, cpp
from rocketpy import ConsumeFromWhere, Message, MessageModel, Producer, PushConsumer
from rocketpy.admin import Admin
from rocketpy.message import MessageQueue

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


def rocketpy_consumer(
    cluster: Cluster, group: str, topic: str, expression: str = "*"
) -> tuple[PushConsumer, Collector]:
    got = Collector()
    c = start_consumer(
        group,
        cluster.namesrv,
        topic,
        got,
        expression,
        FIRST,
        client_config=fast_config(cluster.namesrv),
    )
    return c, got


def test_every_send_mode_reaches_a_rocketpy_consumer(
    cluster: Cluster, peers: list[Peer], tmp_path: Path
):
    sent = {}
    for mode in ["sync", "async", "oneway", "batch"]:
        p = cpp(
            peers,
            tmp_path,
            action="produce",
            namesrv=cluster.namesrv,
            topic="CppSend",
            mode=mode,
            count=5,
            prefix=f"cpp-{mode}",
            tags="TagA",
            keys="key",
            properties={"color": "blue", "中文": "值"},
        )
        events = p.finish()
        sent[mode] = [e for e in events if e["event"] == "sent"]
        if mode in ("sync", "async"):
            assert all(e["status"] == 0 for e in sent[mode]), sent[mode]
    assert len(sent["batch"]) == 1 and sent["batch"][0]["status"] == 0
    consumer, got = rocketpy_consumer(cluster, "rp-reads-cpp", "CppSend")
    try:
        msgs = got.wait_for(20)
    finally:
        consumer.shutdown()
    bodies = sorted(m.body.decode() for m in msgs)
    assert bodies == sorted(f"cpp-{mode}-{i}" for mode in sent for i in range(5))
    for m in msgs:
        i = m.body.decode().rsplit("-", 1)[1]
        assert (m.tags, m.keys) == ("TagA", f"key-{i}")
        assert m.get_property("color") == "blue" and m.get_property("中文") == "值"
        assert m.born_host.startswith("127.0.0.1:")
        assert abs(m.born_timestamp - time.time() * 1000) < 120_000
    by_body = {m.body.decode(): m for m in msgs}
    for e in sent["sync"]:
        m = by_body[f"cpp-sync-{e['i']}"]
        assert e["msg_id"] == m.msg_id, "the C++ client's message id is the one consumers see"
        assert e["offset"] == m.queue_offset


def test_cpp_consumer_reads_rocketpy_messages_with_tag_filter(
    cluster: Cluster, peers: list[Peer], tmp_path: Path
):
    c = cpp(
        peers, tmp_path, action="consume", namesrv=cluster.namesrv, group="cpp-filter",
        topic="RpToCpp", expression="TagA || TagB", read_properties=["color"], timeout=90,
    )  # fmt: skip
    assert c.wait_for("ready"), c.stderr
    results = {}
    with Producer("rp-to-cpp", cluster.namesrv) as p:
        for i, tag in enumerate(["TagA", "TagB", "TagC"] * 4):
            m = Message("RpToCpp", f"rp-{i}".encode(), tags=tag, keys=f"k{i}")
            m.properties["color"] = "green"
            results[f"rp-{i}"] = (tag, p.send(m))
    wanted = {b for b, (tag, _) in results.items() if tag != "TagC"}
    got = c.wait_for("received", len(wanted), timeout=60)
    time.sleep(2)  # a TagC message would arrive by now
    events = c.finish()
    received = [e for e in events if e["event"] == "received"]
    assert {e["body"] for e in received} == wanted
    assert len(received) == len(wanted), "each once"
    for e in got:
        tag, result = results[e["body"]]
        assert e["tags"] == tag and e["properties"] == {"color": "green"}
        assert e["msg_id"] == result.msg_id
        # offsetMsgId: store address (4 + 4 bytes) then the CommitLog offset, in hex.
        raw = bytes.fromhex(result.offset_msg_id)
        assert struct.unpack(">q", raw[8:])[0] == e["commit_log_offset"]
        assert raw[:4] == bytes([127, 0, 0, 1])


def test_orderly_send_and_orderly_consume(cluster: Cluster, peers: list[Peer], tmp_path: Path):
    c = cpp(
        peers, tmp_path, action="consume", namesrv=cluster.namesrv, group="cpp-orderly",
        topic="CppOrder", mode="orderly", threads=4, timeout=90,
    )  # fmt: skip
    assert c.wait_for("ready")
    p = cpp(
        peers, tmp_path, action="produce", namesrv=cluster.namesrv, topic="CppOrder",
        mode="orderly", count=40, order_keys=4, prefix="ord",
    )  # fmt: skip
    sent = [e for e in p.finish() if e["event"] == "sent"]
    assert all(e["status"] == 0 for e in sent)
    c.wait_for("received", 40, timeout=60)
    received = [e for e in c.finish() if e["event"] == "received"]
    assert len(received) == 40
    queue_of_key: dict[int, set[int]] = {}
    for e in sent:
        queue_of_key.setdefault(e["key"], set())
    by_queue: dict[int, list[int]] = {}
    for e in received:
        by_queue.setdefault(e["queue_id"], []).append(int(e["body"].split("-")[1]))
    for seq in by_queue.values():
        assert seq == sorted(seq), f"one queue is consumed in order: {seq}"
    for i in range(4):  # one sharding key, one queue
        queues = {e["queue_id"] for e in received if int(e["body"].split("-")[1]) % 4 == i}
        assert len(queues) == 1


def test_retry_with_reconsume_times_and_dlq(cluster: Cluster, peers: list[Peer], tmp_path: Path):
    # One failing message per group: the C++ client fails a whole pulled batch when one
    # message of it fails, so two failing messages in one group would blur the counts.
    spec = dict(action="consume", namesrv=cluster.namesrv, topic="CppRetry", timeout=150)
    retry = cpp(
        peers, tmp_path, group="cpp-retry", fail={"retry-me": 2}, expression="retry", **spec
    )
    dlq = cpp(peers, tmp_path, group="cpp-dlq", fail={"always-fails": -1}, expression="dlq", **spec)
    assert retry.wait_for("ready") and dlq.wait_for("ready")
    with Producer("rp-retry", cluster.namesrv) as p:
        p.send(Message("CppRetry", b"retry-me", tags="retry"))
        p.send(Message("CppRetry", b"always-fails", tags="dlq"))
    (done,) = retry.wait_for("received", 1, timeout=90)
    assert done["body"] == "retry-me"
    assert done["reconsume_times"] == 2, "redelivered from %RETRY%cpp-retry twice"
    assert [e["reconsume_times"] for e in retry.of("failed")] == [0, 1]
    # After maxReconsumeTimes (16 for the C++ client) the broker moves it to %DLQ%cpp-dlq.
    with Admin(cluster.namesrv) as admin:
        queue = MessageQueue("%DLQ%cpp-dlq", "broker-a", 0)
        assert wait_until(lambda: admin.topic_route(queue.topic) is not None, timeout=90)
        assert wait_until(lambda: admin.max_offset(queue) == 1, timeout=30)
    retry.finish()
    failures = [e["reconsume_times"] for e in dlq.finish() if e["event"] == "failed"]
    assert failures == list(range(17)), "the first delivery and 16 retries, each counted"


def test_delay_level(cluster: Cluster, peers: list[Peer], tmp_path: Path):
    consumer, got = rocketpy_consumer(cluster, "rp-delay", "CppDelay")
    try:
        sent_at = time.time() * 1000
        p = cpp(
            peers,
            tmp_path,
            action="produce",
            namesrv=cluster.namesrv,
            topic="CppDelay",
            mode="sync",
            count=1,
            delay_level=3,
            prefix="late",
        )
        p.finish()
        (m,) = got.wait_for(1, timeout=30)
    finally:
        consumer.shutdown()
    # Level 3 is 1 s on this broker: stored again from SCHEDULE_TOPIC_XXXX when due, with its
    # DELAY property cleared, as RocketMQ's schedule service does.
    assert m.store_timestamp - sent_at >= 900
    assert m.get_property("DELAY") is None and m.topic == "CppDelay"


def test_broadcasting_and_pull_consumer(cluster: Cluster, peers: list[Peer], tmp_path: Path):
    with Admin(cluster.namesrv) as admin:
        # Broadcasting consumers start at the end of the queues of a topic they know of.
        admin.create_topic("CppBroadcast", queues=4)
    consumers = [
        cpp(
            peers,
            tmp_path,
            action="consume",
            namesrv=cluster.namesrv,
            group="cpp-broadcast",
            topic="CppBroadcast",
            model="broadcasting",
            instance=f"b{i}",
            timeout=90,
        )
        for i in range(2)
    ]
    for c in consumers:
        assert c.wait_for("ready")
    time.sleep(3)  # broadcasting consumers start at the end of the queues
    with Producer("rp-broadcast", cluster.namesrv) as p:
        for i in range(6):
            p.send(Message("CppBroadcast", f"all-{i}".encode()))
    for c in consumers:
        c.wait_for("received", 6, timeout=60)
        got = sorted(e["body"] for e in c.finish() if e["event"] == "received")
        assert got == [f"all-{i}" for i in range(6)], "every member gets every message"

    puller = cpp(
        peers, tmp_path, action="pull", namesrv=cluster.namesrv, group="cpp-puller",
        topic="CppBroadcast", expect=6,
    )  # fmt: skip
    pulled = sorted(e["body"] for e in puller.finish() if e["event"] == "received")
    assert pulled == [f"all-{i}" for i in range(6)]


def test_offsets_survive_a_consumer_restart(cluster: Cluster, peers: list[Peer], tmp_path: Path):
    spec = dict(
        action="consume",
        namesrv=cluster.namesrv,
        group="cpp-restart",
        topic="CppRestart",
        timeout=90,
    )
    with Producer("rp-restart", cluster.namesrv) as p:
        first = cpp(peers, tmp_path, **spec)
        assert first.wait_for("ready")
        for i in range(8):
            p.send(Message("CppRestart", f"one-{i}".encode()))
        first.wait_for("received", 8, timeout=60)
        time.sleep(6)  # the C++ client commits offsets every 5 s
        assert len([e for e in first.finish() if e["event"] == "received"]) == 8
        for i in range(8):
            p.send(Message("CppRestart", f"two-{i}".encode()))
    second = cpp(peers, tmp_path, **spec)
    second.wait_for("received", 8, timeout=60)
    time.sleep(2)
    got = sorted(e["body"] for e in second.finish() if e["event"] == "received")
    assert got == sorted(f"two-{i}" for i in range(8)), "resumed from the committed offsets"


def test_mixed_group_shares_queues_without_loss_or_duplicates(
    cluster: Cluster, peers: list[Peer], tmp_path: Path
):
    group, topic = "mixed-group", "MixedTopic"
    with Admin(cluster.namesrv) as admin:
        admin.create_topic(topic, queues=8)
    c = cpp(
        peers,
        tmp_path,
        action="consume",
        namesrv=cluster.namesrv,
        group=group,
        topic=topic,
        timeout=120,
    )
    assert c.wait_for("ready")
    got = Collector()
    rp = PushConsumer(
        group,
        cluster.namesrv,
        consume_from_where=FIRST,
        message_model=MessageModel.CLUSTERING,
        client_config=fast_config(cluster.namesrv),
    )
    rp.subscribe(topic)
    rp.register_listener(got)
    rp.start()
    try:
        time.sleep(25)  # both members rebalance (the C++ client every 20 s)
        with Producer("rp-mixed", cluster.namesrv) as p:
            for i in range(200):
                p.send(Message(topic, f"m-{i}".encode()))
        assert wait_until(lambda: len(got.messages) + len(c.of("received")) >= 200, timeout=60)
        time.sleep(3)
    finally:
        rp.shutdown()
    cpp_bodies = [e["body"] for e in c.finish() if e["event"] == "received"]
    rp_bodies = [m.body.decode() for m in got.messages]
    assert cpp_bodies and rp_bodies, "both members consume"
    assert sorted(cpp_bodies + rp_bodies) == sorted(f"m-{i}" for i in range(200)), (
        "none lost, none twice"
    )
