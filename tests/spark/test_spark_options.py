"""Options the ``rocketmq`` source cannot serve are refused loudly: unknown names (with the
closest known one), a write's option on a read and the reverse, a path; a topic that does
not exist fails a read unless ``failOnMissingTopic=false``. Against a real server and real
store directories, with a local SparkSession."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from examples import ROOT
from pyspark.sql.datasource import CaseInsensitiveDict
from pyspark.sql.types import StringType, StructField, StructType

from helpers import wait_until
from pyspark_rocketmq.options import (
    READ_OPTIONS,
    SPARK_STREAM_WRITE_OPTIONS,
    WRITE_OPTIONS,
    OptionError,
    ReadOptions,
)
from pyspark_rocketmq.sink import WriteOptions
from rocketpy import Message, Producer
from rocketpy.admin import Admin
from rocketpy.store import MessageStore

BODY = StructType([StructField("body", StringType())])


def create(dev: Any, topic: str, queues: int = 2) -> None:
    with Admin(dev.namesrv) as admin:
        assert wait_until(lambda: admin.master_addrs()), "the broker never registered"
        admin.create_topic(topic, queues=queues)
        assert wait_until(lambda: admin.topic_route(topic) is not None), "no route"


def send(dev: Any, topic: str, n: int) -> None:
    with Producer("spark-options-producer", dev.namesrv) as p:
        for i in range(n):
            p.send(Message(topic, f"m{i}".encode()))


def read(spark: Any, dev: Any, topic: str, stream: bool = False, **options: str) -> Any:
    reader = (spark.readStream if stream else spark.read).format("rocketmq")
    reader = reader.option("namesrv", dev.namesrv).option("topic", topic)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def start_memory(df: Any, name: str, tmp: Path, **trigger: Any) -> Any:
    writer = df.writeStream.format("memory").queryName(name)
    writer = writer.option("checkpointLocation", str(tmp / name))
    return writer.trigger(**(trigger or {"availableNow": True})).start()


# -- unknown options ----------------------------------------------------------------------


def test_unknown_options_name_the_closest_known_one():
    base = {"namesrv": "127.0.0.1:9876", "topic": "T"}
    # Spark hands the names over in lower case (a CaseInsensitiveDict), as here.
    with pytest.raises(OptionError, match=r"'startingoffset'.*did you mean startingOffsets"):
        ReadOptions.parse(CaseInsensitiveDict({**base, "startingOffset": "earliest"}), False)
    with pytest.raises(OptionError, match="streaming read: did you mean maxOffsetsPerTrigger"):
        ReadOptions.parse(CaseInsensitiveDict({**base, "maxOffsetPerTrigger": "5"}), True)
    with pytest.raises(OptionError, match=r"unknown option 'zzz'.*the options are accessKey"):
        ReadOptions.parse(CaseInsensitiveDict({**base, "zzz": "1"}), False)
    with pytest.raises(OptionError, match="write: did you mean transactional"):
        WriteOptions.parse(CaseInsensitiveDict({**base, "transactionl": "true"}), BODY)
    # Known elsewhere: said so, not "unknown".
    with pytest.raises(OptionError, match="option transactional applies to writes"):
        ReadOptions.parse(CaseInsensitiveDict({**base, "transactional": "true"}), False)
    with pytest.raises(OptionError, match="option startingOffsets applies to reads"):
        WriteOptions.parse(CaseInsensitiveDict({**base, "startingOffsets": "earliest"}), BODY)
    with pytest.raises(OptionError, match="checkpointLocation belongs to a streaming query"):
        ReadOptions.parse(CaseInsensitiveDict({**base, "checkpointLocation": "/c"}), True)
    with pytest.raises(OptionError, match="checkpointLocation belongs to a streaming query"):
        WriteOptions.parse(CaseInsensitiveDict({**base, "checkpointLocation": "/c"}), BODY)
    with pytest.raises(OptionError, match=r"takes no path.*storePath"):
        ReadOptions.parse(CaseInsensitiveDict({**base, "path": "/data"}), False)
    # Any case of a known name; what Spark adds to a streaming write.
    opts = ReadOptions.parse(
        CaseInsensitiveDict({**base, "STARTINGOFFSETS": "latest", "FailOnMissingTopic": "no"}),
        False,
    )
    assert opts.starting == "latest" and not opts.fail_on_missing_topic
    spark_added = {"checkpointlocation": "/c", "queryname": "q"}
    WriteOptions.parse(CaseInsensitiveDict({**base, **spark_added}), BODY, streaming=True)


def test_spark_refuses_unknown_options_of_reads_and_writes(spark, shared_dev, tmp_path):
    create(shared_dev, "SparkOptsKnown")
    send(shared_dev, "SparkOptsKnown", 4)
    with pytest.raises(Exception, match="did you mean startingOffsets"):
        read(spark, shared_dev, "SparkOptsKnown", startingOffset="latest").count()
    with pytest.raises(Exception, match="did you mean maxOffsetsPerTrigger"):
        stream = read(spark, shared_dev, "SparkOptsKnown", True, maxOffsetPerTrigger="2")
        start_memory(stream, "opts_bad_stream", tmp_path).awaitTermination(120)
    rows = spark.createDataFrame([("x",)], "body string")
    with pytest.raises(Exception, match="did you mean transactional"):
        rows.write.format("rocketmq").option("namesrv", shared_dev.namesrv).option(
            "topic", "SparkOptsKnown"
        ).option("transactionl", "true").mode("append").save()
    with pytest.raises(Exception, match="takes no path"):
        spark.read.format("rocketmq").option("topic", "SparkOptsKnown").load("/data").count()
    bad_sink = (
        read(spark, shared_dev, "SparkOptsKnown", True, startingOffsets="earliest")
        .select("body")
        .writeStream.format("rocketmq")
        .option("namesrv", shared_dev.namesrv)
        .option("topic", "SparkOptsKnown")
        .option("batchMessage", "10")
        .option("checkpointLocation", str(tmp_path / "bad-sink"))
        .trigger(availableNow=True)
    )
    with pytest.raises(Exception, match="did you mean batchMessages"):
        bad_sink.start().awaitTermination(120)

    # Known names in any case are served.
    upper = read(spark, shared_dev, "SparkOptsKnown", STARTINGOFFSETS="earliest")
    assert upper.count() == 4


def test_a_streaming_write_gets_spark_own_options(spark, shared_dev, tmp_path):
    create(shared_dev, "SparkOptsCopyIn")
    create(shared_dev, "SparkOptsCopyOut")
    send(shared_dev, "SparkOptsCopyIn", 5)
    query = (
        read(spark, shared_dev, "SparkOptsCopyIn", True, startingOffsets="earliest")
        .select("body")
        .writeStream.format("rocketmq")
        .queryName("opts_copy")  # Spark passes queryName and checkpointLocation on
        .option("namesrv", shared_dev.namesrv)
        .option("topic", "SparkOptsCopyOut")
        .option("checkpointLocation", str(tmp_path / "copy"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180) and query.exception() is None
    assert read(spark, shared_dev, "SparkOptsCopyOut").count() == 5


# -- topics that do not exist -------------------------------------------------------------


def test_a_read_of_a_missing_topic_fails_unless_allowed(spark, shared_dev, tmp_path):
    create(shared_dev, "SparkOptsOrders")
    message = r"topic SparkOptsOrdrs does not exist.*did you mean SparkOptsOrders\?.*"
    message += r"updateTopic.*failOnMissingTopic=false"
    with pytest.raises(Exception, match=message):
        read(spark, shared_dev, "SparkOptsOrdrs").count()
    with pytest.raises(Exception, match="topic SparkOptsOrdrs does not exist"):
        stream = read(spark, shared_dev, "SparkOptsOrdrs", True)
        start_memory(stream, "missing", tmp_path).awaitTermination(120)
    # One of several topics is enough to fail the read.
    with pytest.raises(Exception, match="topic SparkOptsOrdrs does not exist"):
        read(spark, shared_dev, "SparkOptsOrders,SparkOptsOrdrs").count()
    assert read(spark, shared_dev, "SparkOptsOrdrs", failOnMissingTopic="false").count() == 0


def test_a_stream_allowed_to_start_on_a_missing_topic_reads_it_once_created(
    spark, shared_dev, tmp_path
):
    topic = f"SparkOptsLater{uuid.uuid4().hex[:6]}"
    stream = read(spark, shared_dev, topic, True, failOnMissingTopic="false")
    query = start_memory(
        stream.select("body"), "later", tmp_path, processingTime="200 milliseconds"
    )
    try:
        assert wait_until(lambda: query.lastProgress is not None, timeout=120), "never ran"
        create(shared_dev, topic)
        send(shared_dev, topic, 3)
        assert wait_until(lambda: spark.table("later").count() == 3, timeout=120)
        assert query.exception() is None
    finally:
        query.stop()


def test_an_offline_read_of_a_missing_topic_fails_unless_allowed(spark, tmp_path):
    store = tmp_path / "store"
    with MessageStore(store) as s:
        s.put("Invoices", b"x", queue_id=0)

    def offline(topic: str, **options: str) -> Any:
        reader = spark.read.format("rocketmq").option("storePath", str(store))
        for k, v in {"topic": topic, **options}.items():
            reader = reader.option(k, v)
        return reader.load()

    with pytest.raises(Exception, match=r"topic Invoice does not exist in the store .*"
                                        r"did you mean Invoices\?"):  # fmt: skip
        offline("Invoice").count()
    assert offline("Invoice", failOnMissingTopic="false").count() == 0
    assert offline("Invoices").count() == 1


# -- the README names every option ----------------------------------------------------------


def test_the_readme_tables_and_the_known_options_agree():
    readme = (ROOT / "spark" / "README.md").read_text(encoding="utf-8")
    in_tables = set()
    for row in re.findall(r"^\| (`[^|]*) \|", readme, re.MULTILINE):
        in_tables.update(re.findall(r"`(\w+)`", row))
    known = {*READ_OPTIONS, *WRITE_OPTIONS}
    assert in_tables - known == set(), "documented, but refused as unknown"
    documented = set(re.findall(r"`(\w+)`", readme))
    assert known - documented == set(), "known to the source, but not in spark/README.md"
    assert set(SPARK_STREAM_WRITE_OPTIONS) <= documented
