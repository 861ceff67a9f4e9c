"""The push consumer as users write it, on a backlog: ``make bench-push``.

A broker (``rocketpy dev``, a process of its own) holds ``--backlog`` messages of ``--size``
bytes on a topic of 8 queues; a ``PushConsumer`` in another process, with a listener that
counts, reads them from the first offset — with RocketMQ's defaults (20 listener threads, one
message per listener call, pulls of 32), with ``consume_message_batch_max_size=32``, and both
with pulls of 1,000 (``pull_batch_size``; the broker is started with
``maxTransferCountOnMessageInMemory=1000`` so that a pull may carry them, as in
``make bench-peers``). Each setting reports its rate and the CPU time per message of the
consumer's process and of the broker's. Rounds alternate the order; the figures are medians.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

from benches.grpc.run import BrokerProcess

#: (name, listener threads, messages per listener call, messages per pull)
SETTINGS = (
    ("defaults (20 threads, 1 a call)", 20, 1, 32),
    ("32 a call", 20, 32, 32),
    ("pulls of 1000, 1 a call", 20, 1, 1000),
    ("pulls of 1000, 32 a call", 20, 32, 1000),
)
#: The most messages a pull of the benchmark's broker may carry (RocketMQ's default: 32).
MAX_TRANSFER = 1000


def child(namesrv: str, topic: str, count: int, threads: int, batch: int, pull: int) -> None:
    """The consumer's process: reads ``count`` messages, prints its figures as JSON."""
    from rocketpy import ConsumeFromWhere, ConsumeStatus, PushConsumer

    got = [0]
    lock = threading.Lock()
    done = threading.Event()

    def listener(msgs: list[object]) -> ConsumeStatus:
        with lock:
            got[0] += len(msgs)
            if got[0] >= count:
                done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        f"bench-push-{uuid.uuid4().hex[:8]}",
        namesrv,
        consume_thread_max=threads,
        consume_message_batch_max_size=batch,
        pull_batch_size=pull,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    consumer.subscribe(topic, "*")
    consumer.register_listener(listener)
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    consumer.start()
    done.wait(600)
    elapsed, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    print(json.dumps({"messages": got[0], "seconds": elapsed, "cpu": cpu}), flush=True)
    consumer.shutdown()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backlog", type=int, default=1_000_000)
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        ns, topic, count, threads, batch, pull = args.child
        child(ns, topic, int(count), int(threads), int(batch), int(pull))
        return 0

    from rocketpy import Producer
    from rocketpy.admin import Admin

    topic = "BenchPush"
    rates: dict[str, list[float]] = {}
    client_us: dict[str, list[float]] = {}
    broker_us: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(tmp, {"maxTransferCountOnMessageInMemory": str(MAX_TRANSFER)})
        try:
            with Admin(broker.namesrv) as admin:
                admin.create_topic(topic, queues=8)
            with Producer("bench-push-fill", broker.namesrv) as producer:
                producer.send_many(topic, [b"x" * args.size] * args.backlog)
            for r in range(args.rounds):
                for name, threads, batch, pull in SETTINGS if r % 2 == 0 else SETTINGS[::-1]:
                    cpu0 = broker.cpu_seconds()
                    out = subprocess.run(
                        [sys.executable, "-m", "benches.push_consumer", "--child",
                         broker.namesrv, topic, str(args.backlog), str(threads), str(batch), str(pull)],
                        capture_output=True, text=True, timeout=900, check=True,
                    )  # fmt: skip
                    broker_cpu = broker.cpu_seconds() - cpu0
                    res = json.loads(out.stdout.strip().splitlines()[-1])
                    n = res["messages"]
                    rates.setdefault(name, []).append(n / res["seconds"])
                    client_us.setdefault(name, []).append(res["cpu"] / n * 1e6)
                    broker_us.setdefault(name, []).append(broker_cpu / n * 1e6)
                    print(f"round {r + 1} {name}: {n / res['seconds']:10,.0f} msg/s, client "
                          f"{res['cpu'] / n * 1e6:5.2f} us/msg, broker {broker_cpu / n * 1e6:5.2f} "
                          "us/msg", flush=True)  # fmt: skip
        finally:
            broker.stop()
    print(f"\nmedians of {args.rounds} rounds, {args.backlog:,} x {args.size} B:")
    for name in rates:
        print(f"  {name:34} {statistics.median(rates[name]):10,.0f} msg/s  client "
              f"{statistics.median(client_us[name]):5.2f} us/msg  broker "
              f"{statistics.median(broker_us[name]):5.2f} us/msg")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
