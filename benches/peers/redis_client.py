"""Redis Streams' side (redis-py with hiredis): pipelines of ``window`` XADDs for
throughput, one XADD at a time for latency, and XREAD with a large COUNT for the backlog.

Each entry has one field, ``b``, holding the body.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import redis

from benches.peers.pacing import chunks
from benches.peers.results import Latency, Throughput, consumed

FIELD = b"b"


def _connect(address: str) -> redis.Redis:
    host, _, port = address.rpartition(":")
    return redis.Redis(host=host, port=int(port))


def prepare(address: str, name: str) -> None:
    """Removes any stream ``name`` (XADD creates it)."""
    with _connect(address) as r:
        r.delete(name)


def _pump(
    r: redis.Redis, name: str, body: bytes, window: int, seconds: float | None, count: int | None
) -> Throughput:
    """Pipelines of ``window`` XADDs, each sent whole and answered whole, until ``seconds``
    pass or ``count`` are stored."""
    ok = failed = 0
    fields = {FIELD: body}
    started = time.perf_counter()
    pipe = r.pipeline(transaction=False)
    for n in chunks(seconds, count, window):
        for _ in range(n):
            pipe.xadd(name, fields)  # type: ignore[arg-type]
        answers = pipe.execute(raise_on_error=False)
        bad = sum(1 for a in answers if isinstance(a, Exception))
        ok, failed = ok + n - bad, failed + bad
    return Throughput(ok, time.perf_counter() - started, failed)


def _warm_pump(
    address: str,
    name: str,
    size: int,
    window: int,
    seconds: float | None,
    count: int | None,
    ready: Callable[[], object] | None,
) -> Throughput:
    """:func:`_pump` on a connection warmed up by one XADD; ``ready`` called just before."""
    with _connect(address) as r:
        r.xadd(name, {FIELD: b"warm-up"})
        if ready is not None:
            ready()
        return _pump(r, name, b"x" * size, window, seconds, count)


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
    with _connect(address) as r:
        fields = {FIELD: b"x" * size}
        r.xadd(name, {FIELD: b"warm-up"})
        samples: list[float] = []
        errors = 0
        clock = time.perf_counter
        started = clock()
        deadline = started + seconds
        now = started
        while now < deadline:
            try:
                r.xadd(name, fields)
            except redis.RedisError:
                errors += 1
            t = clock()
            samples.append(t - now)
            now = t
        return Latency.of(samples, now - started, errors)


def bulk(
    address: str,
    name: str,
    count: int,
    size: int,
    window: int,
    ready: Callable[[], object] | None = None,
) -> Throughput:
    """See :meth:`benches.peers.clients.Client.bulk`: redis-py has no bulk XADD; its fastest
    way is the pipeline of (a)."""
    return _warm_pump(address, name, size, window, None, count, ready)


def fill(address: str, name: str, count: int, size: int, window: int) -> None:
    """See :meth:`benches.peers.clients.Client.fill`."""
    with _connect(address) as r:
        result = _pump(r, name, b"x" * size, window, None, count)
    if result.errors:
        raise RuntimeError(f"redis: {result.errors} messages of the backlog failed")


def consume(address: str, name: str, count: int, fetch: int) -> Throughput:
    """See :meth:`benches.peers.clients.Client.consume`: XREAD of up to ``fetch`` entries
    after the last id read; the position is the client's (no consumer group, no acks)."""
    with _connect(address) as r:
        started = time.perf_counter()
        got = head = 0
        first = 0.0
        last_id: bytes | str = "0-0"
        while got < count:
            answer = r.xread({name: last_id}, count=min(fetch, count - got))
            if not answer:
                break
            entries = answer[0][1]
            if not got:
                first, head = time.perf_counter(), len(entries)
            got += len(entries)
            last_id = entries[-1][0]
        return consumed(count, got, head, started, first, time.perf_counter())


def consume_listener(address: str, name: str, count: int, fetch: int) -> Throughput:
    """See :meth:`benches.peers.clients.Client.consume_listener`: redis-py has no callback
    API for streams, so this is :func:`consume`'s XREAD loop again, from the first entry."""
    return consume(address, name, count, fetch)
