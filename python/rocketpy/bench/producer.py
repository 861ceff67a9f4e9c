"""``rocketpy bench producer``: like RocketMQ's ``Producer`` benchmark script.

Each thread sends new :class:`~rocketpy.Message` objects of ``size`` bytes (optionally with
tags and a unique key each), synchronously or with up to ``window`` asynchronous requests in
flight, one by one or ``batch`` per request. Latency is per request: for batches, the time of
the whole batch; asynchronous single sends time one message in 16 (``_SAMPLE_EVERY``). ``--transaction`` runs synchronous sends twice in one run, plain and then as
transactional messages (half message, local transaction that commits at once,
END_TRANSACTION), and prints the ratio of their rates.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from dataclasses import dataclass, field, replace

from rocketpy.bench.runner import (
    add_common_arguments,
    print_json,
    public,
    report_until,
    settings,
)
from rocketpy.bench.stats import Report, Stats
from rocketpy.errors import RocketpyError
from rocketpy.message import Message, SendResult
from rocketpy.producer import Producer, SendCallback
from rocketpy.transaction import LocalTransactionState, TransactionProducer

#: Asynchronous single sends time one message in this many (the others are only counted):
#: a timing closure per message would cost the benchmark more than the send. Percentiles
#: come from that systematic sample; counts include every message.
_SAMPLE_EVERY = 16


@dataclass
class ProducerBench:
    """Settings of a producer benchmark (see ``rocketpy bench producer --help``)."""

    namesrv: str
    topic: str = "BenchmarkTest"
    group: str = "benchmark_producer"
    threads: int = 4
    size: int = 128
    tags: str | None = None
    keys: bool = False
    batch: int = 1
    use_async: bool = False
    window: int = 256
    transaction: bool = False
    auto_batch: bool = True
    batch_max_delay_ms: int = 0
    #: Compare single sends with explicit batches of this many, in alternating rounds.
    compare_batch: int = 0
    rounds: int = 3
    count: int | None = None
    duration: float | None = None
    interval: float = 1.0
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)


def _quotas(total: int | None, threads: int) -> list[int | None]:
    if total is None:
        return [None] * threads
    return [total // threads + (1 if i < total % threads else 0) for i in range(threads)]


class _Worker:
    def __init__(
        self,
        bench: ProducerBench,
        producer: Producer,
        stats: Stats,
        stop: threading.Event,
        index: int,
    ) -> None:
        self.bench, self.producer, self.stats, self.stop = bench, producer, stats, stop
        self.index = index
        self.body = bytes([ord("a") + index % 26]) * bench.size
        self.seq = 0
        # The async window counts send_async calls: sent is written by this worker only, answered by
        # rocketpy's callback thread only (every send callback runs there), so plain ints are
        # exact; a semaphore per message would cost more than the send.
        self.sent = 0
        self.answered = 0
        #: Untimed messages answered and not yet recorded (callback thread only).
        self.untimed = 0

    def messages(self, n: int) -> list[Message]:
        b = self.bench
        if n == 1 and not b.keys and not b.tags:
            return [Message(b.topic, self.body)]
        out = []
        for _ in range(n):
            self.seq += 1
            keys = f"bench-{self.index}-{self.seq}" if b.keys else None
            out.append(Message(b.topic, self.body, tags=b.tags, keys=keys))
        return out

    def run(self, quota: int | None) -> None:
        b = self.bench
        if b.use_async and b.batch <= 1 and not b.keys and not b.tags:
            self.run_single_async(quota)
        else:
            self.run_any(quota)
        if b.use_async:
            # Wait for the answers still in flight.
            deadline = time.monotonic() + 30
            while self.sent > self.answered and time.monotonic() < deadline:
                time.sleep(0.001)
            self.flush_counts()

    def run_single_async(self, quota: int | None) -> None:
        """:meth:`run_any` for plain asynchronous single sends, as tight as an application's
        loop would be: at 100 k messages a second the benchmark's own per-message steps
        would otherwise cost as much as the send."""
        send, topic, body = self.producer.send_async, self.bench.topic, self.body
        window, counted, stats = max(1, self.bench.window), self._counted, self.stats
        left = quota if quota is not None else -1
        while left != 0 and not self.stop.is_set():
            for _ in range(64 if left < 0 else min(64, left)):
                while self.sent - self.answered >= window:
                    if self.stop.is_set():
                        return
                    time.sleep(0.0002)
                self.sent += 1
                cb = counted if self.sent % _SAMPLE_EVERY else self._timed(1, time.perf_counter())
                try:
                    send(Message(topic, body), cb)
                except RocketpyError as e:
                    self.sent -= 1
                    stats.failed(1, e)
                left -= 1

    def run_any(self, quota: int | None) -> None:
        sent = 0
        step = max(1, self.bench.batch)
        while not self.stop.is_set() and (quota is None or sent < quota):
            k = step if quota is None else min(step, quota - sent)
            msgs = self.messages(k)
            if self.bench.use_async:
                self.send_async(msgs)
            else:
                self.send_sync(msgs)
            sent += k

    def send_sync(self, msgs: list[Message]) -> None:
        t0 = time.perf_counter()
        try:
            if isinstance(self.producer, TransactionProducer):
                self.producer.send_message_in_transaction(msgs[0])
            elif len(msgs) == 1 and self.bench.batch <= 1:
                self.producer.send(msgs[0])
            else:
                self.producer.send_batch(msgs)
        except RocketpyError as e:
            self.stats.failed(len(msgs), e)
            return
        self.stats.record(len(msgs), len(msgs) * self.bench.size, time.perf_counter() - t0)

    def send_async(self, msgs: list[Message]) -> None:
        window = max(1, self.bench.window)
        while self.sent - self.answered >= window:
            if self.stop.is_set():
                return
            time.sleep(0.0002)
        n = len(msgs)
        single = n == 1 and self.bench.batch <= 1
        callback: SendCallback
        if single and self.sent % _SAMPLE_EVERY:
            callback = self._counted
        else:
            callback = self._timed(n, time.perf_counter())
        self.sent += 1
        try:
            if single:
                self.producer.send_async(msgs[0], callback)
            else:
                self.producer.send_batch_async(msgs, callback)
        except RocketpyError as e:
            self.sent -= 1
            self.stats.failed(n, e)

    def _timed(self, n: int, t0: float) -> SendCallback:
        stats, size = self.stats, self.bench.size

        def done(result: SendResult | None, error: BaseException | None) -> None:
            self.answered += 1
            if error is not None:
                stats.failed(n, error)
                return
            # Messages answered since the last timed one count here, with this latency.
            untimed, self.untimed = self.untimed, 0
            stats.record(n + untimed, (n + untimed) * size, time.perf_counter() - t0)

        return done

    def _counted(self, result: SendResult | None, error: BaseException | None) -> None:
        """The callback of an untimed single message (see ``_SAMPLE_EVERY``)."""
        self.answered += 1
        if error is not None:
            self.stats.failed(1, error)
        else:
            self.untimed += 1

    def flush_counts(self) -> None:
        """Counts answered untimed messages not yet recorded."""
        untimed, self.untimed = self.untimed, 0
        if untimed:
            self.stats.count(untimed, untimed * self.bench.size)


class _CommitAll:
    """The benchmark's local transactions: nothing to do, commit."""

    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    def check_local_transaction(self, msg: object) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE


