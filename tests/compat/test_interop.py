"""Clients of different makers on one rocketpy cluster: messages sent by one consumed by the
others, one consumer group made of a C++, a Rust and a rocketpy consumer, offsets committed by
one member honoured by another, and the Rust client's look-ups by key and by message id."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from servers import Cluster

from helpers import Collector, fast_config, wait_until
from peerlib import Peer, cpp, rust, start_peer
from rocketpy import ConsumeFromWhere, Message, Producer, PushConsumer
from rocketpy.admin import Admin


@pytest.mark.features("consumed by the other clients (and rocketpy)")
@pytest.mark.parametrize(("sender", "receiver"), [("cpp", "rust"), ("rust", "cpp")])
def test_messages_cross_between_clients(
    sender: str, receiver: str, cluster: Cluster, peers: list[Peer], tmp_path: Path
):
    topic = f"Cross-{sender}-{receiver}"
    c = start_peer(
        receiver, peers, tmp_path, action="consume", namesrv=cluster.namesrv,
        group=f"cross-{sender}-{receiver}", topic=topic, read_properties=["origin"],
        timeout=120,
    )  # fmt: skip
    assert c.wait_for("ready")
    before = time.time() * 1000
    p = start_peer(
        sender, peers, tmp_path, action="produce", namesrv=cluster.namesrv, topic=topic,
        mode="sync", count=10, prefix=sender, tags="T1", keys="k",
        properties={"origin": sender},
    )  # fmt: skip
    sent = {f"{sender}-{e['i']}": e for e in p.finish() if e["event"] == "sent"}
    c.wait_for("received", 10, timeout=90)
    received = [e for e in c.finish() if e["event"] == "received"]
    assert sorted(e["body"] for e in received) == sorted(sent)
    for e in received:
        i = e["body"].split("-")[1]
        assert (e["tags"], e["keys"], e["properties"]) == ("T1", f"k-{i}", {"origin": sender})
        assert e["msg_id"] == sent[e["body"]]["msg_id"]
        assert before - 5000 <= e["born_timestamp"] <= e["store_timestamp"] <= time.time() * 1000


@pytest.mark.features("one consumer group with the other clients and rocketpy")
def test_one_group_of_three_clients_shares_the_queues(
    cluster: Cluster, peers: list[Peer], tmp_path: Path
):
    group, topic = "three-makers", "ThreeMakers"
    with Admin(cluster.namesrv) as admin:
        admin.create_topic(topic, queues=8)
    spec = dict(action="consume", namesrv=cluster.namesrv, group=group, topic=topic, timeout=150)
    members = [cpp(peers, tmp_path, **spec), rust(peers, tmp_path, **spec)]
    for m in members:
        assert m.wait_for("ready")
    got = Collector()
    rp = PushConsumer(
        group,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        client_config=fast_config(cluster.namesrv),
    )
    rp.subscribe(topic)
    rp.register_listener(got)
    rp.start()
    try:
        time.sleep(25)  # every member rebalances (the C++ and Rust clients every 20 s)
        with Producer("three-makers-producer", cluster.namesrv) as p:
            for i in range(240):
                p.send(Message(topic, f"m-{i}".encode()))

        def total() -> int:
            return len(got.messages) + sum(len(m.of("received")) for m in members)

        assert wait_until(lambda: total() >= 240, timeout=90), total()
        time.sleep(3)  # a message delivered twice would show by now
    finally:
        rp.shutdown()
    by_member = [[e["body"] for e in m.finish() if e["event"] == "received"] for m in members]
    by_member.append([m.body.decode() for m in got.messages])
    assert all(by_member), f"every member consumes: {[len(b) for b in by_member]}"
    everything = [b for bodies in by_member for b in bodies]
    assert sorted(everything) == sorted(f"m-{i}" for i in range(240)), "none lost, none twice"


@pytest.mark.features("offsets committed by another client honoured")
def test_offsets_committed_by_one_member_are_honoured_by_another(
    cluster: Cluster, peers: list[Peer], tmp_path: Path
):
    group, topic = "handover", "Handover"
    spec = dict(action="consume", namesrv=cluster.namesrv, group=group, topic=topic, timeout=90)
    with Producer("handover-producer", cluster.namesrv) as p:
        first = rust(peers, tmp_path, **spec)
        assert first.wait_for("ready")
        for i in range(8):
            p.send(Message(topic, f"one-{i}".encode()))
        first.wait_for("received", 8, timeout=90)
        time.sleep(6)  # committed within 5 s
        first.finish()
        for i in range(8):
            p.send(Message(topic, f"two-{i}".encode()))
    second = cpp(peers, tmp_path, **spec)
    second.wait_for("received", 8, timeout=90)
    time.sleep(2)
    got = sorted(e["body"] for e in second.finish() if e["event"] == "received")
    assert got == sorted(f"two-{i}" for i in range(8)), "the C++ member resumes where Rust left"


@pytest.mark.features("query by key", "view by message id", clients=["rust"])
def test_rust_client_finds_messages_by_key_and_by_id(
    cluster: Cluster, peers: list[Peer], tmp_path: Path
):
    topic = "LookUp"
    with Producer("lookup-producer", cluster.namesrv) as p:
        result = p.send(Message(topic, b"find me", keys="order-42"))
        p.send(Message(topic, b"not me", keys="order-43"))
    q = rust(
        peers, tmp_path, action="query", namesrv=cluster.namesrv, topic=topic, key="order-42",
        offset_msg_id=result.offset_msg_id,
    )  # fmt: skip
    events = q.finish()
    assert [e["body"] for e in events if e["event"] == "found"] == ["find me"]
    (viewed,) = [e for e in events if e["event"] == "viewed"]
    assert viewed["body"] == "find me" and viewed["msg_id"] == result.msg_id
