"""The Spark source's sizing of work, against a real ``rocketpy dev`` and store directories:
``maxBytesPerTrigger`` (a soft byte limit per micro-batch, sizes sampled from the consume
queues over QUERY_CONSUME_QUEUE or the store files), small queue ranges packed into few
tasks (``minRecordsPerPartition``) and long ones cut (Kafka's ``maxRecordsPerPartition``), and
Kafka's ``*OffsetsBehindLatest`` figures computed from a query's progress."""

from __future__ import annotations

import os

import pytest

pyspark = pytest.importorskip("pyspark")

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxBytes  # noqa: E402
from test_spark import create, online, send  # noqa: E402
from test_spark_offsets import stream_once  # noqa: E402

from helpers import wait_until  # noqa: E402
from pyspark_rocketmq import OffsetsBehindListener, offsets_behind  # noqa: E402
from pyspark_rocketmq.options import OptionError, ReadOptions  # noqa: E402
from pyspark_rocketmq.source import StreamReader  # noqa: E402
from rocketpy.admin import Admin  # noqa: E402
from rocketpy.message import MessageQueue  # noqa: E402

pytestmark = pytest.mark.spark


def record_size(dev, topic: str) -> int:
    """The stored size of the first message of queue 0 (every test message is alike)."""
    with Admin(dev.namesrv) as admin:
        view = admin.query_consume_queue(MessageQueue(topic, "broker-a", 0), 0, 1)
    return view.units[0].physic_size


def total(offsets: dict, topic: str) -> int:
    return sum(offsets[topic]["broker-a"].values())


def test_max_bytes_per_trigger_bounds_each_micro_batch(spark, shared_dev, tmp_path):
    create(shared_dev, "SparkBytes", 2)
    send(shared_dev, "SparkBytes", [b"x" * 1000] * 200)
    size = record_size(shared_dev, "SparkBytes")
    assert size > 1000
    progress = stream_once(
        spark, shared_dev, "SparkBytes", tmp_path / "cp", maxBytesPerTrigger="50k",
        commitOffsetsToBroker="false",
    )  # fmt: skip
    rows = [p["numInputRows"] for p in progress if p["numInputRows"]]
    assert sum(rows) == 200
    assert all(n * size <= 50 * 1024 for n in rows), rows
    assert max(rows) * size > 40 * 1024, f"close to the limit, not far below: {rows}"

    # Both limits: the tighter one wins.
    both = stream_once(
        spark, shared_dev, "SparkBytes", tmp_path / "cp2", maxBytesPerTrigger="50k",
        maxOffsetsPerTrigger="10", commitOffsetsToBroker="false",
    )  # fmt: skip
    assert {p["numInputRows"] for p in both if p["numInputRows"]} == {10}


def test_max_bytes_reads_one_oversized_message_and_works_offline(shared_dev):
    create(shared_dev, "SparkBigMsg", 1)
    # Random bodies: the producer compresses bodies over 4 KiB, and sizes are as stored.
    send(shared_dev, "SparkBigMsg", [os.urandom(5000) for _ in range(4)])
    for source in ({"namesrv": shared_dev.namesrv}, {"storePath": str(shared_dev.store)}):
        options = {
            **source, "topic": "SparkBigMsg", "startingOffsets": "earliest",
            "maxBytesPerTrigger": "1000", "commitOffsetsToBroker": "false",
        }  # fmt: skip
        reader = StreamReader(ReadOptions.parse(options, streaming=True))
        assert reader.getDefaultReadLimit() == ReadMaxBytes(1000)
        start = reader.initialOffset()
        one = reader.latestOffset(start, reader.getDefaultReadLimit())
        assert total(one, "SparkBigMsg") == 1, f"{source}: progress despite a 5 kB message"
        wide = reader.latestOffset(one, ReadMaxBytes(13_000))  # 2.5 messages
        assert total(wide, "SparkBigMsg") == 3, source
        assert total(reader.latestOffset(one, ReadAllAvailable()), "SparkBigMsg") == 4


def test_small_ranges_share_tasks_and_long_ones_are_cut(spark, shared_dev):
    create(shared_dev, "SparkPack", 8)
    for q in range(8):
        send(shared_dev, "SparkPack", [f"p{q}-{i}".encode() for i in range(10)], queue=q)
    everything = sorted((r.queueId, r.queueOffset) for r in online(
        spark, shared_dev, "SparkPack").collect())  # fmt: skip
    assert len(everything) == 80
    packed = online(spark, shared_dev, "SparkPack")
    assert packed.rdd.getNumPartitions() == 1, "8 ranges of 10 rows: one task"
    apart = online(spark, shared_dev, "SparkPack", minRecordsPerPartition="10")
    assert apart.rdd.getNumPartitions() == 8
    cut = online(spark, shared_dev, "SparkPack", maxRecordsPerPartition="4")
    assert cut.rdd.getNumPartitions() == 8 * 2 + 4, "4+4+2 per queue; packs of 2+2"
    cut_apart = online(
        spark, shared_dev, "SparkPack", maxRecordsPerPartition="4", minRecordsPerPartition="1"
    )
    assert cut_apart.rdd.getNumPartitions() == 24
    for df in (packed, apart, cut, cut_apart):
        assert sorted((r.queueId, r.queueOffset) for r in df.collect()) == everything


def test_offsets_behind_latest_from_the_progress(spark, shared_dev, tmp_path):
    create(shared_dev, "SparkBehind", 3)
    send(shared_dev, "SparkBehind", [f"b{i}".encode() for i in range(300)])
    listener = OffsetsBehindListener()
    spark.streams.addListener(listener)
    progress = stream_once(
        spark, shared_dev, "SparkBehind", tmp_path / "cp", maxOffsetsPerTrigger="120",
        commitOffsetsToBroker="false",
    )  # fmt: skip
    first = offsets_behind(progress[0])
    assert first is not None
    assert first["offsetsBehindLatest"] == 180
    assert first["minOffsetsBehindLatest"] <= first["avgOffsetsBehindLatest"] == 60
    assert first["maxOffsetsBehindLatest"] >= 60
    assert offsets_behind(progress[-1])["offsetsBehindLatest"] == 0
    assert offsets_behind({"sources": [{"endOffset": "5", "latestOffset": "9"}]}) is None
    query_id = progress[-1]["id"]
    try:  # events reach the listener asynchronously, in order
        assert wait_until(lambda: (listener.latest(query_id) or {}).get("offsetsBehindLatest") == 0)
    finally:
        spark.streams.removeListener(listener)


def test_size_options_are_checked():
    base = {"namesrv": "127.0.0.1:1", "topic": "T"}
    assert ReadOptions.parse({**base, "maxBytesPerTrigger": "64m"}, True).max_bytes_per_trigger == (
        64 << 20
    )
    assert (
        ReadOptions.parse({**base, "maxBytesPerTrigger": "1000"}, True).max_bytes_per_trigger
        == 1000
    )
    with pytest.raises(OptionError, match="maxBytesPerTrigger must be a positive size"):
        ReadOptions.parse({**base, "maxBytesPerTrigger": "lots"}, streaming=True)
    with pytest.raises(OptionError, match="streaming reads only"):
        ReadOptions.parse({**base, "maxBytesPerTrigger": "1g"}, streaming=False)
    with pytest.raises(OptionError, match="maxRecordsPerPartition must be positive"):
        ReadOptions.parse({**base, "maxRecordsPerPartition": "0"}, streaming=False)
