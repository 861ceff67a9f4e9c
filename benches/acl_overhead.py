"""What ACL costs the send path: ``rocketpy bench producer`` throughput against one broker
restarted in alternating rounds with ``aclEnable=true`` (the client signs every request, the
broker verifies every signature and checks the account's rights) and ``aclEnable=false``, same
store, same run. Two workloads: synchronous single sends (128 B bodies, 8 threads) and batches
of 100 (100 B bodies, 4 threads). Rounds come in adjacent pairs, off/on then on/off, and each
pair gives one ratio: this machine's throughput drifts by tens of percent over minutes, so
only rounds next to each other compare.

Prints each pair, then per workload the median of the pairs' ratios (target: on/off >= 0.95):
end to end (client and broker share this machine's cores, and both hash every request: the
client to sign it, the broker to verify it) and per broker CPU second (messages the broker
stores per second of its own CPU time, what ACL costs a broker whose clients run elsewhere).

Run: ``make bench-acl`` (or ``python benches/acl_overhead.py [--seconds 5] [--pairs 4]``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from servers import ServerProcess, broker, free_port, namesrv

from rocketpy.admin import Admin

TOPIC = "BenchmarkTest"
ACCOUNT = ("bench-writer", "bench-writer-secret")
ACL = f"""
accounts:
  - accessKey: {ACCOUNT[0]}
    secretKey: {ACCOUNT[1]}
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: ["{TOPIC}=PUB"]
"""
BROKER_PID = [0]  # the broker process of the current round
WORKLOADS = {
    "sync single": ["-s", "128", "-b", "1", "-w", "8"],
    "batch of 100": ["-s", "100", "-b", "100", "-w", "4"],
}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench(ns_addr: str, seconds: float, workload: list[str], acl_on: bool) -> tuple[float, float]:
    """Messages per second end to end, and messages per broker CPU second."""
    command = [sys.executable, "-m", "rocketpy", "bench", "producer", "-n", ns_addr, "-t", TOPIC]
    if acl_on:
        command += ["--ak", ACCOUNT[0], "--sk", ACCOUNT[1]]
    cpu = cpu_seconds(BROKER_PID[0])
    out = subprocess.run(
        [*command, *workload, "-d", str(seconds), "-i", "100", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    cpu = cpu_seconds(BROKER_PID[0]) - cpu
    assert result["total"]["failures"] == 0, result
    return float(result["total"]["tps"]), result["total"]["messages"] / max(cpu, 1e-3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--pairs", type=int, default=4)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rocketpy-bench-acl-"))
    acl_file = work / "plain_acl.yml"
    acl_file.write_text(ACL)
    ns_port, broker_port = free_port(), free_port()
    ns_addr = f"127.0.0.1:{ns_port}"
    common = {"mapedFileSizeCommitLog": str(256 * 1024 * 1024), "brokerName": "bench-acl"}

    def start(acl_on: bool) -> ServerProcess:
        settings = dict(common, aclEnable=str(acl_on).lower(), aclFile=str(acl_file))
        started = broker(ns_addr, broker_port, work / "store", settings).start()
        assert started.proc is not None
        BROKER_PID[0] = started.proc.pid
        return started

    ns = namesrv(ns_port).start()
    b = start(False)
    ratios: dict[str, list[float]] = {name: [] for name in WORKLOADS}
    cpu_ratios: dict[str, list[float]] = {name: [] for name in WORKLOADS}
    try:
        with Admin(ns_addr) as admin:
            admin.create_topic(TOPIC, queues=8)
        time.sleep(1)
        bench(ns_addr, 2, WORKLOADS["batch of 100"], False)  # warm-up: page cache, connections
        current = False
        for pair in range(args.pairs):
            rate: dict[tuple[str, bool], tuple[float, float]] = {}
            for acl_on in ((False, True), (True, False))[pair % 2]:
                if acl_on != current:
                    b.stop()
                    b = start(acl_on)
                    current = acl_on
                    time.sleep(1)
                for name, workload in WORKLOADS.items():
                    rate[name, acl_on] = bench(ns_addr, args.seconds, workload, acl_on)
            for name in WORKLOADS:
                (on, on_cpu), (off, off_cpu) = rate[name, True], rate[name, False]
                ratios[name].append(on / off)
                cpu_ratios[name].append(on_cpu / off_cpu)
                print(
                    f"pair {pair + 1} {name:>12}: on {on:>9,.0f} msg/s  off {off:>9,.0f} msg/s  "
                    f"on/off {on / off:.3f}; per broker CPU s on {on_cpu:>9,.0f} "
                    f"off {off_cpu:>9,.0f} on/off {on_cpu / off_cpu:.3f}",
                    flush=True,
                )
    finally:
        b.stop()
        ns.stop()
        # The store holds gigabytes after a run; a bench leaves no disk behind.
        shutil.rmtree(work, ignore_errors=True)
    for name, values in ratios.items():
        per_cpu = cpu_ratios[name]
        print(
            f"ACL on / off, {name}: end to end {statistics.median(values):.3f} "
            f"(range {min(values):.3f}-{max(values):.3f}), per broker CPU second "
            f"{statistics.median(per_cpu):.3f} (range {min(per_cpu):.3f}-{max(per_cpu):.3f}); "
            f"medians of {len(values)} adjacent pairs",
            flush=True,
        )


if __name__ == "__main__":
    main()
