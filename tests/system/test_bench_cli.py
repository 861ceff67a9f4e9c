"""``rocketpy bench producer|consumer`` against a real server: every mode runs, prints
interval and total lines, and its JSON totals match what the broker stored."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers import wait_until
from rocketpy.admin import Admin
from rocketpy.bench.stats import Stats
from rocketpy.message import MessageQueue


def bench(*args: str, timeout: float = 120) -> tuple[str, dict]:
    out = subprocess.run(
        [sys.executable, "-m", "rocketpy", "--log-level", "warn", "bench", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    return out.stdout, json.loads(lines[-1])


@pytest.mark.parametrize(
    ("mode", "extra"),
    [
        ("sync", ["--threads", "2", "--keys", "--tags", "TagA"]),
        ("batch", ["--batch", "50"]),
        ("async", ["--async", "--window", "64"]),
        ("async batch", ["--async", "--batch", "20"]),
    ],
)
def test_producer_modes(shared_dev, mode, extra):
    topic = "Bench" + mode.replace(" ", "")
    text, result = bench(
        "producer", "-n", shared_dev.namesrv, "-t", topic, "-s", "100", "-c", "2000",
        "-i", "0.2", *extra,
    )  # fmt: skip
    total = result["total"]
    assert total["messages"] == 2000 and total["failures"] == 0, text
    assert total["bytes"] == 2000 * 100
    assert 0 < total["p50_ms"] <= total["p99_ms"] <= total["p999_ms"] <= total["max_ms"]
    assert "producer   total:" in text and "msg/s" in text
    admin = Admin(shared_dev.namesrv)
    route = admin.topic_route(topic)
    assert route is not None
    queues = [
        MessageQueue(topic, qd.broker_name, q)
        for qd in route.queue_datas
        for q in range(qd.read_queue_nums)
    ]
    # The warm-up message and the 2,000 timed ones.
    assert sum(admin.max_offset(mq) for mq in queues) == 2001


def test_producer_transaction_mode_reports_both_rates(shared_dev):
    text, result = bench(
        "producer", "-n", shared_dev.namesrv, "-t", "BenchTx", "-c", "300", "--transaction",
        "--threads", "2", "-i", "0.5",
    )  # fmt: skip
    assert result["mode"] == "transaction" and result["total"]["messages"] == 300, text
    assert result["plain"]["messages"] == 300 and result["total"]["failures"] == 0
    assert result["ratio"] > 0 and "transactional / plain synchronous sends:" in text
    admin = Admin(shared_dev.namesrv)
    route = admin.topic_route("BenchTx")
    assert route is not None
    queues = [MessageQueue("BenchTx", qd.broker_name, q) for qd in route.queue_datas
              for q in range(qd.read_queue_nums)]  # fmt: skip
    # Two warm-ups, 300 plain sends and 300 committed transactions.
    assert wait_until(lambda: sum(admin.max_offset(mq) for mq in queues) == 602, 10)


def test_consumer_reads_what_the_producer_sent(shared_dev):
    bench("producer", "-n", shared_dev.namesrv, "-t", "BenchCons", "-c", "3000", "-b", "100")
    text, result = bench(
        "consumer", "-n", shared_dev.namesrv, "-t", "BenchCons", "--from-first",
        "-c", "3001", "-d", "60", "-i", "0.5",
    )  # fmt: skip
    total = result["total"]
    assert total["messages"] == 3001 and total["failures"] == 0, text
    assert "consumer   total:" in text


def test_duration_stops_an_open_ended_run(shared_dev):
    text, result = bench("producer", "-n", shared_dev.namesrv, "-t", "BenchDur", "-d", "1.5")
    assert result["total"]["messages"] > 0
    assert 1.0 < result["total"]["seconds"] < 10, text


def test_stats_percentiles():
    stats = Stats()
    for ms in range(1, 1001):
        stats.record(1, 10, ms / 1000)
    interval = stats.interval()
    assert interval.p50_ms == pytest.approx(500)
    assert interval.p99_ms == pytest.approx(990)
    assert interval.p999_ms == pytest.approx(999)
    assert interval.max_ms == pytest.approx(1000)
    total = stats.total()
    # The run-long histogram is within its 1 % buckets, never below the exact value.
    assert 500 <= total.p50_ms <= 505 and 990 <= total.p99_ms <= 1000
    assert total.messages == 1000 and total.bytes == 10_000
