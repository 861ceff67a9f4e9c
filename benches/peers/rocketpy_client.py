"""rocketpy's side: ``Producer.send_async`` (auto-batching underneath) for throughput,
``Producer.send_many`` for bulk, ``Producer.send`` for latency, a ``LitePullConsumer`` for
the backlog, and a ``PushConsumer`` with a listener for the backlog through callbacks."""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future

from benches.peers.pacing import chunks
from benches.peers.results import Latency, Throughput, consumed
from rocketpy import (
    BulkSendError,
    ConsumeFromWhere,
    ConsumeStatus,
    LitePullConsumer,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    SendResult,
)
from rocketpy.admin import Admin
from rocketpy.errors import ClientError, RocketpyError

#: Queues of each benchmark topic (``rocketpy bench``'s topics and ``make bench-metrics`` use 8).
QUEUES = 8
#: Sends between two looks at the window.
RUN = 256
#: Messages per listener call of the push consumer in (f) (``consume_message_batch_max_size``).
LISTENER_BATCH = 32


def prepare(address: str, name: str) -> None:
    """Creates topic ``name`` with :data:`QUEUES` queues (waiting for the broker to register)."""
    deadline = time.monotonic() + 30
    with Admin(address) as admin:
        while True:
            try:
                admin.create_topic(name, queues=QUEUES)
                return
            except ClientError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


class _Answers:
    """Counts the answers of asynchronous sends (written by rocketpy's callback thread only)."""

    __slots__ = ("answered", "failed")

    def __init__(self) -> None:
        self.answered = 0
        self.failed = 0

    def __call__(self, result: SendResult | None, error: BaseException | None) -> None:
        self.answered += 1
        if error is not None:
            self.failed += 1


def _pump(
    producer: Producer,
    name: str,
    body: bytes,
    window: int,
    seconds: float | None,
    count: int | None,
) -> Throughput:
    """``send_async`` in a tight loop, at most ``window`` unanswered, until ``seconds`` pass or
    ``count`` are sent; then waits for the answers.

    The window is kept per run of :data:`RUN` sends, as a user would: the future of each run's
    first send is kept (until answered), and a full window waits on the oldest of them until
    there is room — a blocking wait, no polling."""
    answers = _Answers()
    send = producer.send_async
    marks: deque[Future[SendResult]] = deque()
    sent = 0
    started = time.perf_counter()
    for n in chunks(seconds, count, RUN):
        while marks and marks[0].done():
            marks.popleft()
        while sent + n - answers.answered > window and marks:
            _settled(marks.popleft())
        first = True
        for _ in range(n):
            try:
                future = send(Message(name, body), answers)
                if first:
                    marks.append(future)
                    first = False
            except RocketpyError:
                answers.answered += 1
                answers.failed += 1
            sent += 1
    for future in marks:
        _settled(future)
    wait_until = time.monotonic() + 60
    while answers.answered < sent and time.monotonic() < wait_until:
        time.sleep(0.0005)
    elapsed = time.perf_counter() - started
    lost = sent - answers.answered
    return Throughput(sent - answers.failed - lost, elapsed, answers.failed + lost)


def _settled(future: Future[SendResult]) -> None:
    """Waits for ``future`` (its failure is counted by the callback)."""
    with contextlib.suppress(Exception):
        future.result(timeout=60)


def _producer(address: str) -> Producer:
    producer = Producer(f"peers_{os.getpid()}", address)
    producer.start()
    return producer


def produce(
    address: str,
    name: str,
    seconds: float,
    size: int,
    window: int,
    ready: Callable[[], object] | None = None,
) -> Throughput:
    """See :meth:`benches.peers.clients.Client.produce`."""
    producer = _producer(address)
    try:
        producer.send(Message(name, b"warm-up"))  # route and connection before timing
        if ready is not None:
            ready()
        return _pump(producer, name, b"x" * size, window, seconds, None)
    finally:
        producer.shutdown()