def _run_with(bench: ProducerBench, producer: Producer, label: str, json_out: bool) -> Report:
    producer.start()
    try:
        # Route (and auto-created topic) ready before timing starts.
        producer.send(Message(bench.topic, b"warm-up"))
        stats = Stats()
        stop = threading.Event()
        workers = [
            threading.Thread(
                target=_Worker(bench, producer, stats, stop, i).run,
                args=(quota,),
                name=f"bench-{label}-{i}",
                daemon=True,
            )
            for i, quota in enumerate(_quotas(bench.count, bench.threads))
        ]
        for w in workers:
            w.start()
        total = report_until(
            stats,
            label,
            bench.interval,
            lambda: not any(w.is_alive() for w in workers),
            bench.duration,
        )
        stop.set()
        for w in workers:
            w.join(timeout=35)
        if json_out:
            print_json(label, total, stats, public(bench))
        return total
    finally:
        producer.shutdown()


def _producer(bench: ProducerBench) -> Producer:
    return Producer(
        bench.group,
        bench.namesrv,
        auto_batch=bench.auto_batch,
        batch_max_delay_ms=bench.batch_max_delay_ms,
        access_key=bench.access_key,
        secret_key=bench.secret_key,
    )


def _compare(bench: ProducerBench, json_out: bool) -> int:
    """Single-message sends against explicit batches of ``compare_batch``, alternating
    rounds in one run, and the ratio of the median rates (what auto-batching is for)."""
    single = replace(bench, batch=1, compare_batch=0)
    batched = replace(bench, batch=bench.compare_batch, compare_batch=0)
    singles: list[Report] = []
    batches: list[Report] = []
    for r in range(max(1, bench.rounds)):
        batches.append(
            _run_with(batched, _producer(batched), f"batch-{batched.batch} #{r + 1}", False)
        )
        singles.append(_run_with(single, _producer(single), f"single #{r + 1}", False))
    s_tps = statistics.median(x.tps for x in singles)
    b_tps = statistics.median(x.tps for x in batches)
    p99 = statistics.median(x.p99_ms for x in singles)
    ratio = s_tps / b_tps if b_tps else 0.0
    print(
        f"single / batch-{bench.compare_batch} (medians of {len(singles)} rounds): {ratio:.2f} "
        f"({s_tps:,.0f} vs {b_tps:,.0f} msg/s); single p99 {p99:.3f} ms",
        flush=True,
    )
    if json_out:
        summary = {
            "mode": "compare-batch",
            "settings": public(bench),
            "single": [x.as_dict() for x in singles],
            "batch": [x.as_dict() for x in batches],
            "ratio": round(ratio, 3),
        }
        print(json.dumps(summary), flush=True)
    return 0


