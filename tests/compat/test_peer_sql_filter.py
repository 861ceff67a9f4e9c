"""rocketmq-client-rust 1.0 subscribing with an SQL92 ``MessageSelector`` on rocketpy's broker:
with ``enablePropertyFilter=true`` (and the bloom-filter bit map on) it receives exactly the
matching messages of a mix rocketpy's producer sent; without, the broker refuses the
subscription and the client receives nothing unfiltered."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import Cluster

from peerlib import Peer, compat_cluster, start_peer
from rocketpy import Message, Producer

SQL = "(a > 10 AND TAGS = 'B') OR region = 'eu'"


@pytest.fixture(scope="module")
def filtering(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = compat_cluster(
        tmp_path_factory.mktemp("sql") / "store",
        {
            "enablePropertyFilter": "true",
            "enableCalcFilterBitMap": "true",
            "enableConsumeQueueExt": "true",
        },
    )
    yield c
    c.stop()


def send_mix(cluster: Cluster, topic: str) -> set[str]:
    """Twenty messages, `a` = 0..19, tags A/B, two with region=eu; returns the bodies SQL
    keeps."""
    wanted = set()
    with Producer(f"to-{topic}", cluster.namesrv) as p:
        for a in range(20):
            tag = "A" if a % 2 == 0 else "B"
            props = {"a": str(a)}
            if a in (2, 5):
                props["region"] = "eu"
            p.send(Message(topic, f"m-{a}".encode(), tags=tag, properties=props))
            if (a > 10 and tag == "B") or a in (2, 5):
                wanted.add(f"m-{a}")
    return wanted


@pytest.mark.features("SQL92 filter (MessageSelector.by_sql)", clients=["rust"])
def test_rust_consumer_receives_only_matching_messages(
    filtering: Cluster, peers: list[Peer], tmp_path: Path
):
    topic = "SqlRust"
    c = start_peer(
        "rust", peers, tmp_path, action="consume", namesrv=filtering.namesrv,
        group="sql-rust", topic=topic, sql=SQL, timeout=90,
    )  # fmt: skip
    assert c.wait_for("ready"), c.stderr
    wanted = send_mix(filtering, topic)
    c.wait_for("received", len(wanted), timeout=60)
    time.sleep(2)  # a message the filter excludes would arrive by now
    received = [e["body"] for e in c.finish() if e["event"] == "received"]
    assert sorted(received) == sorted(wanted), "each matching message once, no other"


@pytest.mark.features("SQL92 refused without enablePropertyFilter", clients=["rust"])
def test_rust_sql_subscription_is_refused_without_property_filters(
    cluster: Cluster, peers: list[Peer], tmp_path: Path
):
    topic = "SqlRustRefused"
    c = start_peer(
        "rust", peers, tmp_path, action="consume", namesrv=cluster.namesrv,
        group="sql-rust-refused", topic=topic, sql=SQL, timeout=20,
    )  # fmt: skip
    c.wait_for("ready", timeout=30)
    send_mix(cluster, topic)
    time.sleep(5)  # pulls are answered SYSTEM_ERROR: nothing arrives
    events = c.events
    c.kill()
    assert not [e for e in events if e["event"] == "received"], "never served unfiltered"
