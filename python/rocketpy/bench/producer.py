"""``rocketpy bench producer``: like RocketMQ's ``Producer`` benchmark script.

Each thread sends new :class:`~rocketpy.Message` objects of ``size`` bytes (optionally with
tags and a unique key each), synchronously or with up to ``window`` asynchronous requests in
flight, one by one or ``batch`` per request. Latency is per request: for batches, the time of
the whole batch. ``--transaction`` runs synchronous sends twice in one run, plain and then as
transactional messages (half message, local transaction that commits at once,
END_TRANSACTION), and prints the ratio of their rates.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from dataclasses import asdict, dataclass

from rocketpy.bench.runner import add_common_arguments, print_json, report_until, settings
from rocketpy.bench.stats import Report, Stats
from rocketpy.errors import RocketpyError
from rocketpy.message import Message, SendResult
from rocketpy.producer import Producer, SendCallback
from rocketpy.transaction import LocalTransactionState, TransactionProducer


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
    count: int | None = None
    duration: float | None = None
    interval: float = 1.0


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
        self.window = threading.BoundedSemaphore(max(1, bench.window))

    def messages(self, n: int) -> list[Message]:
        b = self.bench
        out = []
        for _ in range(n):
            self.seq += 1
            keys = f"bench-{self.index}-{self.seq}" if b.keys else None
            out.append(Message(b.topic, self.body, tags=b.tags, keys=keys))
        return out

    def run(self, quota: int | None) -> None:
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
        if self.bench.use_async:
            # Wait for the answers still in flight (each slot comes back when done).
            for _ in range(max(1, self.bench.window)):
                self.window.acquire(timeout=30)

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
        while not self.window.acquire(timeout=0.5):
            if self.stop.is_set():
                return
        t0 = time.perf_counter()
        n, stats, size, window = len(msgs), self.stats, self.bench.size, self.window

        def done(result: SendResult | None, error: BaseException | None) -> None:
            window.release()
            if error is not None:
                stats.failed(n, error)
            else:
                stats.record(n, n * size, time.perf_counter() - t0)

        callback: SendCallback = done
        try:
            if n == 1 and self.bench.batch <= 1:
                self.producer.send_async(msgs[0], callback)
            else:
                self.producer.send_batch_async(msgs, callback)
        except RocketpyError as e:
            window.release()
            stats.failed(n, e)


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
            print_json(label, total, stats, asdict(bench))
        return total
    finally:
        producer.shutdown()


def run(bench: ProducerBench, json_out: bool = False) -> int:
    """Runs the benchmark, printing as it goes; returns the process exit code."""
    if not bench.transaction:
        _run_with(bench, Producer(bench.group, bench.namesrv), "producer", json_out)
        return 0
    bench.use_async, bench.batch = False, 1
    plain = _run_with(bench, Producer(bench.group, bench.namesrv), "producer", False)
    tx_producer = TransactionProducer(f"{bench.group}_tx", bench.namesrv, _CommitAll())
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
            "settings": asdict(bench),
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
        "--transaction",
        action="store_true",
        help="plain then transactional synchronous sends, and the ratio of their rates",
    )

    def main(args: argparse.Namespace) -> int:
        return run(settings(ProducerBench, args), json_out=args.json)

    p.set_defaults(func=main)
