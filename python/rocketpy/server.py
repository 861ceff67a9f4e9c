"""Start and stop rocketpy's servers from Python: a name server, a broker, a controller
(controller mode), or a name server and a broker in one process (the embedded development
setup). They serve from Rust; Python only launches them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from rocketpy._native import Broker, Controller, NameServer

__all__ = [
    "DEV_STORE_DEFAULTS",
    "Broker",
    "Controller",
    "DevServer",
    "NameServer",
    "default_dev_store",
    "dev_store_defaults",
]


#: Store sizes of ``rocketpy dev`` (and :class:`DevServer`), for a laptop rather than a
#: broker's own disk: RocketMQ's defaults (1 GiB CommitLog files, a 5,000,000-slot index of
#: 420 MB) are kept by ``rocketpy broker``. Files are sparse either way; these bound how far a
#: small store's disk use can run ahead of its data. A store created with other sizes keeps
#: them (see :func:`dev_store_defaults`); ``--set`` / ``broker_config`` override any of them.
DEV_STORE_DEFAULTS: dict[str, str] = {
    "mapedFileSizeCommitLog": str(64 << 20),
    "maxHashSlotNum": "500000",
    "maxIndexNum": "2000000",
}


def dev_store_defaults(store_dir: Path) -> dict[str, str]:
    """:data:`DEV_STORE_DEFAULTS`, unless ``store_dir`` already holds a store made with other
    sizes (by ``rocketpy broker``, or an older ``rocketpy dev``): its files must be opened with
    the sizes they were written with, so then RocketMQ's defaults apply."""
    commit_log = store_dir / "commitlog"
    files = commit_log.iterdir() if commit_log.is_dir() else ()
    sizes = {f.stat().st_size for f in files if len(f.name) == 20 and f.name.isdigit()}
    if sizes and sizes != {int(DEV_STORE_DEFAULTS["mapedFileSizeCommitLog"])}:
        return {}
    return dict(DEV_STORE_DEFAULTS)


def default_dev_store() -> Path:
    """Where ``rocketpy dev`` keeps its store unless told otherwise."""
    return Path(os.environ.get("ROCKETPY_HOME", Path.home() / ".rocketpy")) / "dev-store"


