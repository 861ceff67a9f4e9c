"""Batch job: a topic -> per-tag aggregation -> Parquet.

Start a server (`make run`, or `rocketpy dev`), send a few messages, then:

    python spark/examples/batch_to_parquet.py --namesrv 127.0.0.1:9876 --topic TopicTest \\
        --out /tmp/topic-stats

Reads everything stored now (startingOffsets=earliest, endingOffsets=latest).
"""

from __future__ import annotations

import argparse
import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pyspark_rocketmq.udfs import body_as_string


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--namesrv", default="127.0.0.1:9876")
    p.add_argument("--topic", default="TopicTest")
    p.add_argument("--out", default="/tmp/rocketpy-topic-stats")
    args = p.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = SparkSession.builder.master("local[2]").appName("rocketmq-batch").getOrCreate()
    messages = (
        spark.read.format("rocketmq")
        .option("namesrv", args.namesrv)
        .option("topic", args.topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    stats = (
        messages.withColumn("text", body_as_string("body"))
        .groupBy(F.coalesce("tags", F.lit("(none)")).alias("tag"))
        .agg(
            F.count("*").alias("messages"),
            F.sum(F.length("body")).alias("body_bytes"),
            F.min("storeTimestamp").alias("first"),
            F.max("storeTimestamp").alias("last"),
            F.first("text").alias("sample"),
        )
    )
    stats.write.mode("overwrite").parquet(args.out)
    spark.read.parquet(args.out).orderBy("tag").show(truncate=40)
    spark.stop()


if __name__ == "__main__":
    main()
