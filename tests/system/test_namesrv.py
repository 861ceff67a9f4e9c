"""Name server liveness and fail-over: silent brokers expire, closed broker connections are
removed at once, and clients move to another name server when one is down."""

from __future__ import annotations

import json
import time
import zlib

from rmq_wire import Wire
from servers import HOST_DISK_SETTINGS
from test_conformance import GET_ROUTEINFO_BY_TOPIC, REGISTER_BROKER, SUCCESS, TOPIC_NOT_EXIST

from helpers import wait_until
from rocketpy import Message, Producer
from rocketpy._native import Broker, NameServer


def register(w: Wire, name: str, port: int) -> None:
    body = json.dumps({"topicConfigSerializeWrapper": {"topicConfigTable": {f"T-{name}": {
        "topicName": f"T-{name}", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6}},
        "dataVersion": {"counter": 1, "timestamp": 1}}}).encode()  # fmt: skip
    fields = {"brokerName": name, "brokerAddr": f"127.0.0.1:{port}", "clusterName": "C", "haServerAddr": "",
              "brokerId": "0", "bodyCrc32": str(zlib.crc32(body) & 0x7FFFFFFF)}  # fmt: skip
    assert w.call(REGISTER_BROKER, fields, body).code == SUCCESS


def routed(addr: str, topic: str) -> bool:
    with Wire(addr) as w:
        return w.call(GET_ROUTEINFO_BY_TOPIC, {"topic": topic}).code == SUCCESS


def test_silent_broker_expires_and_closed_connection_is_removed():
    ns = NameServer.start("127.0.0.1", 0, scan_interval_ms=100, broker_expiry_ms=1500)
    try:
        with Wire(ns.address) as w:
            register(w, "silent", 1)
            assert routed(ns.address, "T-silent")
            time.sleep(0.8)
            assert routed(ns.address, "T-silent"), "not expired before its time"
            assert wait_until(lambda: not routed(ns.address, "T-silent"), timeout=5), (
                "expired after 1.5 s"
            )
        w = Wire(ns.address)
        register(w, "closer", 2)
        assert routed(ns.address, "T-closer")
        w.close()
        assert wait_until(lambda: not routed(ns.address, "T-closer"), timeout=1), (
            "removed when its connection closed"
        )
        with Wire(ns.address) as w:
            assert w.call(GET_ROUTEINFO_BY_TOPIC, {"topic": "T-closer"}).code == TOPIC_NOT_EXIST
    finally:
        ns.shutdown()


def test_brokers_register_with_all_and_clients_fail_over(tmp_path):
    ns_a = NameServer.start("127.0.0.1", 0)
    ns_b = NameServer.start("127.0.0.1", 0)
    broker = Broker.start(None, {
        "namesrvAddr": f"{ns_a.address};{ns_b.address}", "bindAddress": "127.0.0.1", "brokerIP1": "127.0.0.1",
        "listenPort": "0", "storePathRootDir": str(tmp_path / "store"),
        **HOST_DISK_SETTINGS})  # fmt: skip
    try:
        assert wait_until(
            lambda: ns_a.live_brokers() == [broker.broker_addr] == ns_b.live_brokers()
        )
        with Producer("failover-producer", f"{ns_a.address};{ns_b.address}") as p:
            assert p.send(Message("Failover1", b"one")).queue_offset == 0
            ns_a.shutdown()  # the client's current name server goes away
            r = p.send(Message("Failover2", b"two"))  # a new topic: the route must come from ns_b
            assert r.queue_offset == 0
    finally:
        broker.shutdown()
        ns_b.shutdown()
