"""Broker policies: permissions per broker and per topic, consumers expiring without
heartbeats, and oversized properties refused."""

from __future__ import annotations

from rmq_wire import Wire
from servers import dev
from test_conformance import (
    NO_PERMISSION,
    SUCCESS,
    create_topic,
    pull,
    send_v2,
)

MESSAGE_ILLEGAL = 13


def test_read_only_broker_refuses_sends(tmp_path):
    server = dev(tmp_path / "store", settings={"brokerPermission": "4"}).start()
    try:
        with Wire(server.broker) as w:
            r = send_v2(w, "AnyTopic", b"x")
            assert r.code == NO_PERMISSION and "forbidden" in (r.remark or "")
    finally:
        assert server.stop() == 0


def test_topic_permissions_and_property_limits(tmp_path):
    # Consumers silent for channelExpiredTimeout are removed: tested on a manual clock in
    # crates/broker/tests/it/broker.rs.
    server = dev(tmp_path / "store").start()
    try:
        with Wire(server.broker) as w:
            assert create_topic(w, "ReadOnly", queues=1, perm=4).code == SUCCESS
            assert send_v2(w, "ReadOnly", b"x").code == NO_PERMISSION
            assert create_topic(w, "WriteOnly", queues=1, perm=2).code == SUCCESS
            assert send_v2(w, "WriteOnly", b"x").code == SUCCESS
            assert pull(w, "WriteOnly", 0, 0).code == NO_PERMISSION

            big = send_v2(w, "Props", b"x", KEYS="k" * 40_000)
            assert big.code == MESSAGE_ILLEGAL, "properties over 32767 bytes"
    finally:
        assert server.stop() == 0
