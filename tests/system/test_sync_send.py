"""``Producer.send`` on its native path (request, direct connection, result made natively)
against a name server and two brokers: results say where the broker stored each message, a
refused first attempt goes on in Python to the other broker under the same message id, and a
refusal no retry can fix raises at once."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import ServerProcess, broker, free_port, namesrv

from helpers import wait_until
from rocketpy import (
    BrokerResponseError,
    ClientConfig,
    Message,
    Producer,
    SendResult,
    SendStatus,
)
from rocketpy.admin import Admin
from rocketpy.protocol import ResponseCode


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A name server and brokers ``broker-a`` and ``broker-b`` (which takes bodies of at
    most 1,024 bytes)."""
    root: Path = tmp_path_factory.mktemp("sync-send")
    ns_port = free_port()
    ns = namesrv(ns_port).start()
    addr = f"127.0.0.1:{ns_port}"
    servers: list[ServerProcess] = [ns]
    brokers = {}
    try:
        for name, extra in (("broker-a", {}), ("broker-b", {"maxMessageSize": "1024"})):
            port = free_port()
            settings = {"brokerName": name, **extra}
            servers.append(broker(addr, port, root / name, settings).start())
            brokers[name] = f"127.0.0.1:{port}"
        yield {"namesrv": addr, **brokers}
    finally:
        for s in reversed(servers):
            s.stop()


def config(cluster: dict[str, str], name: str) -> ClientConfig:
    # No route refresh during a test: the producer keeps the route it fetched first.
    return ClientConfig(
        cluster["namesrv"], instance_name=name, poll_name_server_interval_ms=600_000
    )


def create(cluster: dict[str, str], topic: str, on: list[str]) -> None:
    with Admin(cluster["namesrv"]) as admin:
        admin.create_topic(topic, queues=4, broker_addrs=[cluster[b] for b in on])

        def routed() -> bool:
            route = admin.topic_route(topic)
            return route is not None and len(route.broker_datas) == len(on)

        wait_until(routed)


def stored(cluster: dict[str, str], result: SendResult) -> Message | None:
    """The message stored at the result's queue and offset."""
    with Admin(cluster["namesrv"]) as admin:
        got = admin.pull_messages(result.message_queue, result.queue_offset, 1)
    return got[0] if got else None  # type: ignore[return-value]


def test_results_say_where_each_message_was_stored(cluster: dict[str, str]) -> None:
    topic = "SyncSendStored"
    create(cluster, topic, ["broker-a"])
    with Producer("sync-send-stored", client_config=config(cluster, "stored")) as p:
        results = [p.send(Message(topic, f"body-{i}", tags="T", keys=f"k{i}")) for i in range(40)]
    assert {r.status for r in results} == {SendStatus.SEND_OK}
    assert len({r.msg_id for r in results}) == 40
    assert len({(r.message_queue, r.queue_offset) for r in results}) == 40
    for i, r in enumerate(results):
        assert r.region_id == "DefaultRegion" and r.transaction_id is None
        m = stored(cluster, r)
        assert m is not None and m.body == f"body-{i}".encode()
        assert m.msg_id == r.msg_id and m.offset_msg_id == r.offset_msg_id
        assert m.tags == "T" and m.keys == f"k{i}"


def test_a_refused_first_attempt_is_retried_on_the_other_broker(
    cluster: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    topic = "SyncSendRetried"
    create(cluster, topic, ["broker-a", "broker-b"])
    with Producer("sync-send-retried", client_config=config(cluster, "retried")) as p:
        p.send(Message(topic, b"route"))
        # broker-a stops taking writes; the producer still has the route that says it does.
        with Admin(cluster["namesrv"]) as admin:
            admin.create_topic(topic, queues=4, perm=4, broker_addrs=[cluster["broker-a"]])
        with caplog.at_level(logging.WARNING, logger="rocketpy.producer"):
            results = [p.send(Message(topic, f"r{i}")) for i in range(8)]
    refused = [r for r in caplog.records if "attempt 1/3" in r.getMessage()]
    assert refused, "a send went to broker-a first"
    assert {r.message_queue.broker_name for r in results} == {"broker-b"}
    for i, r in enumerate(results):
        m = stored(cluster, r)
        # The retry kept the message id of the first attempt.
        assert m is not None and m.body == f"r{i}".encode() and m.msg_id == r.msg_id


def test_a_refusal_no_retry_can_fix_raises_at_once(cluster: dict[str, str]) -> None:
    topic = "SyncSendTooLarge"
    create(cluster, topic, ["broker-b"])
    with Producer("sync-send-large", client_config=config(cluster, "large")) as p:
        p.send(Message(topic, b"small"))
        with pytest.raises(BrokerResponseError) as e:
            p.send(Message(topic, b"x" * 2000))
        assert e.value.code == ResponseCode.MESSAGE_ILLEGAL
