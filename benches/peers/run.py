"""The benchmark's rounds: in each, every system in turn (the order rotates from round to
round) gets a fresh server, runs the six workloads, and is stopped."""

from __future__ import annotations

import datetime as dt
import shutil
import signal
import sys
import time
from types import FrameType

from benches.peers.clients import load
from benches.peers.cpu import CpuMeter
from benches.peers.machine import machine, versions
from benches.peers.report import Record, table, write_json
from benches.peers.results import Latency, Result, Throughput
from benches.peers.servers import SERVERS
from benches.peers.settings import Settings
from benches.peers.workloads import WORKLOADS

#: The programs each system's server needs on the PATH.
PROGRAMS = {"nats": "nats-server", "redis": "redis-server"}


def _say(text: str) -> None:
    print(text, flush=True)


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    """SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt where the main thread is, so every
    ``finally`` stops its server. Also for SIGINT: ``asyncio.run``'s own handler cancels the
    running task instead, and Python 3.11's ``wait_for`` loses a cancellation that meets an
    answer (nats-py awaits every request through it)."""
    raise KeyboardInterrupt(signal.Signals(signum).name)


def order_of(systems: tuple[str, ...], round_no: int) -> list[str]:
    """The systems in round ``round_no``'s order: rotated by one each round, so each runs
    first (and last) as often as the others over ``len(systems)`` rounds."""
    k = round_no % len(systems)
    return [*systems[k:], *systems[:k]]


def _brief(result: Result) -> str:
    if isinstance(result, Latency):
        return (
            f"p50 {result.p50_ms:.3f} ms, p99 {result.p99_ms:.3f} ms, "
            f"p99.9 {result.p999_ms:.3f} ms, {result.rate:,.0f}/s"
        )
    failed = f" ({result.errors} failed)" if result.errors else ""
    extra = result.extra or {}
    cpu = (
        f"; CPU/msg server {extra['server_us_per_msg']:.1f} us, "
        f"rest {extra['others_us_per_msg']:.1f} us"
        if "server_us_per_msg" in extra
        else ""
    )
    return f"{result.rate:,.0f} msg/s{failed}{cpu}"


def _run_system(record: Record, round_no: int, system: str) -> None:
    """One system's turn in a round: its server, the six workloads, the server stopped."""
    s = record.settings
    client = load(system)
    server = SERVERS[system](s)
    try:
        server.start()
        for w in WORKLOADS:
            if w.key not in s.workloads:
                continue
            started = time.monotonic()
            try:
                with CpuMeter(server.pid) as meter:
                    result = w.run(client, system, server.address, s)
                if isinstance(result, Throughput) and result.started is not None:
                    cpu = meter.per_message(result.started, result.seconds, result.messages)
                    result.extra = {**(result.extra or {}), **cpu}
            except Exception as e:
                record.add(round_no, system, w.key, f"{type(e).__name__}: {e}")
                _say(f"  {system:8} {w.label(s)}: FAILED {type(e).__name__}: {e}")
                continue
            record.add(round_no, system, w.key, result)
            took = time.monotonic() - started
            _say(f"  {system:8} {w.label(s)}: {_brief(result)}  [{took:.0f} s]")
    except Exception as e:
        record.add(round_no, system, "server", f"{type(e).__name__}: {e}")
        _say(f"  {system:8} FAILED {type(e).__name__}: {e}")
    finally:
        server.stop()


def main() -> int:
    """Runs the rounds and reports; returns the exit code (130 when interrupted)."""
    settings = Settings.from_env()
    for system in settings.systems:
        load(system)
        program = PROGRAMS.get(system)
        if program and shutil.which(program) is None:
            raise SystemExit(f"{program} is not installed (`make bench-peers` installs it)")
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _exit_on_signal)
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    host = machine()
    _say(
        f"bench-peers: {settings.rounds} round(s) of {', '.join(settings.systems)}; "
        f"{settings.seconds:g} s per timed run, backlog {settings.backlog:,}, "
        f"{settings.procs} producer processes; {host['nproc']} cores ({host['cpu_model']}), "
        f"{host['kernel']}, data on {host['data_dir']} ({host['data_dir_fs']})"
    )
    record = Record(settings)
    interrupted = False
    try:
        for r in range(settings.rounds):
            order = order_of(settings.systems, r)
            record.rounds.append({"round": r + 1, "order": order})
            _say(f"round {r + 1}/{settings.rounds}: {' -> '.join(order)}")
            for system in order:
                _run_system(record, r, system)
    except KeyboardInterrupt:
        interrupted = True
        _say("interrupted: the report covers the runs finished so far")
    _say("")
    _say(table(record))
    write_json(record, started, host, versions(settings.systems))
    _say(f"\nEvery round's numbers: {settings.out}")
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
