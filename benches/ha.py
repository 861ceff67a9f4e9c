"""Replication: a master and its slave (separate processes, loopback), measured in one run.

- Replication throughput: batch load (``rocketpy bench producer -b 64``) on an ASYNC_MASTER
  while the slave's queues are sampled: the slave's message rate and MB/s (record bytes), its
  largest lag behind the master, and how long it takes to catch up after the load stops.
- SYNC_MASTER vs ASYNC_MASTER: 64 threads of synchronous single sends against each role in
  alternating rounds (the same master restarted with the other ``brokerRole``, same store);
  rates, their ratio (target >= 0.5) and the p99 send latency of both.

Run: ``make bench-ha`` (or ``python benches/ha.py [--seconds 8] [--rounds 2]``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from servers import ServerProcess, broker, free_port, namesrv

from rocketpy import Message, Producer, SendStatus
from rocketpy._native import RemotingClient
from rocketpy.admin import Admin
from rocketpy.protocol import RequestCode

TOPIC = "BenchmarkTest"
QUEUES = 8
SIZE = 1024


def queue_total(client: RemotingClient, addr: str) -> int:
    """Messages in TOPIC on the broker at ``addr`` (sum of its queues' max offsets)."""
    total = 0
    for q in range(QUEUES):
        resp = client.invoke(addr, RequestCode.GET_MAX_OFFSET, dict(topic=TOPIC, queue_id=q))
        total += int(resp.header.offset or 0)
    return total


def bench(ns_addr: str, seconds: float, *args: str) -> dict:  # type: ignore[type-arg]
    command = [sys.executable, "-m", "rocketpy", "bench", "producer", "-n", ns_addr, "-t", TOPIC]
    out = subprocess.run(
        [*command, "-s", str(SIZE), "-d", str(seconds), "-i", "100", "--json", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def wait_sync_ok(ns_addr: str) -> None:
    with Producer("ha-bench-probe", ns_addr) as p:
        deadline = time.monotonic() + 60
        while p.send(Message(TOPIC, b"probe")).status is not SendStatus.SEND_OK:
            if time.monotonic() > deadline:
                raise SystemExit("the slave never connected")
            time.sleep(0.2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rocketpy-bench-ha-"))
    ns_port, master_port, ha_port, slave_port = free_port(), free_port(), free_port(), free_port()
    ns_addr = f"127.0.0.1:{ns_port}"
    master_addr, slave_addr = f"127.0.0.1:{master_port}", f"127.0.0.1:{slave_port}"
    common = {"brokerName": "bench-ha", "mapedFileSizeCommitLog": str(256 * 1024 * 1024)}

    def master(role: str) -> ServerProcess:
        settings = {**common, "brokerRole": role, "haListenPort": str(ha_port)}
        return broker(ns_addr, master_port, work / "master", settings).start()

    ns = namesrv(ns_port).start()
    m = master("ASYNC_MASTER")
    slave = broker(
        ns_addr, slave_port, work / "slave", {**common, "brokerRole": "SLAVE", "brokerId": "1"}
    ).start()
    client = RemotingClient()
    try:
        with Admin(ns_addr) as admin:
            admin.create_topic(TOPIC, queues=QUEUES)
        wait_sync_ok(ns_addr)

        # Replication throughput under batch load.
        samples: list[tuple[float, int, int]] = []
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                samples.append(
                    (
                        time.monotonic(),
                        queue_total(client, master_addr),
                        queue_total(client, slave_addr),
                    )
                )
                time.sleep(0.25)

        sampler = threading.Thread(target=sample)
        sampler.start()
        load = bench(ns_addr, args.seconds, "-w", "4", "-b", "64")
        load_end = time.monotonic()
        target = queue_total(client, master_addr)
        while queue_total(client, slave_addr) < target and time.monotonic() < load_end + 60:
            time.sleep(0.05)
        caught_up = time.monotonic() - load_end
        stop.set()
        sampler.join()
        t0, _, s0 = samples[0]
        t1, _, s1 = samples[-1]
        slave_rate = (s1 - s0) / (t1 - t0)
        max_lag = max(mm - ss for _, mm, ss in samples)
        record = SIZE + 100  # body plus a record's fixed fields, topic and properties
        print(
            f"replication: master took {load['total']['tps']:,.0f} msg/s in batches of 64 "
            f"({load['total']['mb_per_s']:.1f} MB/s of bodies); the slave applied "
            f"{slave_rate:,.0f} msg/s (~{slave_rate * record / 1e6:.1f} MB/s of records), "
            f"lagged at most {max_lag:,} messages and caught up {caught_up:.2f} s after the load",
            flush=True,
        )

        # SYNC_MASTER vs ASYNC_MASTER, alternating.
        rates: dict[str, list[float]] = {"ASYNC_MASTER": [], "SYNC_MASTER": []}
        p99: dict[str, list[float]] = {"ASYNC_MASTER": [], "SYNC_MASTER": []}
        role = "ASYNC_MASTER"
        for _ in range(args.rounds):
            for role_now in ("ASYNC_MASTER", "SYNC_MASTER"):
                if role_now != role:
                    m.stop()
                    m = master(role_now)
                    role = role_now
                    wait_sync_ok(ns_addr)
                r = bench(ns_addr, args.seconds, "-w", "64")
                rates[role].append(r["total"]["tps"])
                p99[role].append(r["total"]["p99_ms"])
                print(
                    f"{role:12s} 64 threads: {r['total']['tps']:>9,.0f} msg/s  "
                    f"p50 {r['total']['p50_ms']:.2f} ms  p99 {r['total']['p99_ms']:.2f} ms  "
                    f"failures {r['total']['failures']}",
                    flush=True,
                )
        a, s = statistics.median(rates["ASYNC_MASTER"]), statistics.median(rates["SYNC_MASTER"])
        print(
            f"SYNC_MASTER / ASYNC_MASTER = {s / a:.2f} (medians {s:,.0f} / {a:,.0f} msg/s); "
            f"p99 {statistics.median(p99['SYNC_MASTER']):.2f} ms vs "
            f"{statistics.median(p99['ASYNC_MASTER']):.2f} ms",
            flush=True,
        )
    finally:
        client.shutdown()
        slave.stop()
        m.stop()
        ns.stop()
        # The stores hold gigabytes after a run; a bench leaves no disk behind.
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
