"""The official RocketMQ 5.x Python client (PyPI ``rocketmq-python-client``, gRPC only) on a
rocketpy broker serving 5.x clients (``grpcServerPort``): its producer and its simple and
push consumers, unchanged, and messages crossing between it and rocketpy's 4.x client with
their properties intact."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import Collector, fast_config, wait_until
from peerlib import Cluster, Peer, py5
from rocketpy import ConsumeFromWhere, Message, Producer, PushConsumer
from rocketpy.admin import Admin


def feature(name: str) -> pytest.MarkDecorator:
    """A row of the README's compatibility table, shown with the 5.x client."""
    return pytest.mark.features(name, clients=["py5"])


@pytest.fixture(scope="module")
def cluster5(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(
        tmp_path_factory.mktemp("compat5") / "store",
        "--set", "transactionTimeOut=1000", "--set", "transactionCheckInterval=1000",
        grpc=True,
    )  # fmt: skip
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
    with Producer("rocketpy-to-py5", cluster5.namesrv) as p:
        for i in range(6):
            p.send(Message(topic, f"r-{i}".encode(), tags="T4", keys=f"key-{i}",
                           properties={"origin": "rocketpy"}))  # fmt: skip
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
        assert [d["delivery_attempt"] for d in deliveries][:2] == (
            [1, 2] if body in ("r-2", "r-3") else [1]
        ), body
    assert len(by_body["r-2"]) == 2 and len(by_body["r-3"]) == 2, "held ones come back"
