"""The ``rocketmq`` Spark data source against a real server and real store directories, with
a local SparkSession. Run alone with ``pytest -m spark``."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")


from helpers import wait_until  # noqa: E402
from pyspark_rocketmq.udfs import body_as_string, json_field, property_value  # noqa: E402
from rocketpy import Message, Producer  # noqa: E402
from rocketpy.admin import Admin  # noqa: E402
from rocketpy.message import MessageQueue  # noqa: E402
from rocketpy.store import MessageStore  # noqa: E402

pytestmark = pytest.mark.spark


def send(dev, topic: str, bodies: list[bytes], queue: int | None = None, **kw) -> None:
    with Producer("spark-test-producer", dev.namesrv) as p:
        for b in bodies:
            mq = MessageQueue(topic, "broker-a", queue) if queue is not None else None
            p.send(Message(topic, b, **kw), queue=mq)


def create(dev, topic: str, queues: int) -> None:
    with Admin(dev.namesrv) as admin:
        assert wait_until(lambda: admin.master_addrs()), "the broker never registered"
        admin.create_topic(topic, queues=queues)
        # The broker registers a new topic with the name server after answering (RocketMQ's
        # waits for it): the test's producer must find the route.
        assert wait_until(lambda: admin.topic_route(topic) is not None), "no route"


def online(spark, dev, topic: str, **options: str):
    reader = spark.read.format("rocketmq").option("namesrv", dev.namesrv).option("topic", topic)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_batch_read_schema_bounds_and_udfs(spark, shared_dev):
    create(shared_dev, "SparkBatch", 2)
    send(shared_dev, "SparkBatch", [json.dumps({"n": i, "a": {"b": f"x{i}"}}).encode()
                                    for i in range(10)], queue=0, tags="T", keys="k")  # fmt: skip
    time.sleep(0.05)
    mid = int(time.time() * 1000)
    time.sleep(0.05)
    send(shared_dev, "SparkBatch", [f"late-{i}".encode() for i in range(6)], queue=1, tags="U")

    df = online(spark, shared_dev, "SparkBatch")
    assert df.columns == [
        "topic", "brokerName", "queueId", "queueOffset", "msgId", "tags", "keys", "body",
        "properties", "bornTimestamp", "storeTimestamp", "reconsumeTimes",
    ]  # fmt: skip
    rows = df.orderBy("queueId", "queueOffset").collect()
    assert [(r.queueId, r.queueOffset) for r in rows] == [(0, i) for i in range(10)] + [
        (1, i) for i in range(6)
    ]
    first = rows[0]
    assert (first.topic, first.brokerName, first.tags, first.keys) == (
        "SparkBatch",
        "broker-a",
        "T",
        "k",
    )
    assert json.loads(first.body) == {"n": 0, "a": {"b": "x0"}}
    assert first.properties["TAGS"] == "T" and first.msgId == first.properties["UNIQ_KEY"]
    assert first.reconsumeTimes == 0 and first.storeTimestamp is not None

    bounded = online(
        spark, shared_dev, "SparkBatch",
        startingOffsets=json.dumps({"SparkBatch": {"broker-a": {"0": 3}}}),
        endingOffsets=json.dumps({"SparkBatch": {"broker-a": {"0": 7, "1": 2}}}),
    )  # fmt: skip
    got = sorted((r.queueId, r.queueOffset) for r in bounded.collect())
    assert got == [(0, 3), (0, 4), (0, 5), (0, 6), (1, 0), (1, 1)]

    late = online(spark, shared_dev, "SparkBatch", startingTimestamp=str(mid))
    assert sorted(r.body for r in late.collect()) == sorted(f"late-{i}".encode() for i in range(6))
    early = online(spark, shared_dev, "SparkBatch", endingTimestamp=str(mid))
    assert early.count() == 10

    only_u = online(spark, shared_dev, "SparkBatch", subscription="U")
    assert {r.tags for r in only_u.collect()} == {"U"}

    split = online(spark, shared_dev, "SparkBatch", minPartitions="5")
    assert split.rdd.getNumPartitions() >= 5 and split.count() == 16

    decoded = (
        online(spark, shared_dev, "SparkBatch", endingTimestamp=str(mid))
        .select(
            body_as_string("body").alias("text"),
            json_field("body", "a.b").alias("ab"),
            property_value("properties", "TAGS").alias("tag"),
            property_value("properties", "NOPE").alias("none"),
        )
        .orderBy("ab")
        .collect()
    )
    assert decoded[0].text.startswith('{"n": 0') and decoded[0].ab == "x0"
    assert {(r.tag, r.none) for r in decoded} == {("T", None)}


def test_user_schema_prunes_columns(spark, shared_dev):
    pruned = (
        spark.read.format("rocketmq")
        .option("namesrv", shared_dev.namesrv)
        .option("topic", "SparkBatch")
        .schema("queueOffset bigint, body binary")
        .load()
    )
    assert pruned.columns == ["queueOffset", "body"]
    assert pruned.count() == online(spark, shared_dev, "SparkBatch").count() > 0
    wrong = spark.read.format("rocketmq").option("namesrv", shared_dev.namesrv)
    with pytest.raises(Exception, match="queueOffset is int64"):
        wrong.option("topic", "SparkBatch").schema("queueOffset int").load().count()
    with pytest.raises(Exception, match="no column 'nope'"):
        wrong.option("topic", "SparkBatch").schema("nope int").load().count()


def test_read_vs_parquet_benchmark_runs():
    bench = Path(__file__).parents[2] / "spark" / "benchmarks" / "read_vs_parquet.py"
    out = subprocess.run(
        [sys.executable, str(bench), "--messages", "3000", "--size", "100", "--rounds", "1",
         "--mode", "both"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert "parquet/rocketmq offline = " in out.stdout
    assert "parquet/rocketmq online = " in out.stdout


def run_scripts(*runs: list[str]) -> list[tuple[str, str]]:
    """Runs the scripts ``runs`` (each ``[path, arg, ...]``) in one Python process, one JVM
    (see ``run_scripts.py``); each run's stdout and stderr. Fails on the first that fails."""
    runner = Path(__file__).with_name("run_scripts.py")
    out = subprocess.run(
        [sys.executable, str(runner), json.dumps(runs)], capture_output=True, text=True, timeout=900
    )
    assert out.returncode == 0, out.stderr[-3000:]
    from run_scripts import sections

    return list(zip(sections(out.stdout, len(runs)), sections(out.stderr, len(runs)), strict=True))


