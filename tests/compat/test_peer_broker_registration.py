"""rocketpy's name server with a broker it did not write: rocketmq-rust 1.0's broker registers
with it every 10 seconds (the shortest period it allows). The name server reads a registration's topic table only when the data
version changed, so this checks both paths against that broker's own bodies: a new topic
reaches the routes, and later unchanged registrations keep the topics and the broker alive.
With the broker's ``forceRegister=false`` the periods are QUERY_DATA_VERSION requests instead,
which must keep the broker alive past the name server's expiry on their own.

Marker ``compat_server`` (``make compat-servers``: a network namespace of its own, because
that broker binds every interface).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from servers import ServerProcess, free_port
from test_rocketmq_rust_servers import BIN

from helpers import wait_until
from rocketpy import Message, Producer
from rocketpy._native import NameServer
from rocketpy.admin import Admin

pytestmark = [pytest.mark.compat_server]


@pytest.mark.parametrize("force_register", [True, False])
def test_peer_broker_registers_topics_and_stays_alive(tmp_path: Path, force_register: bool):
    assert (BIN / "rocketmq-broker-rust").exists(), "build it with `make compat-rocketmq-rust`"
    # Brokers silent for 12 s expire: the 14 s wait below outlives that only if the broker's
    # periodic registrations (or queries), 10 s apart, are understood.
    ns = NameServer.start("127.0.0.1", 0, scan_interval_ms=200, broker_expiry_ms=12_000)
    addr = ns.address
    broker_port, ha_port = free_port(3), free_port()
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "\n".join(
            [
                "brokerClusterName=DefaultCluster",
                "brokerName=rust-broker",
                "brokerId=0",
                "brokerIP1=127.0.0.1",
                "brokerIP2=127.0.0.1",
                f"listenPort={broker_port}",
                f"haListenPort={ha_port}",
                f"namesrvAddr={addr}",
                f"storePathRootDir={tmp_path / 'store'}",
                "registerNameServerPeriod=1000",
                f"forceRegister={str(force_register).lower()}",
            ]
        )
    )
    (tmp_path / "conf").mkdir()
    # No ready line: it is ready once it registered, which is what this test checks.
    broker = ServerProcess(
        [BIN / "rocketmq-broker-rust", "-c", conf],
        None,
        env={"ROCKETMQ_HOME": str(tmp_path)},
        log=tmp_path / "broker.log",
    ).start()
    try:
        with Admin(addr) as admin:

            def registered() -> bool:
                try:
                    return bool(admin.master_addrs())
                except Exception:
                    return False

            assert wait_until(registered, timeout=60), broker.tail(3000)
            # A new topic changes the broker's data version: its next registration carries it.
            admin.create_topic("PeerRegistered", queues=4)
            assert wait_until(lambda: admin.topic_route("PeerRegistered") is not None, timeout=30)
            # Several unchanged registrations later, the topic and the broker are still there.
            time.sleep(14)
            route = admin.topic_route("PeerRegistered")
            assert route is not None
            assert [q.write_queue_nums for q in route.queue_datas] == [4]
            assert admin.master_addrs() == [f"127.0.0.1:{broker_port}"]
        with Producer("peer-reg-p", addr) as p:
            assert p.send(Message("PeerRegistered", b"x")).msg_id
    finally:
        broker.stop()
        ns.shutdown()
