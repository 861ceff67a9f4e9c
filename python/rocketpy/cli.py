"""The ``rocketpy`` command: ``namesrv``, ``broker``, ``controller``, ``dev`` (a name server
and a broker in one process) and ``bench`` (producer and consumer load generators)."""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rocketpy import __version__, bench
from rocketpy._native import Broker, Controller, NameServer, init_logging
from rocketpy.errors import RocketpyError
from rocketpy.server import DevServer, default_dev_store


def _stop_signal() -> threading.Event:
    """An event set by SIGINT or SIGTERM. Installed before a server starts, so a signal
    sent as soon as it says it is ready still stops it cleanly."""
    stop = threading.Event()

    def handler(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    return stop


def _wait_for(stop: threading.Event) -> None:
    while not stop.wait(0.5):
        pass


def _say(text: str) -> None:
    print(text, flush=True)


def _overrides(pairs: Sequence[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"rocketpy: --set expects key=value, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def _raise_open_file_limit() -> None:
    """Lets a broker use as many descriptors as the hard limit allows (RocketMQ's start
    scripts run ``ulimit -n``): each client connection takes one, and the store maps a file per
    consume queue."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def cmd_namesrv(args: argparse.Namespace) -> None:
    stop = _stop_signal()
    text = Path(args.config).read_text() if args.config else None
    server = NameServer.start(args.host, args.port, config=_overrides(args.set), config_text=text)
    _say(f"rocketpy name server listening on {server.address}")
    if server.metrics_address:
        _say(f"metrics: http://{server.metrics_address}/metrics")
    if server.controller_address:
        _say(f"controller (enableControllerInNamesrv) listening on {server.controller_address}")
    _wait_for(stop)
    server.shutdown()
    _say("rocketpy name server stopped")


def cmd_broker(args: argparse.Namespace) -> None:
    text = Path(args.config).read_text() if args.config else None
    overrides = _overrides(args.set)
    if args.namesrv:
        overrides["namesrvAddr"] = args.namesrv
    if args.port is not None:
        overrides["listenPort"] = str(args.port)
    if args.store_dir:
        overrides["storePathRootDir"] = args.store_dir
    if args.host:
        overrides["bindAddress"] = args.host
    if args.print_config:
        # RocketMQ's `mqbroker -p`: the effective configuration, then exit.
        for key, value, doc in Broker.effective_config(text, overrides):
            _say(f"# {doc}\n{key}={value}")
        return
    stop = _stop_signal()
    _raise_open_file_limit()
    broker = Broker.start(text, overrides)
    _say(
        f"rocketpy broker listening on {broker.address} as {broker.broker_addr} (store: {broker.store_path})"
    )
    if broker.metrics_address:
        _say(f"metrics: http://{broker.metrics_address}/metrics")
    if broker.grpc_address:
        _say(f"gRPC endpoint for RocketMQ 5.x clients: {broker.grpc_address}")
    _wait_for(stop)
    broker.shutdown()
    _say("rocketpy broker stopped")


def cmd_controller(args: argparse.Namespace) -> None:
    text = Path(args.config).read_text() if args.config else None
    overrides = _overrides(args.set)
    if args.print_config:
        # RocketMQ's `mqcontroller -p`: the effective configuration, then exit.
        for key, value, doc in Controller.effective_config(text, overrides):
            _say(f"# {doc}\n{key}={value}")
        return
    stop = _stop_signal()
    controller = Controller.start(text, overrides)
    _say(f"rocketpy controller {controller.self_id} listening on {controller.address}")
    _wait_for(stop)
    controller.shutdown()
    _say("rocketpy controller stopped")


def cmd_dev(args: argparse.Namespace) -> None:
    if args.console_port is not None:
        _require_console()  # before the servers start: nothing to stop on the way out
    stop = _stop_signal()
    _raise_open_file_limit()
    dev = DevServer(
        host=args.host,
        namesrv_port=args.namesrv_port,
        broker_port=args.port,
        store_dir=args.store_dir or default_dev_store(),
        broker_config=_overrides(args.set),
        ha=args.ha,
        metrics_port=args.metrics_port,
        grpc_port=args.grpc_port,
        controller=args.controller,
    ).start()
    slave = f" slave={dev.slave_addr}" if args.ha else ""
    if args.controller:
        replicas = ",".join(b.broker_addr for b in dev.replicas.values())
        slave = f" replicas={replicas} controller={dev.controller_addr}"
    _say(
        f"rocketpy dev ready: namesrv={dev.namesrv_addr} broker={dev.broker_addr}{slave} store={dev.store_dir}"
    )
    for url in dev.metrics_urls:
        _say(f"metrics: {url}")
    if dev.grpc_addresses:
        _say(f"gRPC endpoint for RocketMQ 5.x clients: {';'.join(dev.grpc_addresses)}")
    console = None
    if args.console_port is not None:
        console = _start_console(
            dev.namesrv_addr, args.host, args.console_port, controller=dev.controller_addr
        )
        _say(f"console: {console.url}")
    _wait_for(stop)
    if console is not None:
        console.stop()
    dev.stop()
    _say("rocketpy dev stopped")


def _require_console() -> None:
    """Exits with the one-line install hint when the console's extra is missing."""
    from rocketpy.console import missing_extra

    problem = missing_extra()
    if problem is not None:
        raise SystemExit(f"rocketpy: {problem}")


def _start_console(
    namesrv: str,
    host: str,
    port: int,
    allowed_hosts: list[str] | None = None,
    controller: str | None = None,
) -> Any:
    _require_console()
    from rocketpy.console import ConsoleServer

    if host not in ("127.0.0.1", "localhost", "::1"):
        _say(f"warning: the console has no login and changes the cluster; it listens on {host}")
    return ConsoleServer(namesrv, host, port, allowed_hosts or (), controller).start()


def cmd_console(args: argparse.Namespace) -> None:
    stop = _stop_signal()
    console = _start_console(args.namesrv, args.host, args.port, args.allowed_host, args.controller)
    _say(f"rocketpy console on {console.url} (name server {args.namesrv})")
    _wait_for(stop)
    console.stop()


def parser() -> argparse.ArgumentParser:
    """The argument parser."""
    p = argparse.ArgumentParser(
        prog="rocketpy", description="RocketMQ-compatible messaging for Python."
    )
    p.add_argument("--version", action="version", version=f"rocketpy {__version__}")
    p.add_argument(
        "--log-level", default="info", help="error, warn, info, debug or trace (RUST_LOG wins)"
    )
    sub = p.add_subparsers(dest="command", required=True)

    ns = sub.add_parser("namesrv", help="run a name server")
    ns.add_argument("--host", default="0.0.0.0")
    ns.add_argument("--port", type=int, default=9876)
    ns.add_argument(
        "-c",
        "--config",
        help="namesrv.conf (RocketMQ key names; with enableControllerInNamesrv=true, "
        "the controller's keys too)",
    )
    ns.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a name server key, e.g. metricsExporterType=PROM",
    )
    ns.set_defaults(func=cmd_namesrv)

    br = sub.add_parser("broker", help="run a broker")
    br.add_argument("-n", "--namesrv", help="name servers, host:port;host:port")
    br.add_argument("-c", "--config", help="broker.conf (RocketMQ key names)")
    br.add_argument("--port", type=int, help="listenPort (default 10911)")
    br.add_argument("--host", help="interface to bind (default all)")
    br.add_argument("--store-dir", help="storePathRootDir (default ~/store)")
    br.add_argument(
        "-p",
        "--print-config",
        action="store_true",
        help="print the effective configuration (every key, broker.conf syntax) and exit",
    )
    br.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="any broker.conf key"
    )
    br.set_defaults(func=cmd_broker)

    ctl = sub.add_parser("controller", help="run a controller (controller mode's failover)")
    ctl.add_argument(
        "-c",
        "--config",
        help="controller.conf (controllerDLegerGroup, controllerDLegerPeers, "
        "controllerDLegerSelfId, controllerStorePath, ...)",
    )
    ctl.add_argument(
        "-p",
        "--print-config",
        action="store_true",
        help="print the effective configuration (every key) and exit",
    )
    ctl.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="any controller key"
    )
    ctl.set_defaults(func=cmd_controller)

    dev = sub.add_parser("dev", help="run a name server and a broker in one process")
    dev.add_argument("--host", default="127.0.0.1")
    dev.add_argument("--namesrv-port", type=int, default=9876)
    dev.add_argument("--port", type=int, default=10911, help="broker port")
    dev.add_argument("--store-dir", help=f"store root (default {default_dev_store()})")
    dev.add_argument(
        "--ha",
        action="store_true",
        help="also run a slave (port + 2, store <store-dir>-slave); the broker is a SYNC_MASTER",
    )
    dev.add_argument(
        "--controller",
        action="store_true",
        help="controller mode: the name server runs a controller and three brokers of "
        "broker-a (ports +0, +10, +20) fail over automatically",
    )
    dev.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve Prometheus metrics: broker on PORT, name server on PORT+1 (0: free ports)",
    )
    dev.add_argument(
        "--console-port", type=int, metavar="PORT", help="serve the web console on PORT too"
    )
    dev.add_argument(
        "--grpc-port",
        type=int,
        metavar="PORT",
        help="serve RocketMQ 5.x clients (gRPC) on PORT too (0: a free port; with "
        "--controller every broker does, on PORT, PORT+10 and PORT+20)",
    )
    dev.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="any broker.conf key"
    )
    dev.set_defaults(func=cmd_dev)

    con = sub.add_parser("console", help="serve the web console of a cluster")
    con.add_argument("-n", "--namesrv", default=os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876"))
    con.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    con.add_argument("--port", type=int, default=8080)
    con.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a name the console is reached by (besides localhost and IP addresses); "
        "requests under other names are refused",
    )
    con.add_argument(
        "--controller",
        metavar="ADDR",
        help="a controller, host:port (controller mode): the cluster page shows each broker "
        "group's master, epochs and in-sync replicas",
    )
    con.set_defaults(func=cmd_console)

    bench.add_parser(sub)
    sub.add_parser(
        "admin",
        help="mqadmin's commands (rocketpy admin -h lists them)",
        add_help=False,
        prefix_chars="\0",
    ).add_argument("args", nargs=argparse.REMAINDER)
    return p


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``rocketpy`` command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["admin"]:
        from rocketpy import mqadmin

        mqadmin.main(argv[1:], prog="rocketpy admin")
        return
    args = parser().parse_args(argv)
    init_logging(args.log_level)
    try:
        code = args.func(args)
    except RocketpyError as e:
        print(f"rocketpy: {e}", file=sys.stderr)
        raise SystemExit(1) from e
    except OSError as e:
        print(f"rocketpy: {e}", file=sys.stderr)
        raise SystemExit(1) from e
    if code:
        raise SystemExit(code)


if __name__ == "__main__":
    main()