def test_examples_run_against_a_server(shared_dev, tmp_path):
    create(shared_dev, "SparkExamples", 2)
    send(shared_dev, "SparkExamples", [f"e{i}".encode() for i in range(50)], tags="Ex")
    examples = Path(__file__).parents[2] / "spark" / "examples"
    common = ["--namesrv", shared_dev.namesrv, "--topic", "SparkExamples"]
    stream = [str(examples / "streaming_with_checkpoint.py"), *common,
              "--out", str(tmp_path / "s"), "--checkpoint", str(tmp_path / "ck"), "--available-now"]  # fmt: skip
    (batch, _), _, _ = run_scripts(
        [str(examples / "batch_to_parquet.py"), *common, "--out", str(tmp_path / "b")],
        # The second run finds nothing new: its output does not grow.
        stream,
        stream,
    )
    assert "Ex" in batch and "50" in batch
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "s")
    assert table.num_rows == 50
    assert sorted(table.column("text").to_pylist()) == sorted(f"e{i}" for i in range(50))


def test_enrich_example_joins_a_parquet_table_into_another_topic(shared_dev, tmp_path):
    create(shared_dev, "SparkOrders", 2)
    create(shared_dev, "SparkOrdersPriced", 2)
    orders = [{"order": f"o-{i}", "sku": ["A-1", "B-2", "Z-9"][i % 3], "qty": i} for i in range(30)]
    send(shared_dev, "SparkOrders", [json.dumps(o).encode() for o in orders])
    example = Path(__file__).parents[2] / "spark" / "examples" / "enrich_with_parquet.py"
    args = [
        str(example), "--namesrv", shared_dev.namesrv, "--topic", "SparkOrders",
        "--out-topic", "SparkOrdersPriced", "--products", str(tmp_path / "products"),
        "--checkpoint", str(tmp_path / "ck"), "--available-now",
    ]  # fmt: skip
    run_scripts([*args, "--write-demo-products"], args)  # the second run finds nothing new
    out = []
    with Admin(shared_dev.namesrv) as admin:
        stats = admin.topic_stats("SparkOrdersPriced")
        assert sum(o.max_offset for o in stats.values()) == 30, "each order once"
        for mq in stats:
            out.extend(admin.pull_messages(mq, 0, 64))
    by_order = {m.keys: (m.tags, json.loads(m.body)) for m in out}
    assert len(by_order) == 30
    assert by_order["o-4"] == ("priced", {"order": "o-4", "sku": "B-2", "qty": 4,
                                          "name": "bucket", "amount": 18.0})  # fmt: skip
    assert by_order["o-3"] == ("priced", {"order": "o-3", "sku": "A-1", "qty": 3,
                                          "name": "anvil", "amount": 75.0})  # fmt: skip
    assert by_order["o-5"] == ("unknown-sku", {"order": "o-5", "sku": "Z-9", "qty": 5})