class DevServer:
    """A name server and a broker in this process, with a local store.

    Args:
        host: interface to listen on (and address to advertise).
        namesrv_port: name server port (0 = any free port).
        broker_port: broker port (0 = any free port).
        store_dir: the store root (created if missing).
        broker_config: more broker.conf keys (RocketMQ names), e.g. ``{"flushDiskType": ...}``;
            they override :data:`DEV_STORE_DEFAULTS`.
        ha: also start a slave (``brokerId=1``, ``brokerRole=SLAVE``, store beside the
            master's in ``<store_dir>-slave``, port ``broker_port + 2``: the master's HA
            listener takes ``broker_port + 1``); the master is then a ``SYNC_MASTER`` unless
            ``broker_config`` names another ``brokerRole``.
        metrics_port: serve Prometheus metrics (``metricsExporterType=PROM``): the broker's
            on this port, the name server's on the next, the slave's on the one after (0 =
            free ports for all). ``None`` (the default) exports nothing.
        grpc_port: also serve RocketMQ 5.x clients (gRPC, ``grpcServerPort``) on this port
            (0 = a free port). ``None`` (the default): 4.x clients only. With ``controller``
            each broker serves them, on this port, ``+ 10`` and ``+ 20``
            (:attr:`grpc_addresses`).
        controller: controller mode's local demo instead of a single broker: the name server
            runs a controller (``enableControllerInNamesrv``, on ``namesrv_port + 2`` as in
            RocketMQ's samples, or a free port), and three brokers of ``broker-a`` (ports
            ``broker_port``, ``+ 10``, ``+ 20``; stores ``<store_dir>-n0``, ``-n1``, ``-n2``)
            let it elect their master and replace it when it stops
            (:meth:`stop_master` shows that); :meth:`start` returns once the name server
            lists the elected master.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        namesrv_port: int = 9876,
        broker_port: int = 10911,
        store_dir: str | os.PathLike[str] | None = None,
        broker_config: Mapping[str, str] | None = None,
        ha: bool = False,
        metrics_port: int | None = None,
        grpc_port: int | None = None,
        controller: bool = False,
    ) -> None:
        self.host = host
        self.namesrv_port = namesrv_port
        self.broker_port = broker_port
        self.store_dir = Path(store_dir) if store_dir else default_dev_store()
        self.broker_config = dict(broker_config or {})
        self.namesrv: NameServer | None = None
        self.broker: Broker | None = None
        self.ha = ha
        self.slave: Broker | None = None
        self.metrics_port = metrics_port
        self.grpc_port = grpc_port
        self.controller = controller
        #: Controller mode's brokers (with ``controller``), by store directory.
        self.replicas: dict[Path, Broker] = {}
        #: ``host:port`` of the controller (with ``controller``).
        self.controller_addr: str | None = None

    def _metrics_keys(self, offset: int) -> dict[str, str]:
        """The exporter keys of the server ``offset`` ports after :attr:`metrics_port`."""
        if self.metrics_port is None:
            return {}
        port = self.metrics_port + offset if self.metrics_port else 0
        return {"metricsExporterType": "PROM", "metricsPromExporterPort": str(port)}

    def start(self) -> DevServer:
        """Starts both servers; returns self."""
        if self.controller:
            return self._start_controller_mode()
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self.namesrv = NameServer.start(self.host, self.namesrv_port, config=self._metrics_keys(1))
        overrides = {
            "namesrvAddr": self.namesrv.address,
            "listenPort": str(self.broker_port),
            "bindAddress": self.host,
            "brokerIP1": self.host if self.host not in ("0.0.0.0", "::") else "127.0.0.1",
            "storePathRootDir": str(self.store_dir),
            **dev_store_defaults(self.store_dir),
            **self._metrics_keys(0),
        }
        if self.grpc_port is not None:
            overrides["grpcServerPort"] = str(self.grpc_port)
        if self.ha:
            overrides["brokerRole"] = "SYNC_MASTER"
        overrides.update(self.broker_config)
        try:
            self.broker = Broker.start(None, overrides)
            if self.ha:
                self.slave = Broker.start(None, self._slave_overrides(overrides))
        except BaseException:
            self.stop()
            raise
        return self

    def _start_controller_mode(self) -> DevServer:
        from rocketpy import _controller_demo

        try:
            self.namesrv = _controller_demo.start_namesrv(self)
            for i in range(3):
                store = self.store_dir.with_name(f"{self.store_dir.name}-n{i}")
                self.replicas[store] = _controller_demo.start_replica(self, store, i)
            # Ready when clients can send: the name server lists the elected master.
            self.broker = _controller_demo.wait_for_master(self)
        except BaseException:
            self.stop()
            raise
        return self

    def stop_master(self) -> str:
        """Controller mode: stops the broker that is master now (as if it died) and returns
        its address; the controller elects one of the others."""
        from rocketpy import _controller_demo

        return _controller_demo.stop_master(self)

    @property
    def slave_store_dir(self) -> Path:
        """The slave's store root (with ``ha``)."""
        return self.store_dir.with_name(self.store_dir.name + "-slave")

    def _slave_overrides(self, master: Mapping[str, str]) -> dict[str, str]:
        slave_dir = self.slave_store_dir
        slave_dir.mkdir(parents=True, exist_ok=True)
        out = {
            k: v
            for k, v in master.items()
            if k not in ("brokerRole", "haListenPort", "grpcServerPort")
        }
        out.update(
            {
                "brokerId": "1",
                "brokerRole": "SLAVE",
                "listenPort": str(self.broker_port + 2 if self.broker_port else 0),
                "storePathRootDir": str(slave_dir),
                **dev_store_defaults(slave_dir),
                **self._metrics_keys(2),
            }
        )
        return out

    @property
    def namesrv_addr(self) -> str:
        """``host:port`` of the name server."""
        assert self.namesrv is not None, "not started"
        return self.namesrv.address

    @property
    def broker_addr(self) -> str:
        """``host:port`` clients reach the broker at."""
        assert self.broker is not None, "not started"
        return self.broker.broker_addr

    @property
    def grpc_address(self) -> str | None:
        """``host:port`` of the gRPC endpoint for RocketMQ 5.x clients (with ``grpc_port``)."""
        return self.broker.grpc_address if self.broker is not None else None

    @property
    def grpc_addresses(self) -> list[str]:
        """Every running broker's gRPC endpoint (with ``grpc_port``; in controller mode one
        per broker, each reaching the group's master of the moment)."""
        brokers = list(self.replicas.values()) if self.controller else [self.broker]
        return [b.grpc_address for b in brokers if b is not None and b.grpc_address]

    @property
    def metrics_urls(self) -> list[str]:
        """The scrape URLs of the running servers (empty without ``metrics_port``)."""
        servers = (self.broker, self.namesrv, self.slave)
        return [
            f"http://{s.metrics_address}/metrics"
            for s in servers
            if s is not None and s.metrics_address
        ]

    @property
    def slave_addr(self) -> str:
        """``host:port`` of the slave (with ``ha``)."""
        assert self.slave is not None, "no slave"
        return self.slave.broker_addr

    def stop(self) -> None:
        """Stops the slave and the broker (flushing their stores), then the name server."""
        slave, self.slave = self.slave, None
        broker, self.broker = self.broker, None
        namesrv, self.namesrv = self.namesrv, None
        replicas, self.replicas = list(self.replicas.values()), {}
        try:
            for replica in replicas:
                replica.shutdown()
            if slave is not None:
                slave.shutdown()
            if broker is not None and broker not in replicas:
                broker.shutdown()
        finally:
            if namesrv is not None:
                namesrv.shutdown()

    def __enter__(self) -> DevServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
