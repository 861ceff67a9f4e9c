"""Streaming job: orders from a topic, joined with a Parquet product table, written to
another topic.

Each order message is JSON, ``{"order": "o-1", "sku": "A-1", "qty": 3}``. The job looks the
SKU up in the products table (Parquet with columns ``sku``, ``name``, ``price``) and sends
``{"order", "sku", "qty", "name", "amount"}`` to the output topic, keyed by the order id and
tagged ``priced`` (or ``unknown-sku`` when the table has no such SKU: nothing is dropped).

    python spark/examples/enrich_with_parquet.py --namesrv 127.0.0.1:9876 \\
        --topic Orders --products /data/products.parquet --out-topic OrdersPriced \\
        --checkpoint /tmp/rocketpy-enrich-ckpt

--write-demo-products PATH writes a small products table there first. --available-now
processes what is stored now and exits; started again with the same --checkpoint it
continues where it stopped.
"""

from __future__ import annotations

import argparse
import os
import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

ORDER_SCHEMA = "order string, sku string, qty int"


def write_demo_products(spark: SparkSession, path: str) -> None:
    """Three products, as a dimension table would hold them."""
    rows = [("A-1", "anvil", 25.0), ("B-2", "bucket", 4.5), ("C-3", "crowbar", 12.25)]
    spark.createDataFrame(rows, "sku string, name string, price double").write.mode(
        "overwrite"
    ).parquet(path)


def enrich(orders: DataFrame, products: DataFrame) -> DataFrame:
    """Order messages (the source's rows) to the sink's columns: body, keys, tags."""
    parsed = orders.select(
        F.from_json(F.col("body").cast("string"), ORDER_SCHEMA).alias("o")
    ).select("o.*")
    joined = parsed.join(F.broadcast(products), on="sku", how="left")
    out = F.struct(
        "order",
        "sku",
        "qty",
        "name",
        F.round(F.col("qty") * F.col("price"), 2).alias("amount"),
    )
    return joined.select(
        F.to_json(out).alias("body"),
        F.col("order").alias("keys"),
        F.when(F.col("name").isNull(), "unknown-sku").otherwise("priced").alias("tags"),
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--namesrv", default="127.0.0.1:9876")
    p.add_argument("--topic", default="Orders")
    p.add_argument("--out-topic", default="OrdersPriced")
    p.add_argument("--products", required=True, help="Parquet: sku, name, price")
    p.add_argument("--checkpoint", default="/tmp/rocketpy-enrich-checkpoint")
    p.add_argument("--max-per-trigger", type=int, default=10_000)
    p.add_argument("--write-demo-products", action="store_true")
    p.add_argument("--available-now", action="store_true")
    p.add_argument("--master", default="local[2]")
    args = p.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = SparkSession.builder.master(args.master).appName("rocketmq-enrich").getOrCreate()
    if args.write_demo_products:
        write_demo_products(spark, args.products)
    orders = (
        spark.readStream.format("rocketmq")
        .option("namesrv", args.namesrv)
        .option("topic", args.topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(args.max_per_trigger))
        .load()
    )
    writer = (
        enrich(orders, spark.read.parquet(args.products))
        .writeStream.format("rocketmq")
        .option("namesrv", args.namesrv)
        .option("topic", args.out_topic)
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
