"""``rocketpy dev --controller``: controller mode on one machine — a name server running a
controller (``enableControllerInNamesrv``) and three brokers of one group that the controller
elects a master among, and replaces it when it stops. Kept apart from :mod:`rocketpy.server`,
whose :class:`~rocketpy.server.DevServer` calls these with ``controller=True``."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rocketpy._native import Broker, NameServer

if TYPE_CHECKING:
    from rocketpy.server import DevServer

#: The group the demo's brokers form.
GROUP = "broker-a"


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def _advertised(host: str) -> str:
    return host if host not in ("0.0.0.0", "::") else "127.0.0.1"


def controller_port(dev: DevServer) -> int:
    """RocketMQ's samples put the controller on the name server's port + 2 (9878)."""
    if dev.namesrv_port:
        return dev.namesrv_port + 2
    return _free_port(_advertised(dev.host))


def start_namesrv(dev: DevServer) -> NameServer:
    """The name server with its embedded controller (store ``<store_dir>-controller``)."""
    store = dev.store_dir.with_name(dev.store_dir.name + "-controller")
    store.mkdir(parents=True, exist_ok=True)
    dev.controller_addr = f"{_advertised(dev.host)}:{controller_port(dev)}"
    config = {
        "enableControllerInNamesrv": "true",
        "controllerDLegerGroup": "dev",
        "controllerDLegerPeers": f"n0-{dev.controller_addr}",
        "controllerDLegerSelfId": "n0",
        "controllerStorePath": str(store),
        "bindAddress": dev.host,
        # A dev restart re-elects at once (the scans run every second by default).
        "electionWarmUpMillis": "2000",
        **dev._metrics_keys(1),
    }
    return NameServer.start(dev.host, dev.namesrv_port, config=config)


def start_replica(dev: DevServer, store: Path, index: int) -> Broker:
    """Broker ``index`` of the group, in controller mode."""
    from rocketpy.server import dev_store_defaults

    assert dev.namesrv is not None and dev.controller_addr is not None
    store.mkdir(parents=True, exist_ok=True)
    port = dev.broker_port + 10 * index if dev.broker_port else 0
    overrides = {
        "namesrvAddr": dev.namesrv.address,
        "brokerName": GROUP,
        "listenPort": str(port),
        "bindAddress": dev.host,
        "brokerIP1": _advertised(dev.host),
        "storePathRootDir": str(store),
        "enableControllerMode": "true",
        "controllerAddr": dev.controller_addr,
        "allAckInSyncStateSet": "true",
        "syncBrokerMetadataPeriod": "1000",
        **dev_store_defaults(store),
    }
    if dev.grpc_port is not None:
        # Every broker serves 5.x clients: its endpoint reaches the group's master of the
        # moment (the proxy forwards over TCP), so a client of a surviving broker's endpoint
        # rides out a failover.
        overrides["grpcServerPort"] = str(dev.grpc_port + 10 * index if dev.grpc_port else 0)
    overrides.update(dev.broker_config)
    return Broker.start(None, overrides)


def master_of(dev: DevServer) -> Broker | None:
    """The replica the name server lists as the group's master now."""
    assert dev.namesrv is not None
    from rocketpy.admin import Admin

    with Admin(dev.namesrv.address) as admin:
        brokers = admin.cluster_info().get("brokerAddrTable", {}).get(GROUP, {})
    addr = brokers.get("brokerAddrs", {}).get("0")
    return next((b for b in dev.replicas.values() if b.broker_addr == addr), None)


def wait_for_master(dev: DevServer, timeout: float = 30.0) -> Broker:
    """The group's master once the name server lists it (the controller elects one of the
    replicas after they registered): what makes the demo ready for clients."""
    deadline = time.monotonic() + timeout
    while (master := master_of(dev)) is None:
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"no master of {GROUP} listed by the name server {timeout:.0f} s after start: "
                f"is the controller at {dev.controller_addr} reachable from the brokers?"
            )
        time.sleep(0.1)
    return master


def in_sync(dev: DevServer) -> int:
    """How many of the group's brokers are in its SyncStateSet now."""
    from rocketpy.admin import Admin

    assert dev.controller_addr is not None
    with Admin(None) as admin:
        info = admin.controller().sync_state_data(dev.controller_addr, [GROUP]).get(GROUP)
    return len(info.in_sync) if info is not None else 0


def stop_master(dev: DevServer, timeout: float = 30.0) -> str:
    """Stops the master (as if it died) once every running replica is in sync with it (a
    replica that is not could not take over without losing messages); returns its address."""
    deadline = time.monotonic() + timeout
    while (master := master_of(dev)) is None or in_sync(dev) < len(dev.replicas):
        if time.monotonic() > deadline:
            raise TimeoutError("the group has no master with every replica in sync")
        time.sleep(0.2)
    store = next(s for s, b in dev.replicas.items() if b is master)
    del dev.replicas[store]
    addr = master.broker_addr
    master.shutdown()
    if dev.broker is master:
        dev.broker = next(iter(dev.replicas.values()), None)
    return addr