def test_offline_read_equals_online_read(spark, shared_dev):
    create(shared_dev, "SparkOffline", 3)
    send(shared_dev, "SparkOffline", [f"m{i}".encode() * (i % 7 + 1) for i in range(90)], keys="x")
    cols = ["topic", "brokerName", "queueId", "queueOffset", "msgId", "tags", "keys", "body",
            "properties", "bornTimestamp", "storeTimestamp", "reconsumeTimes"]  # fmt: skip
    on = online(spark, shared_dev, "SparkOffline").select(*cols)
    off = (
        spark.read.format("rocketmq")
        .option("storePath", str(shared_dev.store))
        .option("brokerName", "broker-a")
        .option("topic", "SparkOffline")
        .load()
        .select(*cols)
    )
    a = sorted(map(tuple, on.collect()), key=lambda r: (r[2], r[3]))
    b = sorted(map(tuple, off.collect()), key=lambda r: (r[2], r[3]))
    assert len(a) == 90 and a == b


def test_streaming_max_offsets_restart_and_available_now(spark, shared_dev, tmp_path):
    create(shared_dev, "SparkStream", 4)
    send(shared_dev, "SparkStream", [f"a{i}".encode() for i in range(400)])
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run() -> list:
        stream = (
            spark.readStream.format("rocketmq")
            .option("namesrv", shared_dev.namesrv)
            .option("topic", "SparkStream")
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "150")
            .load()
        )
        query = (
            stream.select("queueId", "queueOffset", "body")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(180)
        assert query.exception() is None
        return [p["numInputRows"] for p in query.recentProgress]

    batches = run()
    assert sum(batches) == 400 and max(batches) <= 150 and len([b for b in batches if b]) >= 3
    send(shared_dev, "SparkStream", [f"b{i}".encode() for i in range(100)])
    assert sum(run()) == 100, "the restarted query reads only what is new"
    rows = spark.read.parquet(str(out)).collect()
    keys = [(r.queueId, r.queueOffset) for r in rows]
    assert len(keys) == 500 and len(set(keys)) == 500, "no gap, no duplicate"
    assert sorted(r.body for r in rows) == sorted(
        [f"a{i}".encode() for i in range(400)] + [f"b{i}".encode() for i in range(100)]
    )


def test_sink_round_trip(spark, shared_dev):
    create(shared_dev, "SparkSink", 2)
    rows = [(f"body-{i}", "TagS" if i % 2 else None, f"key{i}", {"n": str(i)}) for i in range(300)]
    df = spark.createDataFrame(
        rows, "body string, tags string, keys string, properties map<string,string>"
    )
    df.write.format("rocketmq").option("namesrv", shared_dev.namesrv).option(
        "topic", "SparkSink"
    ).mode("append").save()
    back = online(spark, shared_dev, "SparkSink").collect()
    assert len(back) == 300
    got = sorted((r.body.decode(), r.tags, r.keys, r.properties["n"]) for r in back)
    assert got == sorted((b, t, k, p["n"]) for b, t, k, p in rows)

    by_column = spark.createDataFrame([("SparkSink", b"raw")], "topic string, body binary")
    by_column.write.format("rocketmq").option("namesrv", shared_dev.namesrv).mode("append").save()
    assert online(spark, shared_dev, "SparkSink").count() == 301

    # Bodies and keys only: the rows go as bulk sends (Producer.send_arrow).
    bulk = spark.createDataFrame(
        [(f"bulk-{i}".encode(), f"bk{i}") for i in range(1000)], "body binary, keys string"
    )
    bulk.write.format("rocketmq").option("namesrv", shared_dev.namesrv).option(
        "topic", "SparkSinkBulk"
    ).mode("append").save()
    got_bulk = online(spark, shared_dev, "SparkSinkBulk").collect()
    assert sorted((r.body, r.keys) for r in got_bulk) == sorted(
        (f"bulk-{i}".encode(), f"bk{i}") for i in range(1000)
    )

    no_body = spark.createDataFrame([("x",)], "value string")
    with pytest.raises(Exception, match="body column"):
        no_body.write.format("rocketmq").option("namesrv", shared_dev.namesrv).option(
            "topic", "SparkSink"
        ).mode("append").save()
    null_body = spark.createDataFrame([(None,)], "body string")
    with pytest.raises(Exception, match="null body"):
        null_body.write.format("rocketmq").option("namesrv", shared_dev.namesrv).option(
            "topic", "SparkSink"
        ).mode("append").save()


def test_streaming_sink_copies_a_topic(spark, shared_dev, tmp_path):
    create(shared_dev, "SparkCopyIn", 2)
    send(shared_dev, "SparkCopyIn", [f"c{i}".encode() for i in range(120)], tags="C", keys="ck")
    stream = (
        spark.readStream.format("rocketmq")
        .option("namesrv", shared_dev.namesrv)
        .option("topic", "SparkCopyIn")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "50")
        .load()
    )
    query = (
        stream.select("body", "tags", "keys", "properties")
        .writeStream.format("rocketmq")
        .option("namesrv", shared_dev.namesrv)
        .option("topic", "SparkCopyOut")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180) and query.exception() is None
    copied = online(spark, shared_dev, "SparkCopyOut").collect()
    assert sorted(r.body for r in copied) == sorted(f"c{i}".encode() for i in range(120))
    assert {(r.tags, r.keys) for r in copied} == {("C", "ck")}
    both = online(spark, shared_dev, "SparkCopyIn, SparkCopyOut")  # a comma list of topics
    assert both.groupBy("topic").count().orderBy("topic").collect() == [
        ("SparkCopyIn", 120),
        ("SparkCopyOut", 120),
    ]


