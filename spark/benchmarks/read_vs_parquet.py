"""Spark read of N messages (default 1M of 1 KiB) through the ``rocketmq`` source — from the
store files (offline) and through a broker (online) — versus the same rows from Parquet, in
one run; prints each time and parquet/rocketmq (>= 1.0: the source is no slower).

    python spark/benchmarks/read_vs_parquet.py [--messages N] [--size BYTES] [--queues Q]
        [--mode offline|online|both] [--cluster WORKERS] [--rounds R] [--json PATH]

``--cluster W`` runs on a standalone cluster started here (a master and W one-core workers,
separate JVMs on loopback) instead of ``local[2]``. Rounds rotate the order of the reads;
the figures are medians. The aggregate touches every body, so every read really reads the
bytes; each side reads only the two columns it needs (Python data sources get no pruning
from Spark, so the source is given that schema, as a user would).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pyspark_rocketmq.local_cluster import SparkCluster, spark_session
from rocketpy import Message
from rocketpy.admin import Admin
from rocketpy.server import DevServer
from rocketpy.store import MessageStore

TOPIC = "SparkBench"
TARGETS = {"offline": 1.0, "online": 0.5}


def fill(store: Path, messages: int, size: int, queues: int) -> None:
    # Distinct random bodies: identical ones would let Parquet dictionary-encode them away.
    with MessageStore(store, mapped_file_size_commit_log=1 << 30) as s:
        per_batch = 1000
        for start in range(0, messages, per_batch):
            n = min(per_batch, messages - start)
            q = (start // per_batch) % queues
            block = os.urandom(n * size)
            s.put_batch(
                [
                    Message(TOPIC, block[i * size : (i + 1) * size], keys=f"k{start + i}")
                    for i in range(n)
                ],
                q,
            )


def aggregate(df: DataFrame) -> list[tuple[int, int, int]]:
    rows = (
        df.groupBy("queueId")
        .agg(F.count("*").alias("n"), F.sum(F.length("body")).alias("bytes"))
        .orderBy("queueId")
        .collect()
    )
    return [(r.queueId, r.n, r.bytes) for r in rows]


def timed(df: DataFrame) -> tuple[float, list[tuple[int, int, int]]]:
    t = time.perf_counter()
    result = aggregate(df)
    return time.perf_counter() - t, result


def small_ranges(reader: Any, args: argparse.Namespace, counts: dict[int, int]) -> dict[str, float]:
    """A micro-batch-sized read — the first 1,000 messages of each queue — with its queue
    ranges packed into one task (the default, ``minRecordsPerPartition``) and with a task per
    queue: what the ~100 ms fixed cost of a Python data source task amounts to."""
    ends = {TOPIC: {"broker-a": {str(q): min(1000, n) for q, n in counts.items()}}}
    base = reader.option("endingOffsets", json.dumps(ends)).schema("queueId int, body binary")
    out: dict[str, float] = {}
    for label, per_queue in (("packed", "100000"), ("task per queue", "1")):
        df = base.option("minRecordsPerPartition", per_queue).load()
        seconds = statistics.median(timed(df)[0] for _ in range(max(3, args.rounds)))
        out[label] = seconds
        tasks = df.rdd.getNumPartitions()
        print(f"{len(counts)} x <= 1,000 messages, {label} ({tasks} tasks): {seconds:.3f} s")
    return out


def session(args: argparse.Namespace, work: Path) -> tuple[SparkSession, SparkCluster | None]:
    if not args.cluster:
        conf = {"spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "4"}
        return spark_session(args.master, "rocketmq-bench", **conf), None
    cluster = SparkCluster(work / "cluster", workers=args.cluster, cores=1, memory="3g")
    cluster.__enter__()
    conf = {
        "spark.executor.memory": "2g",
        "spark.executor.cores": "1",
        "spark.driver.memory": "2g",
        "spark.sql.shuffle.partitions": "4",
    }
    return spark_session(cluster.url, "rocketmq-bench", **conf), cluster


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--messages", type=int, default=1_000_000)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--queues", type=int, default=8)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--mode", choices=("offline", "online", "both"), default="offline")
    p.add_argument("--online", action="store_true", help="same as --mode online")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--cluster", type=int, default=0, metavar="WORKERS")
    p.add_argument(
        "--work", help="keep the store and Parquet here, reused by the next run (default: a "
        "temporary directory, removed)",
    )  # fmt: skip
    p.add_argument("--json", help="also write the figures here")
    args = p.parse_args()
    modes = ["offline", "online"] if args.mode == "both" else [args.mode]
    if args.online:
        modes = ["online"]

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = Path(args.work or tempfile.mkdtemp(prefix="rocketpy-spark-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    dev: DevServer | None = None
    cluster: SparkCluster | None = None
    try:
        params = json.dumps({"messages": args.messages, "size": args.size, "queues": args.queues})
        marker = work / "filled.json"
        if marker.exists() and marker.read_text() == params:  # --work of an earlier run
            print(f"reusing the store and Parquet in {work}", flush=True)
        else:
            for old in ("store", "parquet"):
                shutil.rmtree(work / old, ignore_errors=True)
            t = time.perf_counter()
            fill(work / "store", args.messages, args.size, args.queues)
            fill_s = time.perf_counter() - t
            print(f"stored {args.messages:,} messages of {args.size} B in {fill_s:.1f} s")
            marker.write_text(params)
        spark, cluster = session(args, work)
        where = (
            f"standalone cluster, {args.cluster} one-core workers"
            if args.cluster
            else (args.master)
        )
        print(f"spark {spark.version} on {where}", flush=True)

        offline = spark.read.format("rocketmq").option("topic", TOPIC)
        offline = offline.option("storePath", str(work / "store"))
        if not (work / "parquet").is_dir():
            t = time.perf_counter()
            offline.load().write.parquet(str(work / "parquet"))  # every column, as the source
            print(f"wrote Parquet in {time.perf_counter() - t:.1f} s", flush=True)
        reads: dict[str, Callable[[], DataFrame]] = {
            "parquet": lambda: spark.read.parquet(str(work / "parquet")).select("queueId", "body")
        }
        if "offline" in modes:
            reads["offline"] = lambda: offline.schema("queueId int, body binary").load()
        if "online" in modes:
            dev = DevServer(namesrv_port=0, broker_port=0, store_dir=str(work / "store")).start()
            with Admin(dev.namesrv_addr) as admin:  # the embedded store wrote no topic config
                admin.create_topic(TOPIC, queues=args.queues)
            online = spark.read.format("rocketmq").option("topic", TOPIC)
            online = online.option("namesrv", dev.namesrv_addr)
            reads["online"] = lambda: online.schema("queueId int, body binary").load()

        times: dict[str, list[float]] = {name: [] for name in reads}
        results: dict[str, Any] = {}
        names = list(reads)
        for r in range(args.rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order:
                seconds, result = timed(reads[name]())
                times[name].append(seconds)
                results.setdefault(name, result)
                print(f"round {r + 1}: {name:>8} {seconds:7.2f} s", flush=True)
        assert all(res == results["parquet"] for res in results.values()), "same rows everywhere"

        rows = sum(n for _, n, _ in results["parquet"])
        median = {name: statistics.median(ts) for name, ts in times.items()}
        report: dict[str, Any] = {
            "messages": args.messages, "size": args.size, "queues": args.queues,
            "rounds": args.rounds, "spark": spark.version, "where": where,
            "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
            "seconds": median, "rows_per_s": {k: rows / v for k, v in median.items()},
        }  # fmt: skip
        print(f"rows {rows:,}; medians of {args.rounds} rounds:")
        for name, seconds in median.items():
            print(f"  {name:>8}: {seconds:7.2f} s  {rows / seconds:12,.0f} rows/s")
        for mode in modes:
            ratio = median["parquet"] / median[mode]
            report[f"parquet/{mode}"] = ratio
            print(f"parquet/rocketmq {mode} = {ratio:.2f} (target >= {TARGETS[mode]})")
        counts = {q: n for q, n, _ in results["parquet"]}
        report["small_ranges"] = small_ranges(offline, args, counts)
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        spark.stop()
    finally:
        if dev is not None:
            dev.stop()
        if cluster is not None:
            cluster.stop()
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
