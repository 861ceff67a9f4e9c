"""Streaming job: a topic -> decoded rows appended to Parquet, with a checkpoint.

Stop it (Ctrl-C) and start it again with the same --checkpoint: it continues where it
stopped, with no gap and no duplicate in its output.

    python spark/examples/streaming_with_checkpoint.py --namesrv 127.0.0.1:9876 \\
        --topic TopicTest --out /tmp/rocketpy-stream --checkpoint /tmp/rocketpy-stream-ckpt

--available-now processes what is stored now (in micro-batches of at most
--max-per-trigger messages) and exits.
"""

from __future__ import annotations

import argparse
import os
import sys

from pyspark.sql import SparkSession

from pyspark_rocketmq.udfs import body_as_string


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--namesrv", default="127.0.0.1:9876")
    p.add_argument("--topic", default="TopicTest")
    p.add_argument("--out", default="/tmp/rocketpy-stream")
    p.add_argument("--checkpoint", default="/tmp/rocketpy-stream-checkpoint")
    p.add_argument("--max-per-trigger", type=int, default=10_000)
    p.add_argument("--available-now", action="store_true")
    args = p.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = SparkSession.builder.master("local[2]").appName("rocketmq-stream").getOrCreate()
    stream = (
        spark.readStream.format("rocketmq")
        .option("namesrv", args.namesrv)
        .option("topic", args.topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(args.max_per_trigger))
        .load()
    )
    rows = stream.select(
        "queueId",
        "queueOffset",
        "tags",
        "storeTimestamp",
        body_as_string("body").alias("text"),
    )
    writer = (
        rows.writeStream.format("parquet")
        .option("path", args.out)
        .option("checkpointLocation", args.checkpoint)
    )
    writer = writer.trigger(availableNow=True) if args.available_now else writer
    query = writer.start()
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    spark.stop()


if __name__ == "__main__":
    main()
