"""The 5.x clients' gRPC path next to the 4.x remoting path on one broker, in one run:

- send: the official RocketMQ 5.x Python client (``rocketmq-python-client``, through the
  broker's gRPC endpoint) and rocketpy's Producer (remoting), each sending 100 B messages
  synchronously from ``--threads`` threads for ``--seconds``; and the client package's
  generated gRPC stub with ``--inflight`` calls in flight (the protocol without the client's
  Python work);
- an empty call: Heartbeat through the stub with ``--inflight``/8 calls in flight, what any
  gRPC call costs the server before it does anything (HTTP/2 framing, the connection's
  tasks, the socket writes and wake-ups) — the floor under the receive+ack figures, which
  take two calls per batch;
- consume: the 5.x SimpleConsumer receiving (32 at a time) and acking each message, the stub
  receiving 32 at a time with ``--inflight``/8 receives in flight and acking each batch in one
  AckMessage (what the protocol allows), and rocketpy's PushConsumer, each reading a backlog
  (the stub the client's, as a group of its own) for ``--seconds``;
- the Rust drivers (``benches/src/bin/grpc_drive.rs``, ``pull_drive.rs`` and
  ``pop_drive.rs``, built by ``make bench-grpc``): the stub's receive+ack and empty call from
  Rust, the 4.x pull of a backlog from Rust, and POP_MESSAGE + BATCH_ACK_MESSAGE over
  remoting from Rust (the broker's work of a receive+ack — checkpoint and batch-ack records in
  the revive log — without gRPC or conversion, so pull → pop → gRPC shows which layer costs
  what), whose few µs of CPU per call let the broker, not the client, set the pace — the Python stub keeps the broker three quarters idle, so its figures are
  mostly the cost of waking up for each call, and the broker's CPU per message under the
  Python PushConsumer moves with that consumer's pace.

Rounds alternate the order; the figures are medians. Both paths end in the same broker and
store; what differs is the protocol, the proxy and the client. The broker runs as its own
process (``rocketpy dev --grpc-port 0``), so the benchmark also reports the broker's CPU time
per message on each path — the server's cost, whatever the client's speed (the official
5.x Python client is bound by its own Python code long before the server is). Run with
``make bench-grpc`` (the 5.x client comes from the ``make compat-py5`` venv).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from rocketpy import ConsumeFromWhere, ConsumeStatus, Message, Producer, PushConsumer
from rocketpy.admin import Admin
from rocketpy.client.instance import ClientConfig

PY5_PYTHON = os.environ.get(
    "ROCKETPY_PY5_PYTHON", str(Path.home() / ".cache/rocketpy/py5-venv/bin/python")
)
SIDE = Path(__file__).with_name("py5_side.py")
DRIVE = os.environ.get(
    "ROCKETPY_GRPC_DRIVE", str(Path(__file__).parents[2] / "target/release/grpc_drive")
)
PULL_DRIVE = os.environ.get(
    "ROCKETPY_PULL_DRIVE", str(Path(__file__).parents[2] / "target/release/pull_drive")
)
POP_DRIVE = os.environ.get(
    "ROCKETPY_POP_DRIVE", str(Path(__file__).parents[2] / "target/release/pop_drive")
)


class BrokerProcess:
    """``rocketpy dev`` with a gRPC endpoint, in a process of its own; reads its CPU time."""

    def __init__(self, store: str, settings: dict[str, str] | None = None) -> None:
        """Starts it on free ports with its store in ``store``; ``settings`` are broker
        keys given with ``--set``."""
        import re
        import sys

        sets = [a for k, v in (settings or {}).items() for a in ("--set", f"{k}={v}")]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rocketpy", "--log-level", "warn", "dev", "--namesrv-port",
             "0", "--port", "0", "--grpc-port", "0", "--store-dir", store, *sets],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline()
        grpc = self.proc.stdout.readline()
        m, g = re.search(r"namesrv=(\S+)", ready), re.search(r"clients: (\S+)", grpc)
        b = re.search(r"broker=(\S+)", ready)
        if not m or not g or not b:
            self.stop()
            raise SystemExit(f"rocketpy dev did not start: {ready!r} {grpc!r}")
        self.namesrv, self.grpc, self.broker = m.group(1), g.group(1), b.group(1)

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)


def py5(spec: dict[str, object]) -> float:
    """Runs the 5.x side; its rate in messages per second."""
    out = subprocess.run(
        [PY5_PYTHON, str(SIDE), json.dumps(spec)],
        capture_output=True, text=True, timeout=600, env=dict(os.environ, HOME=tempfile.gettempdir()),
    )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"the 5.x client failed: {out.stderr[-3000:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return r["count"] / r["seconds"]


def drive(mode: str, endpoint: str, **options: object) -> float:
    """Runs the Rust gRPC driver; its rate in calls or messages per second."""
    return run_driver([DRIVE, mode, endpoint], options)


def pull_drive(broker: str, **options: object) -> float:
    """Runs the Rust 4.x pull driver; its rate in messages per second."""
    return run_driver([PULL_DRIVE, broker], options)


def pop_drive(broker: str, **options: object) -> float:
    """Runs the Rust pop + batch-ack driver (4.x remoting); its rate in messages per second."""
    return run_driver([POP_DRIVE, broker], options)


def run_driver(command: list[str], options: dict[str, object]) -> float:
    """Runs a Rust driver with ``options`` as ``--name value`` flags; its count per second."""
    if not Path(command[0]).exists():
        raise SystemExit(f"{command[0]} is missing: make bench-grpc builds it")
    flags = [a for k, v in options.items() for a in (f"--{k}", str(v))]
    out = subprocess.run([*command, *flags], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"the Rust driver failed: {out.stderr[-3000:]}")
    r = json.loads(out.stdout)
    return r["count"] / r["seconds"]


def send_4x(namesrv: str, topic: str, threads: int, seconds: float, size: int) -> float:
    body = b"x" * size
    with Producer("bench-grpc-4x", namesrv) as p:
        p.send(Message(topic, body))  # warm the route and connection
        counts = [0] * threads
        stop = time.monotonic() + seconds

        def loop(i: int) -> None:
            while time.monotonic() < stop:
                p.send(Message(topic, body))
                counts[i] += 1

        started = time.monotonic()
        ts = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return sum(counts) / (time.monotonic() - started)


def fill(namesrv: str, topic: str, n: int, size: int) -> None:
    body = b"x" * size
    with Producer("bench-grpc-fill", namesrv) as p:
        for start in range(0, n, 100):
            p.send_batch([Message(topic, body) for _ in range(min(100, n - start))])


def consume_4x(namesrv: str, topic: str, seconds: float, backlog: int) -> float:
    """The rate of reading ``backlog`` messages (or what ``seconds`` allow)."""
    count = [0]
    lock = threading.Lock()

    def listener(msgs: list[object]) -> ConsumeStatus:
        with lock:
            count[0] += len(msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    c = PushConsumer(
        f"bench-grpc-4x-{topic}",
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        client_config=ClientConfig(namesrv),
    )
    c.subscribe(topic)
    c.register_listener(listener)
    c.start()
    started = time.monotonic()
    while time.monotonic() - started < seconds and count[0] < backlog:
        time.sleep(0.02)
    with lock:
        n, elapsed = count[0], time.monotonic() - started
    c.shutdown()
    return n / elapsed


class Measured:
    """Rates and broker CPU per message of each path."""

    def __init__(self) -> None:
        self.rates: dict[str, list[float]] = {}
        self.cpu_us: dict[str, list[float]] = {}

    def run(self, broker: BrokerProcess, name: str, seconds: float, fn) -> None:  # type: ignore[no-untyped-def]
        before, t = broker.cpu_seconds(), time.monotonic()
        rate = fn()
        cpu, elapsed = broker.cpu_seconds() - before, time.monotonic() - t
        messages = rate * min(elapsed, seconds) if rate else 0
        self.rates.setdefault(name, []).append(rate)
        per = cpu / messages * 1e6 if messages else float("nan")
        self.cpu_us.setdefault(name, []).append(per)
        print(f"{name}: {rate:10,.0f} msg/s, broker CPU {per:6.2f} us/msg", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=8)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--backlog", type=int, default=300_000)
    p.add_argument("--inflight", type=int, default=64)
    args = p.parse_args(argv)
    m = Measured()
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(tmp)
        try:
            ns, endpoint = broker.namesrv, broker.grpc
            with Admin(ns) as admin:
                admin.create_topic("BenchGrpcSend", queues=4)
                broker_name = admin.broker_config(broker.broker)["brokerName"]
            for r in range(args.rounds):
                print(f"round {r + 1}", flush=True)
                sends = [
                    ("send 5.x (gRPC)", lambda: py5(dict(
                        action="send", endpoint=endpoint, topic="BenchGrpcSend",
                        threads=args.threads, seconds=args.seconds, size=args.size))),
                    ("send 4.x (remoting)", lambda: send_4x(
                        ns, "BenchGrpcSend", args.threads, args.seconds, args.size)),
                    ("send gRPC stub", lambda: py5(dict(
                        action="send_stub", endpoint=endpoint, topic="BenchGrpcSend",
                        inflight=args.inflight, seconds=args.seconds, size=args.size))),
                    ("empty call gRPC stub", lambda: py5(dict(
                        action="heartbeat_stub", endpoint=endpoint,
                        inflight=args.inflight // 8, seconds=args.seconds))),
                    ("empty call Rust driver", lambda: drive(
                        "empty", endpoint, inflight=args.inflight // 2, seconds=args.seconds)),
                ]  # fmt: skip
                for name, fn in sends if r % 2 == 0 else sends[::-1]:
                    m.run(broker, name, args.seconds, fn)
                topics = {5: f"BenchGrpcRecv5-{r}", 4: f"BenchGrpcRecv4-{r}",
                          "pop": f"BenchGrpcPop-{r}"}  # fmt: skip
                with Admin(ns) as admin:
                    for t in topics.values():
                        admin.create_topic(t, queues=4)
                for t in topics.values():
                    fill(ns, t, args.backlog, args.size)
                with Admin(ns) as admin:
                    # A new 5.x group starts at the queues' ends (RocketMQ's proxy pops with
                    # initMode MAX); this one is to read the backlog from its start.
                    for mq in admin.topic_stats(topics[5]):
                        admin.commit_offset(f"bench-grpc-5x-{r}", mq, 0)  # see group5
                group5 = f"bench-grpc-5x-{r}"
                recv5 = dict(action="receive", endpoint=endpoint, topic=topics[5], group=group5,
                             threads=args.threads, seconds=args.seconds)  # fmt: skip
                # The stub reads the same backlog after the client (a group of its own).
                stub5 = dict(recv5, action="receive_stub", group=f"{group5}-stub",
                             inflight=args.inflight // 8)  # fmt: skip
                rust5 = f"{group5}-rust"  # the driver's group, reading the same backlog
                with Admin(ns) as admin:
                    for mq in admin.topic_stats(topics[5]):
                        admin.commit_offset(stub5["group"], mq, 0)
                        admin.commit_offset(rust5, mq, 0)
                recvs = [
                    ("receive+ack 5.x (gRPC)", lambda spec=recv5: py5(spec)),
                    ("receive+ack gRPC stub", lambda spec=stub5: py5(spec)),
                    ("receive+ack Rust driver", lambda g=rust5, t=topics[5]: drive(
                        "receive", endpoint, topic=t, group=g, seconds=args.seconds,
                        inflight=args.inflight // 4, messages=args.backlog)),
                    ("consume 4.x (remoting)", lambda t=topics[4]: consume_4x(
                        ns, t, args.seconds, args.backlog)),
                    # The same backlog pulled from Rust (offsets from 0, no consumer state).
                    ("consume 4.x Rust pull driver", lambda t=topics[4], g=f"bench-grpc-4x-pull-{r}": pull_drive(
                        broker.broker, topic=t, group=g, queues=4,
                        inflight=args.inflight // 4, seconds=args.seconds,
                        messages=args.backlog)),
                    # Pops from a new group start at the first offset (initMode 0).
                    ("pop+ack 4.x Rust pop driver", lambda t=topics["pop"], g=f"bench-grpc-pop-{r}": pop_drive(
                        broker.broker, topic=t, group=g, **{"broker-name": broker_name},
                        inflight=args.inflight // 4, seconds=args.seconds,
                        messages=args.backlog)),
                ]  # fmt: skip
                for name, fn in recvs if r % 2 == 0 else recvs[::-1]:
                    m.run(broker, name, args.seconds, fn)
        finally:
            broker.stop()
    rate = {k: statistics.median(v) for k, v in m.rates.items()}
    cpu = {k: statistics.median(v) for k, v in m.cpu_us.items()}
    print(f"\nmedians of {args.rounds} rounds, {args.threads} threads, {args.size} B:")
    for k in rate:
        unit = "call" if k.startswith("empty call") else "msg"
        print(f"  {k:28} {rate[k]:10,.0f} {unit}/s  broker CPU {cpu[k]:6.2f} us/{unit}")
    # Targets: a gRPC send at most 2 x a 4.x send's broker CPU, a receive+ack at most 3 x a
    # 4.x pull's (issue 44), as messages per broker CPU second relative to the 4.x path.
    for a, b, target in (("send 5.x (gRPC)", "send 4.x (remoting)", 0.5),
                         ("send gRPC stub", "send 4.x (remoting)", 0.5),
                         ("receive+ack 5.x (gRPC)", "consume 4.x (remoting)", 0.33),
                         ("receive+ack gRPC stub", "consume 4.x (remoting)", 0.33),
                         ("receive+ack Rust driver", "consume 4.x (remoting)", 0.33),
                         ("receive+ack Rust driver", "consume 4.x Rust pull driver", 0.33),
                         ("pop+ack 4.x Rust pop driver", "consume 4.x Rust pull driver", None),
                         ("receive+ack Rust driver", "pop+ack 4.x Rust pop driver", None)):  # fmt: skip
        goal = f" (target >= {target})" if target else ""
        print(f"{a} / {b}: rate {rate[a] / rate[b]:.2f}, broker messages per CPU second "
              f"{cpu[b] / cpu[a]:.2f}{goal}")  # fmt: skip
    # Two calls per received batch of 32 (receive, ack) at the empty call's cost: what the
    # gRPC path costs per message before any message work, beside the whole 4.x path.
    for empty in ("empty call gRPC stub", "empty call Rust driver"):
        floor = 2 * cpu[empty] / 32
        print(f"two calls of '{empty}' per 32 messages: {floor:.2f} us/msg of broker CPU; the "
              f"whole 4.x consume path: {cpu['consume 4.x (remoting)']:.2f} us/msg "
              f"({cpu['consume 4.x Rust pull driver']:.2f} pulled from Rust)")  # fmt: skip
    return 0
