"""Spark read of N messages (default 1M of 1 KiB) through the ``rocketmq`` source versus the
same rows from Parquet, in one run; prints both times and parquet/rocketmq (>= 1.0 means the
source is no slower than Parquet).

    python spark/benchmarks/read_vs_parquet.py [--messages N] [--size BYTES] [--queues Q]
        [--online]     # through a broker (`rocketpy dev` started here) instead of storePath

The aggregate touches every body, so both sides really read the bytes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rocketpy import Message
from rocketpy.admin import Admin
from rocketpy.server import DevServer
from rocketpy.store import MessageStore

TOPIC = "SparkBench"


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


def timed(label: str, df: DataFrame, repeat: int) -> tuple[float, list[tuple[int, int, int]]]:
    best, result = float("inf"), []
    for _ in range(repeat):
        t = time.perf_counter()
        result = aggregate(df)
        best = min(best, time.perf_counter() - t)
    print(f"{label:>30}: {best:7.2f} s (best of {repeat})", flush=True)
    return best, result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--messages", type=int, default=1_000_000)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--queues", type=int, default=8)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--online", action="store_true", help="read through a broker")
    p.add_argument("--master", default="local[2]")
    args = p.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = Path(tempfile.mkdtemp(prefix="rocketpy-spark-bench-"))
    dev = None
    try:
        t = time.perf_counter()
        fill(work / "store", args.messages, args.size, args.queues)
        print(f"stored {args.messages:,} messages of {args.size} B in "
              f"{time.perf_counter() - t:.1f} s", flush=True)  # fmt: skip
        spark = (
            SparkSession.builder.master(args.master)
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.driver.memory", "4g")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        reader = spark.read.format("rocketmq").option("topic", TOPIC)
        if args.online:
            dev = DevServer(namesrv_port=0, broker_port=0, store_dir=str(work / "store")).start()
            with Admin(dev.namesrv_addr) as admin:  # the embedded store wrote no topic config
                admin.create_topic(TOPIC, queues=args.queues)
            reader = reader.option("namesrv", dev.namesrv_addr)
        else:
            reader = reader.option("storePath", str(work / "store"))
        full = reader.load()
        # The aggregate needs two columns; Parquet reads only those, so the source is given
        # the same projection (a user schema: Python data sources get no pruning otherwise).
        pruned = reader.schema("queueId int, body binary").load()
        full.write.parquet(str(work / "parquet"))  # every column, as the source has them
        parquet = spark.read.parquet(str(work / "parquet"))
        mode = "online" if args.online else "offline"
        p_time, p_result = timed("parquet", parquet, args.repeat)
        r_time, r_result = timed(f"rocketmq {mode}", pruned, args.repeat)
        f_time, f_result = timed(f"rocketmq {mode}, all columns", full, args.repeat)
        assert r_result == p_result == f_result, "every read must see the same rows"
        total = sum(n for _, n, _ in r_result)
        print(f"rows {total:,}; rocketmq {total / r_time:,.0f} rows/s, "
              f"parquet {total / p_time:,.0f} rows/s", flush=True)  # fmt: skip
        print(f"parquet/rocketmq = {p_time / r_time:.2f} (target >= 1.0); "
              f"with all 12 columns decoded: {p_time / f_time:.2f}", flush=True)  # fmt: skip
        spark.stop()
    finally:
        if dev is not None:
            dev.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
