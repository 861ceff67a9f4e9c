"""rocketpy's controller with a broker we did not write: rocketmq-rust 1.0's broker in
controller mode (``enableControllerMode``) finds the controller leader (GET_METADATA_INFO),
gets its id (GET_NEXT_BROKER_ID, APPLY_BROKER_ID, REGISTER_BROKER_TO_CONTROLLER), heartbeats
(BROKER_HEARTBEAT) and is elected master of its group; rocketpy's admin shows the
controller's view, and the broker's own epoch cache shows it took the role the controller's
NOTIFY_BROKER_ROLE_CHANGED gave it. Killed, it leaves the controller's live brokers.

Marker ``compat_server`` (``make compat-servers``: a network namespace of its own, because
that broker binds every interface)."""

from __future__ import annotations

from pathlib import Path

import pytest
from servers import free_port, namesrv
from test_peer_ha import BROKER_NAME, RustBroker
from test_rocketmq_rust_servers import BIN

from helpers import controller_replicas, wait_until
from rocketpy._native import Controller, RemotingClient
from rocketpy.admin.controller import ControllerAdmin, ReplicasInfo
from rocketpy.errors import RocketpyError

pytestmark = [pytest.mark.compat_server]


def replicas(controller: str) -> ReplicasInfo | None:
    return controller_replicas(controller, BROKER_NAME)


def test_rocketmq_rust_broker_is_elected_by_a_rocketpy_controller(tmp_path: Path) -> None:
    assert (BIN / "rocketmq-broker-rust").exists(), "build it with `make compat-rocketmq-rust`"
    ns_port, port = free_port(), free_port()
    ns = namesrv(ns_port).start()
    ns_addr = f"127.0.0.1:{ns_port}"
    conf = (
        f"controllerDLegerGroup=group1\ncontrollerDLegerPeers=n0-127.0.0.1:{port}\n"
        f"controllerDLegerSelfId=n0\ncontrollerStorePath={tmp_path / 'controller'}\n"
        "electionWarmUpMillis=0\n"
    )
    controller = Controller.start(conf, {})
    broker: RustBroker | None = None
    try:
        assert wait_until(lambda: controller.is_leader, 10)
        addr = controller.address
        broker = RustBroker(
            tmp_path / "rust", ns_addr, "SLAVE", 1,
            broker={"enableControllerMode": "true", "controllerAddr": f'"{addr}"'},
        )  # fmt: skip

        def elected() -> bool:
            info = replicas(addr)
            return info is not None and info.master_address == broker.addr

        assert wait_until(elected, timeout=60, interval=0.5), broker.tail()
        info = replicas(addr)
        assert info is not None and info.master_epoch and info.master_epoch >= 1
        assert [r.broker_address for r in info.in_sync] == [broker.addr]

        # The broker applied the role the controller sent (NOTIFY_BROKER_ROLE_CHANGED): its
        # epoch cache (GET_BROKER_EPOCH_CACHE, read with rocketpy's admin) holds that epoch.
        def took_the_role() -> bool:
            client = RemotingClient()
            try:
                cache = ControllerAdmin(client).broker_epoch(broker.addr)
            except RocketpyError:
                return False
            finally:
                client.shutdown()
            return [e.epoch for e in cache.epochs] == [info.master_epoch]

        assert wait_until(took_the_role, timeout=30, interval=0.5), broker.tail()
        # Writes are not asked of it: rocketmq-rust 1.0's broker takes them only under a write
        # lease its own controller adds to heartbeat answers ("not part of the Java
        # Controller wire contract", its source says); RocketMQ's controller, and rocketpy's,
        # send none, so that broker fences its store.

        broker.kill()

        def gone() -> bool:
            info = replicas(addr)
            return info is not None and all(not r.alive for r in info.in_sync + info.not_in_sync)

        assert wait_until(gone, timeout=30, interval=0.5)
    finally:
        if broker is not None and broker.server.running:
            broker.kill()
        controller.shutdown()
        ns.stop()
