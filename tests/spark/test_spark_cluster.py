"""The ``rocketmq`` data source on a Spark standalone cluster (a master and two workers,
separate processes on loopback): the source reaches the executors' Python workers as an
installed package, as in production, and batch reads (online and offline), UDFs, a streaming
read with checkpoint and restart, and the sink work there."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import functions as F  # noqa: E402
from test_spark import create, online, send  # noqa: E402
from test_spark_offsets import lag  # noqa: E402

from helpers import wait_until  # noqa: E402
from pyspark_rocketmq.local_cluster import SparkCluster, spark_session  # noqa: E402
from pyspark_rocketmq.udfs import body_as_string  # noqa: E402

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def cluster_spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with SparkCluster(tmp_path_factory.mktemp("spark-cluster"), workers=2) as cluster:
        session = spark_session(
            cluster.url, "rocketpy-cluster-tests",
            **{"spark.executor.memory": "512m", "spark.executor.cores": "1"},
        )  # fmt: skip
        yield session
        session.stop()


def executor_pid() -> Any:
    """The process id of the Python worker evaluating each row."""
    from pyspark.sql.types import IntegerType

    return F.udf(lambda: os.getpid(), IntegerType())()


def test_batch_reads_and_udfs_run_on_the_executors(cluster_spark, shared_dev):
    spark = cluster_spark
    create(shared_dev, "ClusterBatch", 4)
    send(shared_dev, "ClusterBatch", [f"m{i}".encode() for i in range(400)])
    # A task per queue (no packing), so both executors read.
    df = online(spark, shared_dev, "ClusterBatch", minRecordsPerPartition="1").select(
        "queueId", "queueOffset", body_as_string("body").alias("text"), executor_pid().alias("pid")
    )
    rows = df.collect()
    assert sorted(r.text for r in rows) == sorted(f"m{i}" for i in range(400))
    pids = {r.pid for r in rows}
    assert len(pids) >= 2 and os.getpid() not in pids, "read by the executors' Python workers"

    offline = (
        spark.read.format("rocketmq")
        .option("storePath", str(shared_dev.store))
        .option("topic", "ClusterBatch")
        .load()
        .select("queueId", "queueOffset", body_as_string("body").alias("text"))
    )
    assert sorted(map(tuple, offline.collect())) == sorted(
        (r.queueId, r.queueOffset, r.text) for r in rows
    )


def test_streaming_with_checkpoint_restart_into_the_sink(cluster_spark, shared_dev, tmp_path):
    spark = cluster_spark
    create(shared_dev, "ClusterIn", 2)
    create(shared_dev, "ClusterOut", 2)
    send(shared_dev, "ClusterIn", [f"a{i}".encode() for i in range(300)])

    def run() -> int:
        stream = (
            spark.readStream.format("rocketmq")
            .option("namesrv", shared_dev.namesrv)
            .option("topic", "ClusterIn")
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "120")
            .option("groupId", "cluster-stream")
            .load()
        )
        query = (
            stream.select(F.concat(F.lit(b"copy-"), "body").alias("body"))
            .writeStream.format("rocketmq")
            .option("namesrv", shared_dev.namesrv)
            .option("topic", "ClusterOut")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(300)
        assert query.exception() is None
        return sum(p["numInputRows"] for p in query.recentProgress)

    assert run() == 300
    send(shared_dev, "ClusterIn", [f"b{i}".encode() for i in range(50)])
    assert run() == 50, "the restarted query reads only what is new"
    copied = online(spark, shared_dev, "ClusterOut").select("body").collect()
    assert sorted(r.body for r in copied) == sorted(
        [f"copy-a{i}".encode() for i in range(300)] + [f"copy-b{i}".encode() for i in range(50)]
    )
    assert wait_until(lambda: lag(shared_dev, "cluster-stream", "ClusterIn") == (350, 0))
