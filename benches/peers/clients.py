"""The face every system's client module shows the workloads, and how to load one.

Each module (``rocketpy_client``, ``nats_client``, ``redis_client``) takes the same calls with
the system's fastest idiomatic client path underneath. ``name`` is a topic, a stream and a
subject, or a key: one word that all three accept.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Protocol, cast

from benches.peers.results import Latency, Throughput


class Client(Protocol):
    """What a system's client module provides."""

    def prepare(self, address: str, name: str) -> None:
        """Creates what ``name`` needs on the server (topic, stream), empty."""

    def produce(
        self,
        address: str,
        name: str,
        seconds: float,
        size: int,
        window: int,
        ready: Callable[[], object] | None = None,
    ) -> Throughput:
        """Sends ``size``-byte messages as fast as the client goes for ``seconds``, at most
        ``window`` unanswered; counts them until the last answer. ``ready`` is called once
        connected and warmed up, just before timing starts (a barrier between processes)."""

    def bulk(
        self,
        address: str,
        name: str,
        count: int,
        size: int,
        window: int,
        ready: Callable[[], object] | None = None,
    ) -> Throughput:
        """Sends ``count`` messages of ``size`` bytes, made before timing, through the
        client's fastest path for many messages at once; timed from the first send (``ready``
        is called just before) to the last answer."""

    def send_latency(self, address: str, name: str, seconds: float, size: int) -> Latency:
        """Sends one message at a time, each waiting for its answer, for ``seconds``."""

    def fill(self, address: str, name: str, count: int, size: int, window: int) -> None:
        """Stores ``count`` messages (untimed), the way :meth:`produce` sends."""

    def consume(self, address: str, name: str, count: int, fetch: int) -> Throughput:
        """Reads the first ``count`` messages of ``name`` as fast as the client goes, ``fetch``
        a request where the client asks for batches; timed from the first batch received to
        the last message (see :func:`benches.peers.results.consumed`)."""

    def consume_listener(self, address: str, name: str, count: int, fetch: int) -> Throughput:
        """:meth:`consume` through the client's callback API (a listener handed batches or
        messages), as applications that subscribe are written; reads the backlog :meth:`fill`
        stored (again, when :meth:`consume` read it before), timed the same way."""


def load(system: str) -> Client:
    """The client module of ``system`` (imported now: a process imports only its own)."""
    try:
        module = importlib.import_module(f"benches.peers.{system}_client")
    except ImportError as e:
        raise SystemExit(
            f"{system}: {e}. `make bench-peers` installs the peers' client libraries "
            "(nats-py, redis, hiredis) into the virtual environment."
        ) from e
    return cast(Client, module)
