"""What Prometheus metrics cost the send path: ``rocketpy bench producer`` batch throughput
(100 B bodies, batches of 100, 4 threads) against one broker restarted in alternating rounds
with ``metricsExporterType=PROM`` (scraped every second, as a Prometheus would, only faster)
and ``DISABLE``, same store, same run. Rounds come in adjacent pairs, off/on then on/off, and
each pair gives one ratio: this machine's throughput drifts by tens of percent over minutes,
so only rounds next to each other compare.

Prints each pair, then the median of the pairs' ratios (target: on/off >= 0.97).

Run: ``make bench-metrics`` (or ``python benches/metrics_overhead.py [--seconds 5] [--pairs 6]``).
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
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from servers import ServerProcess, broker, free_port, namesrv

from rocketpy.admin import Admin

TOPIC = "BenchmarkTest"


def bench(ns_addr: str, seconds: float) -> dict:  # type: ignore[type-arg]
    command = [sys.executable, "-m", "rocketpy", "bench", "producer", "-n", ns_addr, "-t", TOPIC]
    out = subprocess.run(
        [*command, "-s", "100", "-b", "100", "-w", "4", "-d", str(seconds), "-i", "100", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def scrape_until(url: str, stop: threading.Event, sizes: list[int]) -> None:
    while not stop.wait(1.0):
        with urllib.request.urlopen(url, timeout=10) as r:
            sizes.append(len(r.read()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--pairs", type=int, default=6)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rocketpy-bench-metrics-"))
    ns_port, broker_port, metrics_port = free_port(), free_port(), free_port()
    ns_addr = f"127.0.0.1:{ns_port}"
    common = {"mapedFileSizeCommitLog": str(256 * 1024 * 1024), "brokerName": "bench-metrics"}

    def start(metrics_on: bool) -> ServerProcess:
        settings = dict(common)
        if metrics_on:
            settings.update(metricsExporterType="PROM", metricsPromExporterPort=str(metrics_port))
        return broker(ns_addr, broker_port, work / "store", settings).start()

    ns = namesrv(ns_port).start()
    b = start(False)
    ratios: list[float] = []
    scraped: list[int] = []
    try:
        with Admin(ns_addr) as admin:
            admin.create_topic(TOPIC, queues=8)
        time.sleep(1)
        bench(ns_addr, 2)  # warm-up: page cache, connections, JIT-less but still
        current = False
        for pair in range(args.pairs):
            rate: dict[bool, float] = {}
            for metrics_on in ((False, True), (True, False))[pair % 2]:
                if metrics_on != current:
                    b.stop()
                    b = start(metrics_on)
                    current = metrics_on
                    time.sleep(1)
                stop = threading.Event()
                scraper = None
                if metrics_on:
                    url = f"http://127.0.0.1:{metrics_port}/metrics"
                    scraper = threading.Thread(target=scrape_until, args=(url, stop, scraped))
                    scraper.start()
                r = bench(ns_addr, args.seconds)
                stop.set()
                if scraper is not None:
                    scraper.join()
                assert r["total"]["failures"] == 0, r
                rate[metrics_on] = r["total"]["tps"]
            ratios.append(rate[True] / rate[False])
            print(
                f"pair {pair + 1}: on {rate[True]:>9,.0f} msg/s  off {rate[False]:>9,.0f} msg/s  "
                f"on/off {ratios[-1]:.3f}",
                flush=True,
            )
    finally:
        b.stop()
        ns.stop()
        # The stores hold gigabytes after a run; a bench leaves no disk behind.
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"metrics on / off = {statistics.median(ratios):.3f} (median of {len(ratios)} adjacent "
        f"pairs, range {min(ratios):.3f}-{max(ratios):.3f}; {len(scraped)} scrapes of "
        f"~{statistics.median(scraped or [0]) / 1024:.0f} KiB during the 'on' rounds)",
        flush=True,
    )


if __name__ == "__main__":
    main()