def test_fail_on_data_loss_both_ways(spark, tmp_path):
    store = tmp_path / "store"
    with MessageStore(store, mapped_file_size_commit_log=64 * 1024) as s:
        for i in range(600):
            s.put("Lossy", f"message-{i:04d}".encode() * 8, queue_id=0)
    # What retention does: the oldest CommitLog file goes.
    first = sorted((store / "commitlog").iterdir())[0]
    first.unlink()

    def read(**options: str):
        reader = (
            spark.read.format("rocketmq").option("storePath", str(store)).option("topic", "Lossy")
        )
        for k, v in options.items():
            reader = reader.option(k, v)
        return reader.load()

    from_zero = json.dumps({"Lossy": {"broker-a": {"0": 0}}})
    with pytest.raises(Exception, match="no longer stored"):
        read(startingOffsets=from_zero).count()
    rows = read(startingOffsets=from_zero, failOnDataLoss="false").collect()
    offsets = sorted(r.queueOffset for r in rows)
    assert offsets[0] > 0 and offsets == list(range(offsets[0], 600))
    assert read().count() == len(rows), "earliest starts at the first stored offset"


def test_bad_options_are_clear(spark, shared_dev):
    with pytest.raises(Exception, match="option topic is required"):
        spark.read.format("rocketmq").option("namesrv", shared_dev.namesrv).load().count()
    with pytest.raises(Exception, match="exactly one of the options namesrv"):
        spark.read.format("rocketmq").option("topic", "T").load().count()
    with pytest.raises(Exception, match="startingOffsets"):
        online(spark, shared_dev, "SparkBatch", startingOffsets="{nope").count()


def test_auto_registration_is_visible_to_spark():
    # Spark looks for top-level pyspark_* modules with a DefaultSource in the Python path.
    import pkgutil

    import pyspark_rocketmq

    assert "pyspark_rocketmq" in {m.name for m in pkgutil.iter_modules()}
    assert pyspark_rocketmq.DefaultSource.name() == "rocketmq"
    assert Path(pyspark_rocketmq.__file__).parent.name == "pyspark_rocketmq"