def bulk(
    address: str,
    name: str,
    count: int,
    size: int,
    window: int,
    ready: Callable[[], object] | None = None,
) -> Throughput:
    """See :meth:`benches.peers.clients.Client.bulk`: one ``Producer.send_many`` of a list of
    ``count`` bodies (batch requests of up to 1 MiB built natively, 8 in flight)."""
    producer = _producer(address)
    bodies = [b"x" * size] * count
    try:
        producer.send(Message(name, b"warm-up"))
        if ready is not None:
            ready()
        started = time.perf_counter()
        try:
            stored = producer.send_many(name, bodies).count
        except BulkSendError as e:
            stored = e.result.count
        return Throughput(stored, time.perf_counter() - started, count - stored)
    finally:
        producer.shutdown()


def send_latency(address: str, name: str, seconds: float, size: int) -> Latency:
    """See :meth:`benches.peers.clients.Client.send_latency`."""
    producer = _producer(address)
    body = b"x" * size
    samples: list[float] = []
    errors = 0
    try:
        producer.send(Message(name, b"warm-up"))
        clock = time.perf_counter
        started = clock()
        deadline = started + seconds
        now = started
        while now < deadline:
            try:
                producer.send(Message(name, body))
            except RocketpyError:
                errors += 1
            t = clock()
            samples.append(t - now)
            now = t
        return Latency.of(samples, now - started, errors)
    finally:
        producer.shutdown()


def fill(address: str, name: str, count: int, size: int, window: int) -> None:
    """See :meth:`benches.peers.clients.Client.fill`."""
    producer = _producer(address)
    try:
        producer.send(Message(name, b"x" * size))
        result = _pump(producer, name, b"x" * size, window, None, count - 1)
        if result.errors:
            raise RuntimeError(f"rocketpy: {result.errors} messages of the backlog failed")
    finally:
        producer.shutdown()


def consume(address: str, name: str, count: int, fetch: int) -> Throughput:
    """See :meth:`benches.peers.clients.Client.consume`: a new group's ``LitePullConsumer``
    from the first offset, pulls of ``fetch`` messages (the server's cap is raised to that,
    see ``RocketpyServer``), offsets committed every 5 s as by default."""
    consumer = LitePullConsumer(
        f"{name}_reader_{uuid.uuid4().hex[:8]}",
        address,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        pull_batch_size=fetch,
    )
    consumer.subscribe(name, "*")
    started = time.perf_counter()
    consumer.start()
    got = head = 0
    first = 0.0
    try:
        while got < count:
            msgs = consumer.poll(timeout_ms=30_000)
            if not msgs:
                break
            if not got:
                first, head = time.perf_counter(), len(msgs)
            got += len(msgs)
        last = time.perf_counter()
    finally:
        consumer.shutdown()
    return consumed(count, got, head, started, first, last)


class _Tally:
    """A push consumer's listener that counts what it is given until ``count`` came, noting
    when the first batch (and its size) and the last message arrived."""

    __slots__ = ("count", "done", "first", "got", "head", "last", "lock")

    def __init__(self, count: int) -> None:
        self.count = count
        self.got = self.head = 0
        self.first = self.last = 0.0
        self.lock = threading.Lock()
        self.done = threading.Event()

    def __call__(self, msgs: list[MessageExt]) -> ConsumeStatus:
        with self.lock:
            if not self.got:
                self.first, self.head = time.perf_counter(), len(msgs)
            self.got += len(msgs)
            if self.got >= self.count and not self.done.is_set():
                self.last = time.perf_counter()
                self.done.set()
        return ConsumeStatus.CONSUME_SUCCESS


def consume_listener(address: str, name: str, count: int, fetch: int) -> Throughput:
    """See :meth:`benches.peers.clients.Client.consume_listener`: a new group's
    ``PushConsumer`` from the first offset (pulls of ``fetch``, RocketMQ's default 20
    listener threads) whose listener takes up to :data:`LISTENER_BATCH` messages a call and
    counts them; offsets committed every 5 s as by default."""
    tally = _Tally(count)
    consumer = PushConsumer(
        f"{name}_listener_{uuid.uuid4().hex[:8]}",
        address,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        pull_batch_size=fetch,
        consume_message_batch_max_size=LISTENER_BATCH,
    )
    consumer.subscribe(name, "*")
    consumer.register_listener(tally)
    started = time.perf_counter()
    consumer.start()
    try:
        tally.done.wait(max(60.0, count / 1000))
        with tally.lock:
            got, head, first = tally.got, tally.head, tally.first
            last = tally.last or time.perf_counter()
    finally:
        consumer.shutdown()
    return consumed(count, got, head, started, first, last)
