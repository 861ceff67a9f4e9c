"""The Spark source's progress on the broker and Kafka's read options, against a real
``rocketpy dev`` and a local SparkSession: a streaming query's processed offsets become its
consumer group's offsets (lag visible in the admin API), batch reads opt in, and
``minOffsetsPerTrigger``/``maxTriggerDelay``, ``startingOffsetsByTimestamp``, ``assign`` and
``reportLatestOffset`` behave as in Spark's Kafka source."""

from __future__ import annotations

import json
import time

import pytest

pyspark = pytest.importorskip("pyspark")

from pyspark.sql.streaming.datasource import ReadAllAvailable  # noqa: E402
from test_spark import create, online, send  # noqa: E402

from helpers import wait_until  # noqa: E402
from pyspark_rocketmq.options import OptionError, ReadOptions, derived_group  # noqa: E402
from pyspark_rocketmq.source import StreamReader  # noqa: E402
from rocketpy.admin import Admin  # noqa: E402
from rocketpy.message import MessageQueue  # noqa: E402

pytestmark = pytest.mark.spark


def lag(dev, group: str, topic: str) -> tuple[int, int]:
    """(committed messages, lag) of ``group`` on ``topic`` over all its queues."""
    with Admin(dev.namesrv) as admin:
        stats = admin.consume_stats(group, topic)
    items = [w for mq, w in stats.offsets.items() if mq.topic == topic]
    return sum(w.consumer_offset for w in items), sum(
        w.broker_offset - w.consumer_offset for w in items
    )


def stream_once(spark, dev, topic: str, checkpoint, **options: str) -> list[dict]:
    reader = (
        spark.readStream.format("rocketmq")
        .option("namesrv", dev.namesrv)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
    )
    for k, v in options.items():
        reader = reader.option(k, v)
    query = (
        reader.load()
        .select("queueId", "queueOffset")
        .writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180)
    assert query.exception() is None
    return list(query.recentProgress)


def test_streaming_commits_offsets_so_lag_shows(spark, shared_dev, tmp_path):
    create(shared_dev, "SparkLag", 3)
    send(shared_dev, "SparkLag", [f"m{i}".encode() for i in range(300)])
    progress = stream_once(
        spark, shared_dev, "SparkLag", tmp_path / "cp", groupId="spark-lag-group",
        maxOffsetsPerTrigger="120",
    )  # fmt: skip
    assert sum(p["numInputRows"] for p in progress) == 300
    assert wait_until(lambda: lag(shared_dev, "spark-lag-group", "SparkLag") == (300, 0))
    latest = json.loads(progress[-1]["sources"][0]["latestOffset"])
    assert sum(int(v) for v in latest["SparkLag"]["broker-a"].values()) == 300, (
        "reportLatestOffset: the queues' ends in the progress"
    )

    send(shared_dev, "SparkLag", [f"n{i}".encode() for i in range(40)])
    assert lag(shared_dev, "spark-lag-group", "SparkLag") == (300, 40), "lag of the idle query"
    stream_once(spark, shared_dev, "SparkLag", tmp_path / "cp", groupId="spark-lag-group")
    assert wait_until(lambda: lag(shared_dev, "spark-lag-group", "SparkLag") == (340, 0))

    # Off: nothing recorded, and the derived group is what a query without groupId uses.
    stream_once(spark, shared_dev, "SparkLag", tmp_path / "cp2", commitOffsetsToBroker="false")
    group = derived_group(("SparkLag",), "*")
    assert lag(shared_dev, group, "SparkLag") == (0, 340)
    stream_once(spark, shared_dev, "SparkLag", tmp_path / "cp3")
    assert wait_until(lambda: lag(shared_dev, group, "SparkLag") == (340, 0))


def test_batch_read_opts_in_and_split_ranges_commit_their_end(spark, shared_dev):
    create(shared_dev, "SparkBatchCommit", 2)
    send(shared_dev, "SparkBatchCommit", [b"x"] * 100, queue=0)
    send(shared_dev, "SparkBatchCommit", [b"y"] * 20, queue=1)
    df = online(spark, shared_dev, "SparkBatchCommit", groupId="batch-group")
    assert df.count() == 120
    assert lag(shared_dev, "batch-group", "SparkBatchCommit") == (0, 120), "batch: off by default"
    df = online(
        spark, shared_dev, "SparkBatchCommit", groupId="batch-group",
        commitOffsetsToBroker="true", minPartitions="6", endingOffsets=(
            '{"SparkBatchCommit": {"broker-a": {"0": 90}}}'
        ),
    )  # fmt: skip
    assert df.count() == 110
    with Admin(shared_dev.namesrv) as admin:
        mq = lambda q: MessageQueue("SparkBatchCommit", "broker-a", q)  # noqa: E731
        assert admin.consumer_offset("batch-group", mq(0)) == 90, "the end of the last range"
        assert admin.consumer_offset("batch-group", mq(1)) == 20


