"""The transactional Spark sink (``option("transactional", "true")``) against a real broker
whose transaction check runs every 300 ms: a batch write is visible all at once, exactly
once; a write whose task fails after storing rows leaves nothing visible, even after the
broker's checks settle its half messages; a streaming micro-batch replayed after a crash
between the sink's commit and the checkpoint's adds nothing."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import functions as F  # noqa: E402
from servers import dev  # noqa: E402
from test_spark import create, online, send  # noqa: E402

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def tx_dev(tmp_path_factory: pytest.TempPathFactory):
    store = tmp_path_factory.mktemp("spark-tx") / "store"
    # Checks every 300 ms; a half message is given up after transactionCheckMax checks that
    # find no decision, so that many must span a micro-batch on a loaded machine (RocketMQ's
    # 15 checks would be 5 s here: a slow first batch was given up before its commit).
    settings = {
        "transactionCheckInterval": "300",
        "transactionTimeOut": "500",
        "transactionCheckMax": "400",
    }
    server = dev(store, settings=settings).start()
    yield server
    assert server.stop() == 0, server.text()


def write(df, dev, topic: str) -> None:
    df.write.format("rocketmq").option("namesrv", dev.namesrv).option("topic", topic).option(
        "transactional", "true"
    ).mode("append").save()


def bodies(spark, dev, topic: str) -> list[bytes]:
    return sorted(r.body for r in online(spark, dev, topic).collect())


def test_a_batch_write_is_visible_once_or_not_at_all(spark, tx_dev):
    create(tx_dev, "SparkTx", 2)
    rows = spark.range(200).repartition(4).select(F.format_string("r%d", "id").alias("body"))
    write(rows, tx_dev, "SparkTx")
    want = sorted(f"r{i}".encode() for i in range(200))
    assert bodies(spark, tx_dev, "SparkTx") == want

    # One task fails after storing some of its rows (small Arrow batches: rows go out in
    # several batches per task, so earlier ones are stored as half messages first).
    def fail(i):  # type: ignore[no-untyped-def]
        if i == 399:
            raise ValueError("injected failure")
        return f"f{i}"

    fail_late = F.udf(fail, "string", useArrow=False)

    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "10")
    try:
        failing = spark.range(200, 400, numPartitions=4).select(fail_late("id").alias("body"))
        with pytest.raises(Exception, match="injected failure"):
            write(failing, tx_dev, "SparkTx")
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    time.sleep(3)  # checks every 300 ms: the failed write's half messages are settled
    assert bodies(spark, tx_dev, "SparkTx") == want, "nothing of the failed write"


def test_a_replayed_micro_batch_adds_nothing(spark, tx_dev, tmp_path: Path):
    create(tx_dev, "SparkTxIn", 2)
    send(tx_dev, "SparkTxIn", [f"s{i}".encode() for i in range(90)])
    checkpoint = tmp_path / "ck"

    def run() -> None:
        query = (
            spark.readStream.format("rocketmq")
            .option("namesrv", tx_dev.namesrv)
            .option("topic", "SparkTxIn")
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "40")
            .load()
            .select("body")
            .writeStream.format("rocketmq")
            .option("namesrv", tx_dev.namesrv)
            .option("topic", "SparkTxOut")
            .option("transactional", "true")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(180) and query.exception() is None

    run()
    want = sorted(f"s{i}".encode() for i in range(90))
    assert bodies(spark, tx_dev, "SparkTxOut") == want
    # A crash after the sink committed the last micro-batch but before Spark recorded it:
    # the restarted query runs that micro-batch again.
    last = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    for name in (str(last), f".{last}.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    run()
    assert (checkpoint / "commits" / str(last)).exists(), "the micro-batch ran again"
    assert bodies(spark, tx_dev, "SparkTxOut") == want, "no duplicate"
    send(tx_dev, "SparkTxIn", [f"t{i}".encode() for i in range(10)])
    run()
    assert bodies(spark, tx_dev, "SparkTxOut") == sorted(
        want + [f"t{i}".encode() for i in range(10)]
    ), "no gap"
