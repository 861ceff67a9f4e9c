"""The Spark source's SQL92 filter (option ``sqlFilter``), online (evaluated by a broker with
``enablePropertyFilter=true``) and offline (evaluated on the store's records), and the
pushdown of ``tags`` conditions into the broker's filter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pyspark = pytest.importorskip("pyspark")

from pyspark.sql.datasource import EqualTo, GreaterThan, In  # noqa: E402
from servers import ServerProcess, dev  # noqa: E402
from test_spark import create, online, send  # noqa: E402

from pyspark_rocketmq.options import OptionError, ReadOptions  # noqa: E402
from pyspark_rocketmq.pushdown import pushed  # noqa: E402

pytestmark = pytest.mark.spark

SQL = "a >= 20 AND TAGS = 'B'"


@pytest.fixture(scope="module")
def sql_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = dev(
        tmp_path_factory.mktemp("spark-sql") / "store", settings={"enablePropertyFilter": "true"}
    ).start()
    yield server
    assert server.stop() == 0, server.text()


def send_thirty(server: ServerProcess, topic: str) -> None:
    create(server, topic, 2)
    for tag in ("A", "B"):
        for a in range(0 if tag == "A" else 1, 30, 2):
            send(server, topic, [str(a).encode()], tags=tag, properties={"a": str(a)})


def test_sql_filter_online_and_offline(spark, sql_dev):
    send_thirty(sql_dev, "SparkSql")
    on = online(spark, sql_dev, "SparkSql", sqlFilter=SQL)
    assert sorted(int(r.body) for r in on.select("body").collect()) == [21, 23, 25, 27, 29]
    off = (
        spark.read.format("rocketmq")
        .option("storePath", str(sql_dev.store))
        .option("topic", "SparkSql")
        .option("sqlFilter", SQL)
        .load()
    )
    assert sorted(int(r.body) for r in off.select("body").collect()) == [21, 23, 25, 27, 29]


def test_tag_conditions_are_pushed_to_the_broker(spark, sql_dev):
    send_thirty(sql_dev, "SparkPush")
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        df = online(spark, sql_dev, "SparkPush", filterPushdown="true")
        df = df.where("tags = 'A' and body is not null")
        assert sorted(int(r.body) for r in df.select("body").collect()) == list(range(0, 30, 2))
        sql = online(spark, sql_dev, "SparkPush", sqlFilter="a < 6", filterPushdown="true")
        sql = sql.where("tags in ('B')")
        assert sorted(int(r.body) for r in sql.select("body").collect()) == [1, 3, 5]
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")


def test_pushdown_rewrites_the_subscription():
    base = ReadOptions.parse({"namesrv": "127.0.0.1:1", "topic": "T"}, streaming=False)
    tags = pushed(base, [EqualTo(("tags",), "A"), GreaterThan(("queueOffset",), 3)])
    assert (tags.subscription, tags.subscription_type) == ("A", "TAG")
    both = pushed(base, [In(("tags",), ["A", "B", "C"]), In(("tags",), ["B", "C", "D"])])
    assert both.subscription == "B || C"
    assert pushed(base, [GreaterThan(("queueOffset",), 3)]) == base, "nothing about tags"
    assert pushed(base, [EqualTo(("tags",), "x || y")]) == base, "not a tag: not pushed"
    sql = ReadOptions.parse(
        {"namesrv": "127.0.0.1:1", "topic": "T", "sqlFilter": "a > 1"}, streaming=False
    )
    assert pushed(sql, [In(("tags",), ["it's"])]).subscription == "(a > 1) AND TAGS IN ('it''s')"


def test_sql_filter_options_are_checked():
    base = {"namesrv": "127.0.0.1:1", "topic": "T"}
    with pytest.raises(OptionError, match=r"option sqlFilter: .*character"):
        ReadOptions.parse({**base, "sqlFilter": "a >"}, streaming=False)
    with pytest.raises(OptionError, match="either the option subscription"):
        ReadOptions.parse({**base, "sqlFilter": "a > 1", "subscription": "A"}, streaming=False)
    opts = ReadOptions.parse({**base, "sqlFilter": " a > 1 "}, streaming=True)
    assert (opts.subscription, opts.subscription_type) == ("a > 1", "SQL92")
    with pytest.raises(OptionError, match="filterPushdown applies to batch reads only"):
        ReadOptions.parse({**base, "filterPushdown": "true"}, streaming=True)
