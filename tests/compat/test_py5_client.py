"""The official RocketMQ 5.x Python client (PyPI ``rocketmq-python-client``, gRPC only) on a
rocketpy broker serving 5.x clients (``grpcServerPort``): its producer and its simple and
push consumers, unchanged, and messages crossing between it and rocketpy's 4.x client with
their properties intact."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import Cluster

from helpers import Collector, fast_config, wait_until
from peerlib import PEERS, PY5_PYTHON, Peer, compat_cluster, py5
from rocketpy import ConsumeFromWhere, Message, Producer, PushConsumer
from rocketpy.admin import Admin
from rocketpy.errors import ClientError


def feature(name: str) -> pytest.MarkDecorator:
    """A row of the README's compatibility table, shown with the 5.x client."""
    return pytest.mark.features(name, clients=["py5"])


@pytest.fixture(scope="module")
def cluster5(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = compat_cluster(
        tmp_path_factory.mktemp("compat5") / "store",
        {
            "transactionTimeOut": "1000",
            "transactionCheckInterval": "1000",
            # Push consumers' invisible time (renewed while they work): short, to see renewal.
            "defaultInvisibleTimeMills": "3000",
            # SQL92 filter expressions are evaluated (RocketMQ's key; off, they are refused).
            "enablePropertyFilter": "true",
        },
        grpc=True,
    )
    yield c
    c.stop()


def create(cluster: Cluster, topic: str, queues: int = 4) -> None:
    with Admin(cluster.namesrv) as admin:
        admin.create_topic(topic, queues=queues)


@feature("5.x producer, consumed by rocketpy (4.x)")
def test_a_5x_producer_reaches_a_4x_consumer(cluster5: Cluster, peers: list[Peer], tmp_path: Path):
    topic = "Py5ToRocketpy"
    create(cluster5, topic)
    p = py5(
        peers, tmp_path, action="produce", endpoint=cluster5.grpc, topic=topic, count=8,
        tag="T5", keys="k", properties={"origin": "py5"}, prefix="five",
    )  # fmt: skip
    sent = {f"five-{e['i']}": e for e in p.finish() if e["event"] == "sent"}
    assert len(sent) == 8
    got = Collector()
    c = PushConsumer(
        "py5-to-4x",
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        client_config=fast_config(cluster5.namesrv),
    )
    c.subscribe(topic)
    c.register_listener(got)
    c.start()
    try:
        assert wait_until(lambda: len(got.messages) >= 8, timeout=60)
    finally:
        c.shutdown()
    for m in got.messages:
        body = m.body.decode()
        i = body.split("-")[1]
        assert (m.tags, m.keys, m.properties.get("origin")) == ("T5", f"k-{i}", "py5")
        assert m.msg_id == sent[body]["message_id"], "the 5.x message id is the UNIQ_KEY"


@feature("simple consumer: receive, ack, change invisible time, redelivery")
def test_a_simple_consumer_receives_what_rocketpy_sent(
    cluster5: Cluster, peers: list[Peer], tmp_path: Path
):
    topic = "RocketpyToPy5"
    create(cluster5, topic)
    sent_at = int(time.time() * 1000)
    with Producer("rocketpy-to-py5", cluster5.namesrv) as p:
        sent = [
            Message(topic, f"r-{i}".encode(), tags="T4", keys=f"key-{i}",
                    properties={"origin": "rocketpy"})
            for i in range(6)
        ]  # fmt: skip
        ids = [p.send(m).msg_id for m in sent]
    c = py5(
        peers, tmp_path, action="simple_consume", endpoint=cluster5.grpc, group="py5-simple",
        topic=topic, count=6, invisible_s=2, hold=["r-2"], extend=["r-3"], extend_s=1,
        await_s=3, timeout=90,
    )  # fmt: skip
    events = c.finish(timeout=120)
    received = [e for e in events if e["event"] == "received"]
    acked = sorted(e["body"] for e in events if e["event"] == "acked")
    assert acked == [f"r-{i}" for i in range(6)]
    by_body: dict[str, list[dict]] = {}
    for e in received:
        by_body.setdefault(e["body"], []).append(e)
    for body, deliveries in by_body.items():
        first = deliveries[0]
        i = body.split("-")[1]
        assert (first["topic"], first["tag"], first["keys"]) == (topic, "T4", [f"key-{i}"])
        assert first["properties"].get("origin") == "rocketpy"
        assert not first["corrupted"], "the body digest checks out"
        assert first["message_id"] == ids[int(i)], "the producer's UNIQ_KEY"
        assert first["born_host"] == "127.0.0.1", "the producer's address, without its port"
        assert abs(first["born_timestamp"] - sent_at) < 60_000, first["born_timestamp"]
        assert [d["delivery_attempt"] for d in deliveries][:2] == (
            [1, 2] if body in ("r-2", "r-3") else [1]
        ), body
    assert len(by_body["r-2"]) == 2 and len(by_body["r-3"]) == 2, "held ones come back"


@feature("SQL92 filter expression (FilterExpression of type SQL)")
def test_an_sql92_filter_expression_receives_only_matching_messages(
    cluster5: Cluster, peers: list[Peer], tmp_path: Path
):
    topic = "RocketpyToPy5Sql"
    create(cluster5, topic)
    with Producer("rocketpy-to-py5-sql", cluster5.namesrv) as p:
        for i in range(10):
            tags = "A" if i % 2 == 0 else "B"
            p.send(Message(topic, f"s-{i}".encode(), tags=tags, properties={"a": str(i)}))
    c = py5(
        peers, tmp_path, action="simple_consume", endpoint=cluster5.grpc, group="py5-sql",
        topic=topic, count=3, sql="(a > 5 AND TAGS = 'B') OR a = 0", await_s=3, timeout=60,
    )  # fmt: skip
    events = c.finish(timeout=90)
    received = {e["body"] for e in events if e["event"] == "received"}
    assert received == {"s-0", "s-7", "s-9"}, "only the matching messages, each once"
    # An expression that does not compile: the receive is refused, saying where.
    bad = py5(
        peers, tmp_path, action="simple_consume", endpoint=cluster5.grpc, group="py5-sql-bad",
        topic=topic, count=1, sql="a >", await_s=1, timeout=20,
    )  # fmt: skip
    errors = bad.wait_for("error", timeout=60)
    assert errors and "character" in errors[0]["error"], errors


def typed_topic(cluster: Cluster, topic: str, message_type: str) -> None:
    """Creates ``topic`` with RocketMQ 5's ``message.type`` through ``rocketpy admin
    updateTopic -a`` (mqadmin's own way)."""
    r = subprocess.run(
        [sys.executable, "-m", "rocketpy", "admin", "updateTopic", "-n", cluster.namesrv,
         "-c", "DefaultCluster", "-t", topic, "-r", "2", "-w", "2",
         "-a", f"+message.type={message_type}"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr


@feature("typed topics: message.type and the sends it refuses")
def test_typed_topics_take_their_own_message_type(
    cluster5: Cluster, peers: list[Peer], tmp_path: Path
):
    typed_topic(cluster5, "Py5FifoTyped", "FIFO")
    typed_topic(cluster5, "Py5NormalTyped", "NORMAL")
    # Each type's own messages go through the 5.x client's checks and the proxy's.
    fifo = py5(
        peers, tmp_path, action="produce", endpoint=cluster5.grpc, topic="Py5FifoTyped",
        count=2, message_group="g1", prefix="fifo-ok",
    )  # fmt: skip
    assert len([e for e in fifo.finish() if e["event"] == "sent"]) == 2
    normal = py5(
        peers, tmp_path, action="produce", endpoint=cluster5.grpc, topic="Py5NormalTyped",
        count=2, prefix="normal-ok",
    )  # fmt: skip
    assert len([e for e in normal.finish() if e["event"] == "sent"]) == 2
    # A FIFO message to a NORMAL topic is refused, by the client or by the proxy.
    wrong = py5(
        peers, tmp_path, action="produce", endpoint=cluster5.grpc, topic="Py5NormalTyped",
        count=1, message_group="g1", prefix="fifo-wrong",
    )  # fmt: skip
    errors = wrong.wait_for("error", timeout=60)
    assert errors and "accept message types" in errors[0]["error"], "the client checks the route"
    # Without the client's check (its gRPC stub), the proxy refuses as RocketMQ 5's does.
    raw = py5(
        peers, tmp_path, action="stub_send", endpoint=cluster5.grpc, topic="Py5NormalTyped",
        message_group="g1",
    )  # fmt: skip
    answered = raw.wait_for("answered", timeout=60)
    assert answered[0]["status"] == 40014, answered  # MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    assert "expected type is NORMAL, but actual type is FIFO" in answered[0]["message"]
    assert pulled(cluster5, "Py5NormalTyped") == ["normal-ok-0", "normal-ok-1"]
    assert pulled(cluster5, "Py5FifoTyped") == ["fifo-ok-0", "fifo-ok-1"]


def group(cluster: Cluster, name: str, **settings: object) -> None:
    """Creates consumer group ``name`` on the broker with RocketMQ's settings."""
    with Admin(cluster.namesrv) as admin:
        admin.update_subscription_group(cluster.broker, {"groupName": name, **settings})


def pulled(cluster: Cluster, topic: str) -> list[str]:
    """Every body stored in ``topic`` (read with pulls, as mqadmin does; none while it does not
    exist)."""
    out = []
    with Admin(cluster.namesrv) as admin:
        try:
            queues = admin.topic_stats(topic)
        except ClientError:
            return []
        for mq in queues:
            out.extend(m.body.decode() for m in admin.pull_messages(mq, 0, 64))
    return sorted(out)


@feature("push consumer: consume, retry on failure")
def test_a_push_consumer_consumes_and_retries(cluster5: Cluster, peers: list[Peer], tmp_path: Path):
    topic = "Py5Push"
    create(cluster5, topic)
    c = py5(
        peers, tmp_path, action="push_consume", endpoint=cluster5.grpc, group="py5-push",
        topic=topic, fail_first=1, timeout=120,
    )  # fmt: skip
    assert c.wait_for("ready")
    with Producer("to-py5-push", cluster5.namesrv) as p:
        for i in range(5):
            p.send(Message(topic, f"p-{i}".encode()))
    received = c.wait_for("received", 10, timeout=60)
    events = c.finish()
    deliveries: dict[str, list[int]] = {}
    for e in [e for e in events if e["event"] == "received"]:
        deliveries.setdefault(e["body"], []).append(e["delivery_attempt"])
    assert len(received) >= 10
    assert deliveries == {f"p-{i}": [1, 2] for i in range(5)}, "each failed once, then retried"


@feature("FIFO: message groups in order through a held queue")
def test_fifo_message_groups_arrive_in_order(cluster5: Cluster, peers: list[Peer], tmp_path: Path):
    topic, grp = "Py5Fifo", "py5-fifo"
    create(cluster5, topic, queues=4)
    group(cluster5, grp, consumeMessageOrderly=True)
    for g in ("A", "B", "C"):
        p = py5(
            peers, tmp_path, action="produce", endpoint=cluster5.grpc, topic=topic, count=6,
            message_group=g, prefix=g,
        )  # fmt: skip
        p.finish()
    c = py5(
        peers, tmp_path, action="push_consume", endpoint=cluster5.grpc, group=grp, topic=topic,
        fail_first=1, timeout=120,
    )  # fmt: skip
    c.wait_for("received", 36, timeout=90)
    events = c.finish()
    by_group: dict[str, list[str]] = {}
    for e in [e for e in events if e["event"] == "received"]:
        assert e["message_group"] == e["body"].split("-")[0]
        by_group.setdefault(e["message_group"], []).append(e["body"])
    for g, bodies in by_group.items():
        # Each message fails once and is retried before the next of its group is delivered.
        expected = [b for i in range(6) for b in (f"{g}-{i}", f"{g}-{i}")]
        assert bodies == expected, g


@feature("FIFO from the group's config, with no subscription in the client's settings")
def test_fifo_comes_from_the_group_not_the_settings(
    cluster5: Cluster, peers: list[Peer], tmp_path: Path
):
    topic = "Py5FifoNoSettings"
    create(cluster5, topic, queues=1)
    for name, orderly in (("py5-orderly-bare", True), ("py5-concurrent-bare", False)):
        group(cluster5, name, consumeMessageOrderly=orderly)
    p = py5(
        peers, tmp_path, action="produce", endpoint=cluster5.grpc, topic=topic, count=2,
        message_group="G", prefix="G",
    )  # fmt: skip
    p.finish()
    rounds = {}
    for name in ("py5-orderly-bare", "py5-concurrent-bare"):
        c = py5(
            peers, tmp_path, action="stub_receive", endpoint=cluster5.grpc, group=name,
            topic=topic, rounds=2, batch=1,
        )  # fmt: skip
        rounds[name] = [e["bodies"] for e in c.finish() if e["event"] == "round"]
    # An orderly group's queue is held until its message is acked: the second receive
    # gets nothing; a concurrent group's gets the next message.
    assert rounds["py5-orderly-bare"] == [["G-0"], []]
    assert rounds["py5-concurrent-bare"] == [["G-0"], ["G-1"]]


@feature("transactions: commit, rollback, orphaned ones resolved by the checker")
def test_transactions_commit_roll_back_and_answer_checks(
    cluster5: Cluster, peers: list[Peer], tmp_path: Path
):
    topic = "Py5Tx"
    create(cluster5, topic)
    p = py5(
        peers, tmp_path, action="transaction", endpoint=cluster5.grpc, topic=topic,
        outcomes=["commit", "rollback", "unknown", "unknown"], checker="commit", prefix="tx",
        timeout=90,
    )  # fmt: skip
    assert len(p.wait_for("sent", 4)) == 4
    checked = p.wait_for("checked", 2, timeout=60)
    assert sorted(e["body"] for e in checked) == ["tx-2", "tx-3"]
    assert wait_until(lambda: pulled(cluster5, topic) == ["tx-0", "tx-2", "tx-3"], timeout=30)
    p.finish()


@feature("retries end in the group's dead-letter queue")
def test_a_message_that_always_fails_goes_to_the_dlq(
    cluster5: Cluster, peers: list[Peer], tmp_path: Path
):
    topic, grp = "Py5Dlq", "py5-dlq"
    create(cluster5, topic)
    group(cluster5, grp, retryMaxTimes=1)
    c = py5(
        peers, tmp_path, action="push_consume", endpoint=cluster5.grpc, group=grp, topic=topic,
        always_fail=["d-1"], timeout=120,
    )  # fmt: skip
    assert c.wait_for("ready")
    with Producer("to-py5-dlq", cluster5.namesrv) as p:
        for i in range(3):
            p.send(Message(topic, f"d-{i}".encode()))
    assert wait_until(lambda: pulled(cluster5, f"%DLQ%{grp}") == ["d-1"], timeout=60)
    events = c.finish()
    attempts = [
        e["delivery_attempt"] for e in events if e["event"] == "received" and e["body"] == "d-1"
    ]
    assert attempts == [1, 2], "two deliveries (retryMaxTimes 1), then the DLQ"


@feature("delay messages delivered at their time")
def test_delay_messages_wait_for_their_delivery_time(
    cluster5: Cluster, peers: list[Peer], tmp_path: Path
):
    topic = "Py5Delay"
    create(cluster5, topic)
    started = time.time()
    p = py5(
        peers, tmp_path, action="produce", endpoint=cluster5.grpc, topic=topic, count=3,
        delay_s=3, prefix="later",
    )  # fmt: skip
    p.finish()
    assert pulled(cluster5, topic) == [], "held until the delivery time"
    c = py5(
        peers, tmp_path, action="simple_consume", endpoint=cluster5.grpc, group="py5-delay",
        topic=topic, count=3, await_s=5, timeout=60,
    )  # fmt: skip
    events = c.finish(timeout=90)
    received = [e for e in events if e["event"] == "received"]
    assert sorted(e["body"] for e in received) == ["later-0", "later-1", "later-2"]
    for e in received:
        assert e["delivery_timestamp"] is not None
        assert e["delivery_timestamp"] >= int(started) * 1000 + 2000
    # The client sends whole seconds: the time is at least 2 s after the send.
    assert time.time() - started >= 2.0, "not before the delivery time"


@feature("one message to one consumer at a time; pop and 4.x groups side by side")
def test_two_simple_consumers_share_messages_beside_a_4x_group(
    cluster5: Cluster, peers: list[Peer], tmp_path: Path
):
    topic = "Py5Share"
    create(cluster5, topic)
    got = Collector()
    four = PushConsumer(
        "py5-share-4x",
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        client_config=fast_config(cluster5.namesrv),
    )
    four.subscribe(topic)
    four.register_listener(got)
    four.start()
    try:
        spec = dict(
            action="simple_consume", endpoint=cluster5.grpc, group="py5-share", topic=topic,
            count=40, invisible_s=30, batch=4, await_s=2, timeout=15,
        )  # fmt: skip
        consumers = [py5(peers, tmp_path / str(i), **spec) for i in range(2)]
        # Both wait in receives before anything is sent: on a loaded machine one consumer
        # would otherwise take all 40 before the other's process is up.
        assert all(c.wait_for("ready") for c in consumers)
        with Producer("to-py5-share", cluster5.namesrv) as p:
            for i in range(40):
                p.send(Message(topic, f"s-{i}".encode()))
        acked = [
            [e["body"] for e in c.finish(timeout=60) if e["event"] == "acked"] for c in consumers
        ]
        assert wait_until(lambda: len(got.messages) >= 40, timeout=60)
    finally:
        four.shutdown()
    assert sorted(acked[0] + acked[1]) == sorted(f"s-{i}" for i in range(40)), "each once"
    assert acked[0] and acked[1], "both consumers got some"
    assert sorted(m.body.decode() for m in got.messages) == sorted(f"s-{i}" for i in range(40))


@feature("one AckMessage acking many received messages")
def test_one_ack_of_many_entries_ends_exactly_those(
    cluster5: Cluster, peers: list[Peer], tmp_path: Path
):
    """The proxy acks a request's entries per broker in one BATCH_ACK_MESSAGE: the acked
    messages never come back, the one left out does, once more."""
    topic = "Py5BatchAck"
    create(cluster5, topic, queues=1)
    bodies = [f"b-{i}" for i in range(10)]
    with Producer("to-py5-batch-ack", cluster5.namesrv) as p:
        for b in bodies:
            p.send(Message(topic, b.encode()))
    with Admin(cluster5.namesrv) as admin:
        for mq in admin.topic_stats(topic):
            admin.commit_offset("py5-batch-ack", mq, 0)
    c = py5(
        peers, tmp_path, action="stub_batch_ack", endpoint=cluster5.grpc, group="py5-batch-ack",
        topic=topic, count=10, hold=["b-4"], invisible_s=2, timeout=12,
    )  # fmt: skip
    events = c.finish(timeout=60)
    [acked] = [e for e in events if e["event"] == "acked"]
    assert acked["status"] == 20000 and acked["entries"] == [20000] * 9, acked
    # A blank group is ILLEGAL_CONSUMER_GROUP (40003), as RocketMQ's proxy answers.
    assert [e["status"] for e in events if e["event"].startswith("blank_group")] == [40003] * 2
    received = [(e["body"], e["delivery_attempt"]) for e in events if e["event"] == "received"]
    assert sorted(received) == sorted([(b, 1) for b in bodies] + [("b-4", 2)]), received


@feature("the protocol file matches the client's published descriptors")
def test_our_protocol_file_matches_the_clients_descriptors():
    """rocketpy's messaging.proto (written from the protocol's published names and numbers)
    compiles to the same messages, fields, enums and methods the official client ships."""
    proto = Path(__file__).parents[2] / "crates" / "proxy" / "proto" / "messaging.proto"
    out = subprocess.run(
        [PY5_PYTHON, str(PEERS / "py5_descriptors.py"), str(proto)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["compared"] > 300
    assert result["differences"] == []


@feature("push consumer: invisible time renewed while the listener works")
def test_a_slow_listener_keeps_its_message(cluster5: Cluster, peers: list[Peer], tmp_path: Path):
    topic = "Py5Slow"
    create(cluster5, topic)
    c = py5(
        peers, tmp_path, action="push_consume", endpoint=cluster5.grpc, group="py5-slow",
        topic=topic, slow_s=8, timeout=60,
    )  # fmt: skip
    assert c.wait_for("ready")
    with Producer("to-py5-slow", cluster5.namesrv) as p:
        p.send(Message(topic, b"slow-0"))
    assert c.wait_for("consumed", 1, timeout=40)
    time.sleep(4)  # a redelivery would show by now
    events = c.finish()
    received = [e for e in events if e["event"] == "received"]
    assert [e["body"] for e in received] == ["slow-0"], "8 s of work, 3 s invisible: renewed"
