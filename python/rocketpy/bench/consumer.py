"""``rocketpy bench consumer``: like RocketMQ's ``Consumer`` benchmark script.

A :class:`~rocketpy.PushConsumer` with a listener that only counts. Latency is per message,
from the broker's store timestamp to the listener call (milliseconds resolution: the store
timestamp is in ms).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field

from rocketpy._native import MessageExt
from rocketpy._util import now_millis
from rocketpy.bench.runner import (
    add_common_arguments,
    print_json,
    public,
    report_until,
    settings,
)
from rocketpy.bench.stats import Stats
from rocketpy.consumer.base import ConsumeFromWhere
from rocketpy.consumer.push import ConsumeStatus, PushConsumer


@dataclass
class ConsumerBench:
    """Settings of a consumer benchmark (see ``rocketpy bench consumer --help``)."""

    namesrv: str
    topic: str = "BenchmarkTest"
    group: str = ""
    expression: str = "*"
    threads: int = 4
    batch: int = 32
    pull_batch: int = 32
    from_first: bool = False
    count: int | None = None
    duration: float | None = None
    interval: float = 1.0
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)


def run(bench: ConsumerBench, json_out: bool = False) -> int:
    """Runs the benchmark, printing as it goes; returns the process exit code."""
    stats = Stats()
    group = bench.group or f"benchmark_consumer_{os.getpid()}"

    def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        now = now_millis()
        stats.record_many(
            sum(m.body_size for m in msgs), [(now - m.store_timestamp) / 1000 for m in msgs]
        )
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        group,
        bench.namesrv,
        consume_thread_max=bench.threads,
        consume_message_batch_max_size=bench.batch,
        pull_batch_size=bench.pull_batch,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        if bench.from_first
        else ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        access_key=bench.access_key,
        secret_key=bench.secret_key,
    )
    consumer.subscribe(bench.topic, bench.expression)
    consumer.register_listener(listener)
    consumer.start()
    count = bench.count
    try:
        total = report_until(
            stats,
            "consumer",
            bench.interval,
            lambda: count is not None and stats.total_messages >= count,
            bench.duration,
        )
    finally:
        consumer.shutdown()
    if json_out:
        print_json("consumer", total, stats, dict(public(bench), group=group))
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Registers ``bench consumer``."""
    p = sub.add_parser("consumer", help="consume as fast as possible and report TPS and latency")
    add_common_arguments(p)
    p.add_argument("-g", "--group", default="", help="consumer group (default: a new one)")
    p.add_argument("-e", "--expression", default="*", help="tag expression, e.g. 'A || B'")
    p.add_argument("-w", "--threads", type=int, default=4, help="listener threads")
    p.add_argument("-b", "--batch", type=int, default=32, help="messages per listener call")
    p.add_argument("--pull-batch", type=int, default=32, help="messages per pull")
    p.add_argument(
        "--from-first", action="store_true", help="a new group starts at the first offset"
    )

    def main(args: argparse.Namespace) -> int:
        return run(settings(ConsumerBench, args), json_out=args.json)

    p.set_defaults(func=main)
