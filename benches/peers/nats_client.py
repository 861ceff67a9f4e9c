"""NATS JetStream's side (nats-py, asyncio): ``js.publish_async`` with up to ``window``
publishes in flight for throughput, ``await js.publish`` for latency, and a durable push
consumer with a callback for the backlog (see :func:`consume` for why not ``fetch``).

The stream is ``name`` with the one subject ``name``, file storage, default limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, PubAck, StorageType

from benches.peers.pacing import chunks
from benches.peers.results import Latency, Throughput, consumed

#: How long to wait for the last answers (publish_async has no timeout of its own).
DRAIN_TIMEOUT_S = 60.0


async def _connect(address: str) -> NATS:
    return await nats.connect(address, allow_reconnect=False)


def prepare(address: str, name: str) -> None:
    """Creates stream ``name`` (file storage) for subject ``name``."""

    async def run() -> None:
        nc = await _connect(address)
        try:
            await nc.jetstream().add_stream(name=name, subjects=[name], storage=StorageType.FILE)
        finally:
            await nc.close()

    asyncio.run(run())


class _Acks:
    """Counts the outcomes of ``publish_async`` futures."""

    __slots__ = ("done", "failed")

    def __init__(self) -> None:
        self.done = 0
        self.failed = 0

    def __call__(self, future: asyncio.Future[PubAck]) -> None:
        self.done += 1
        if future.cancelled() or future.exception() is not None:
            self.failed += 1


async def _pump(
    nc: NATS, name: str, body: bytes, window: int, seconds: float | None, count: int | None
) -> Throughput:
    """``publish_async`` in a loop (its semaphore keeps ``window`` in flight) until ``seconds``
    pass or ``count`` are sent; then waits for every acknowledgement."""
    js = nc.jetstream(publish_async_max_pending=window)
    acks = _Acks()
    publish = js.publish_async
    sent = 0
    started = time.perf_counter()
    for n in chunks(seconds, count, 256):
        for _ in range(n):
            future = await publish(name, body)
            future.add_done_callback(acks)
            sent += 1
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(js.publish_async_completed(), DRAIN_TIMEOUT_S)
    elapsed = time.perf_counter() - started
    lost = sent - acks.done
    return Throughput(sent - acks.failed - lost, elapsed, acks.failed + lost)


def _warm_pump(
    address: str,
    name: str,
    size: int,
    window: int,
    seconds: float | None,
    count: int | None,
    ready: Callable[[], object] | None,
) -> Throughput:
    """:func:`_pump` on a connection warmed up by one publish; ``ready`` called just before."""

    async def run() -> Throughput:
        nc = await _connect(address)
        try:
            await nc.jetstream().publish(name, b"warm-up")
            if ready is not None:
                ready()
            return await _pump(nc, name, b"x" * size, window, seconds, count)
        finally:
            await nc.close()

    return asyncio.run(run())


def produce(
    address: str,
    name: str,
    seconds: float,
    size: int,
    window: int,
    ready: Callable[[], object] | None = None,
) -> Throughput:
    """See :meth:`benches.peers.clients.Client.produce`."""
    return _warm_pump(address, name, size, window, seconds, None, ready)


def send_latency(address: str, name: str, seconds: float, size: int) -> Latency:
    """See :meth:`benches.peers.clients.Client.send_latency`."""

    async def run() -> Latency:
        nc = await _connect(address)
        js = nc.jetstream()
        body = b"x" * size
        samples: list[float] = []
        errors = 0
        try:
            await js.publish(name, b"warm-up")
            clock = time.perf_counter
            started = clock()
            deadline = started + seconds
            now = started
            while now < deadline:
                try:
                    await js.publish(name, body)
                except nats.errors.Error:
                    errors += 1
                t = clock()
                samples.append(t - now)
                now = t
            return Latency.of(samples, now - started, errors)
        finally:
            await nc.close()

    return asyncio.run(run())


def bulk(
    address: str,
    name: str,
    count: int,
    size: int,
    window: int,
    ready: Callable[[], object] | None = None,
) -> Throughput:
    """See :meth:`benches.peers.clients.Client.bulk`: nats-py has no batch publish; its
    fastest way is ``publish_async`` as in (a)."""
    return _warm_pump(address, name, size, window, None, count, ready)


def fill(address: str, name: str, count: int, size: int, window: int) -> None:
    """See :meth:`benches.peers.clients.Client.fill`."""

    async def run() -> Throughput:
        nc = await _connect(address)
        try:
            return await _pump(nc, name, b"x" * size, window, None, count)
        finally:
            await nc.close()

    result = asyncio.run(run())
    if result.errors:
        raise RuntimeError(f"nats: {result.errors} messages of the backlog failed")


def consume(address: str, name: str, count: int, fetch: int) -> Throughput:
    """See :meth:`benches.peers.clients.Client.consume`: a durable push consumer from the
    first message with a callback, acknowledged cumulatively (``AckPolicy.ALL``: one ack
    every ``fetch`` messages, at most ``10 * fetch`` unacknowledged).

    nats-py's pull consumer (``fetch``) read 12-17 k msg/s here with batches of 1,000-10,000:
    it awaits each message of a batch with its own timeout. The push consumer's callback is
    nats-py's fastest way in (several times that), so it stands for NATS."""
    return _read(address, name, count, fetch, f"{name}_reader")


def consume_listener(address: str, name: str, count: int, fetch: int) -> Throughput:
    """See :meth:`benches.peers.clients.Client.consume_listener`: :func:`consume`'s push
    consumer (already callbacks) under a durable name of its own, from the first message."""
    return _read(address, name, count, fetch, f"{name}_listener")


def _read(address: str, name: str, count: int, fetch: int, durable: str) -> Throughput:
    """Reads ``count`` messages of stream ``name`` through durable push consumer ``durable``."""

    async def run() -> Throughput:
        nc = await _connect(address)
        got = head = 0
        first = 0.0
        done = asyncio.Event()

        async def on_message(msg: Msg) -> None:
            nonlocal got, head, first
            if not got:
                first, head = time.perf_counter(), 1
            got += 1
            if got % fetch == 0 or got == count:
                await msg.ack()
            if got >= count:
                done.set()

        try:
            started = time.perf_counter()
            sub = await nc.jetstream().subscribe(
                name,
                durable=durable,
                cb=on_message,
                manual_ack=True,
                config=ConsumerConfig(
                    deliver_policy=DeliverPolicy.ALL,
                    ack_policy=AckPolicy.ALL,
                    max_ack_pending=10 * fetch,
                ),
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), max(60.0, count / 1000))
            last = time.perf_counter()
            await sub.unsubscribe()
            return consumed(count, got, head, started, first, last)
        finally:
            await nc.close()

    return asyncio.run(run())