def test_min_offsets_per_trigger_waits_up_to_the_delay(shared_dev):
    create(shared_dev, "SparkMinRows", 2)
    send(shared_dev, "SparkMinRows", [b"a"] * 10)
    options = {
        "namesrv": shared_dev.namesrv, "topic": "SparkMinRows", "startingOffsets": "earliest",
        "minOffsetsPerTrigger": "50", "maxTriggerDelay": "1s", "commitOffsetsToBroker": "false",
    }  # fmt: skip
    now = [1000.0]  # the reader's clock (s): moved by the test, not slept through
    reader = StreamReader(ReadOptions.parse(options, streaming=True), clock=lambda: now[0])
    start = reader.initialOffset()
    first = reader.latestOffset(start, ReadAllAvailable())
    assert first != start, "the first trigger of a run never waits"
    send(shared_dev, "SparkMinRows", [b"b"] * 10)
    assert reader.latestOffset(first, ReadAllAvailable()) == first, "10 < 50: wait"
    send(shared_dev, "SparkMinRows", [b"c"] * 45)
    enough = reader.latestOffset(first, ReadAllAvailable())
    assert enough != first, "55 new messages: a micro-batch"
    send(shared_dev, "SparkMinRows", [b"d"] * 3)
    assert reader.latestOffset(enough, ReadAllAvailable()) == enough
    now[0] += 0.999
    assert reader.latestOffset(enough, ReadAllAvailable()) == enough, "within maxTriggerDelay"
    now[0] += 0.002
    late = reader.latestOffset(enough, ReadAllAvailable())
    total = lambda o: sum(o["SparkMinRows"]["broker-a"].values())  # noqa: E731
    assert total(late) == total(enough) + 3, "after maxTriggerDelay, whatever is there"
    reader.prepareForTriggerAvailableNow()
    send(shared_dev, "SparkMinRows", [b"e"] * 2)
    assert reader.latestOffset(late, ReadAllAvailable()) == late, "AvailableNow: up to its start"


def test_starting_offsets_by_timestamp_and_assign(spark, shared_dev):
    create(shared_dev, "SparkTs", 2)
    send(shared_dev, "SparkTs", [b"old"] * 5, queue=0)
    send(shared_dev, "SparkTs", [b"old"] * 5, queue=1)
    time.sleep(0.05)
    mid = int(time.time() * 1000)
    time.sleep(0.05)
    send(shared_dev, "SparkTs", [b"new"] * 3, queue=0)
    send(shared_dev, "SparkTs", [b"new"] * 4, queue=1)
    by_ts = json.dumps({"SparkTs": {"broker-a": {"0": mid, "1": 0}}})
    rows = online(spark, shared_dev, "SparkTs", startingOffsetsByTimestamp=by_ts).collect()
    assert (
        sorted((r.queueId, r.body) for r in rows)
        == [(0, b"new")] * 3 + [(1, b"new")] * 4 + [(1, b"old")] * 5
    )
    with pytest.raises(Exception, match="must give a timestamp for every queue"):
        online(
            spark, shared_dev, "SparkTs",
            startingOffsetsByTimestamp='{"SparkTs": {"broker-a": {"0": 0}}}',
        ).count()  # fmt: skip

    def assigned(spec: str):
        return (
            spark.read.format("rocketmq")
            .option("namesrv", shared_dev.namesrv)
            .option("assign", spec)
            .load()
        )

    assert {r.queueId for r in assigned('{"SparkTs": [1]}').collect()} == {1}
    assert assigned('{"SparkTs": {"broker-a": [0]}}').count() == 8
    assert assigned('{"SparkTs": {"broker-b": [0]}}').count() == 0


def test_new_options_are_checked():
    base = {"namesrv": "127.0.0.1:1", "topic": "T"}
    with pytest.raises(OptionError, match="either the option assign or topic"):
        ReadOptions.parse({**base, "assign": '{"T": [0]}'}, streaming=False)
    with pytest.raises(OptionError, match="option assign must be JSON"):
        ReadOptions.parse({"namesrv": "x", "assign": '{"T": "0"}'}, streaming=False)
    with pytest.raises(OptionError, match="streaming reads only"):
        ReadOptions.parse({**base, "minOffsetsPerTrigger": "5"}, streaming=False)
    with pytest.raises(OptionError, match="maxTriggerDelay must be a duration"):
        ReadOptions.parse({**base, "maxTriggerDelay": "soon"}, streaming=True)
    with pytest.raises(OptionError, match="needs namesrv"):
        ReadOptions.parse(
            {"storePath": "/tmp/x", "topic": "T", "commitOffsetsToBroker": "true"}, streaming=True
        )
    opts = ReadOptions.parse({**base, "maxTriggerDelay": "2m", "includeHeaders": "true"}, True)
    assert opts.max_trigger_delay_ms == 120_000 and opts.commit_offsets
    assert opts.group == derived_group(("T",), "*") != derived_group(("T",), "TagA")
    assert not ReadOptions.parse({"storePath": "/tmp/x", "topic": "T"}, True).commit_offsets
    with pytest.raises(OptionError, match="option subscription: 'a > 5' is not a tag"):
        ReadOptions.parse({**base, "subscription": "a > 5"}, streaming=False)