def run(bench: ProducerBench, json_out: bool = False) -> int:
    """Runs the benchmark, printing as it goes; returns the process exit code."""
    if bench.compare_batch > 1 and not bench.transaction:
        return _compare(bench, json_out)
    if not bench.transaction:
        _run_with(bench, _producer(bench), "producer", json_out)
        return 0
    bench.use_async, bench.batch = False, 1
    plain = _run_with(bench, _producer(bench), "producer", False)
    tx_producer = TransactionProducer(
        f"{bench.group}_tx",
        bench.namesrv,
        _CommitAll(),
        access_key=bench.access_key,
        secret_key=bench.secret_key,
    )
    tx = _run_with(bench, tx_producer, "transaction", False)
    ratio = tx.tps / plain.tps if plain.tps else 0.0
    print(
        f"transactional / plain synchronous sends: {ratio:.2f} "
        f"({tx.tps:,.0f} vs {plain.tps:,.0f} msg/s)",
        flush=True,
    )
    if json_out:
        summary = {
            "mode": "transaction",
            "settings": public(bench),
            "total": tx.as_dict(),
            "plain": plain.as_dict(),
            "ratio": round(ratio, 3),
        }
        print(json.dumps(summary), flush=True)
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Registers ``bench producer``."""
    p = sub.add_parser("producer", help="send as fast as possible and report TPS and latency")
    add_common_arguments(p)
    p.add_argument("-g", "--group", default="benchmark_producer", help="producer group")
    p.add_argument("-w", "--threads", type=int, default=4, help="sending threads")
    p.add_argument("-s", "--size", type=int, default=128, help="body bytes")
    p.add_argument("--tags", help="tags of every message")
    p.add_argument("-k", "--keys", action="store_true", help="a unique key on every message")
    p.add_argument("-b", "--batch", type=int, default=1, help="messages per request")
    p.add_argument("-a", "--async", dest="use_async", action="store_true", help="send_async")
    p.add_argument("--window", type=int, default=256, help="async requests in flight per thread")
    p.add_argument(
        "--compare-batch",
        type=int,
        default=0,
        metavar="N",
        help="alternate rounds of single sends and explicit batches of N; print the ratio",
    )
    p.add_argument("--rounds", type=int, default=3, help="rounds of --compare-batch")
    p.add_argument(
        "--no-auto-batch",
        dest="auto_batch",
        action="store_false",
        help="send_async sends every message in its own request",
    )
    p.add_argument(
        "--batch-max-delay-ms",
        type=int,
        default=0,
        help="auto-batching: how long a message waits for company on an idle queue",
    )
    p.add_argument(
        "--transaction",
        action="store_true",
        help="plain then transactional synchronous sends, and the ratio of their rates",
    )

    def main(args: argparse.Namespace) -> int:
        return run(settings(ProducerBench, args), json_out=args.json)

    p.set_defaults(func=main)
