"""The six workloads, the same for every system: what each runs and how it is labelled."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from benches.peers.clients import Client
from benches.peers.procs import produce_many
from benches.peers.results import Result, Throughput
from benches.peers.settings import Settings

#: ``run(client, system, address, settings)``.
Runner = Callable[[Client, str, str, Settings], Result]


@dataclass(frozen=True)
class Workload:
    """One workload.

    Attributes:
        key: its name in the JSON report.
        label: its row in the table, given the settings.
        latency: whether it measures round trips (else throughput).
        run: runs it once against one system's server.
    """

    key: str
    label: Callable[[Settings], str]
    latency: bool
    run: Runner


def _timed_from_ready(run: Callable[[Callable[[], object]], Throughput]) -> Throughput:
    """``run(ready)``'s result, with ``started`` set to when the client called ``ready``
    (connected and warmed up, just before its timing starts: where CPU sampling starts)."""
    started: list[float] = []
    r = run(lambda: started.append(time.monotonic()))
    if started:
        r.started = started[0]
    return r


def _produce(client: Client, system: str, address: str, s: Settings) -> Result:
    client.prepare(address, "peers_a")
    return _timed_from_ready(
        lambda ready: client.produce(address, "peers_a", s.seconds, s.small, s.window, ready)
    )


def _latency(client: Client, system: str, address: str, s: Settings) -> Result:
    client.prepare(address, "peers_b")
    return client.send_latency(address, "peers_b", s.seconds, s.large)


def _consume(client: Client, system: str, address: str, s: Settings) -> Result:
    client.prepare(address, "peers_c")
    client.fill(address, "peers_c", s.backlog, s.small, s.window)
    return client.consume(address, "peers_c", s.backlog, s.fetch)


def _consume_listener(client: Client, system: str, address: str, s: Settings) -> Result:
    if "consume" not in s.workloads:  # else (c) stored the backlog just before, in this server
        client.prepare(address, "peers_c")
        client.fill(address, "peers_c", s.backlog, s.small, s.window)
    return client.consume_listener(address, "peers_c", s.backlog, s.fetch)


def _produce_many(client: Client, system: str, address: str, s: Settings) -> Result:
    client.prepare(address, "peers_d")
    return produce_many(system, address, "peers_d", s.procs, s.seconds, s.small, s.window)


def _bulk(client: Client, system: str, address: str, s: Settings) -> Result:
    client.prepare(address, "peers_e")
    return _timed_from_ready(
        lambda ready: client.bulk(address, "peers_e", s.backlog, s.small, s.window, ready)
    )


WORKLOADS = (
    Workload("produce", lambda s: f"(a) produce {s.small} B, 1 process", False, _produce),
    Workload("latency", lambda s: f"(b) sync send {s.large} B, 1 thread", True, _latency),
    Workload(
        "consume", lambda s: f"(c) consume backlog {s.backlog:,} x {s.small} B", False, _consume
    ),
    Workload(
        "produce_procs",
        lambda s: f"(d) produce {s.small} B, {s.procs} processes",
        False,
        _produce_many,
    ),
    Workload(
        "bulk", lambda s: f"(e) bulk send {s.backlog:,} x {s.small} B, 1 process", False, _bulk
    ),
    Workload(
        "consume_listener",
        lambda s: f"(f) consume backlog {s.backlog:,} x {s.small} B, listener",
        False,
        _consume_listener,
    ),
)
