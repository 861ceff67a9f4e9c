"""SQL92 subscriptions end to end (``MessageSelector.by_sql``) on a broker that filters by
properties (``enablePropertyFilter=true``): a push consumer, an asyncio consumer and the
admin's pull receive exactly the matching messages; on a broker that does not filter by
properties, the refusal reaches the caller."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from servers import ServerProcess, dev

from helpers import Collector, fast_config, wait_until
from rocketpy import ClientError, ConsumeFromWhere, Message, MessageSelector, Producer, PushConsumer
from rocketpy.admin import Admin
from rocketpy.aio import AsyncConsumer

#: a >= 15, or an odd a (tags B) below 4: 1, 3, 15..19, and the last message (99).
SQL = "a >= 15 OR (TAGS = 'B' AND a < 4)"
EXPECTED = {1, 3, 15, 16, 17, 18, 19, 99}


@pytest.fixture(scope="module")
def sql_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    store = tmp_path_factory.mktemp("sql") / "store"
    server = dev(store, settings={"enablePropertyFilter": "true"}).start()
    yield server
    assert server.stop() == 0, server.text()


def send(namesrv: str, topic: str) -> None:
    """a = 0..19 then 99, into one queue: a consumer that has 99 has pulled them all."""
    with Admin(namesrv) as admin:
        admin.create_topic(topic, queues=1)
    with Producer(f"{topic}-producer", namesrv) as p:
        for i in [*range(20), 99]:
            tags = "A" if i % 2 == 0 else "B"
            p.send(Message(topic, str(i).encode(), tags=tags, properties={"a": str(i)}))


def values(msgs: list) -> set[int]:  # type: ignore[type-arg]
    return {int(m.body) for m in msgs}


def test_a_push_consumer_receives_only_matching_messages(sql_dev: ServerProcess):
    send(sql_dev.namesrv, "SqlPush")
    got = Collector()
    c = PushConsumer(
        "sql-push",
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        client_config=fast_config(sql_dev.namesrv),
    )
    c.subscribe("SqlPush", MessageSelector.by_sql(SQL))
    c.register_listener(got)
    c.start()
    try:
        assert wait_until(lambda: len(got.messages) >= len(EXPECTED), timeout=30)
    finally:
        c.shutdown()
    assert sorted(int(m.body) for m in got.messages) == sorted(EXPECTED)


def test_an_asyncio_consumer_and_the_admin_filter_by_sql(sql_dev: ServerProcess):
    send(sql_dev.namesrv, "SqlAsync")

    async def consume() -> set[int]:
        seen: set[int] = set()
        consumer = AsyncConsumer(
            "sql-async",
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            client_config=fast_config(sql_dev.namesrv),
        )
        consumer.subscribe("SqlAsync", MessageSelector.by_sql(SQL))
        async with consumer:
            async with asyncio.timeout(30):
                async for msg in consumer:
                    seen.add(int(msg.body))
                    if len(seen) >= len(EXPECTED):
                        break
        return seen

    assert asyncio.run(consume()) == EXPECTED
    with Admin(sql_dev.namesrv) as admin:
        pulled: set[int] = set()
        for mq in admin.topic_stats("SqlAsync"):  # one queue
            pulled |= values(admin.pull_messages(mq, 0, 32, selector=MessageSelector.by_sql(SQL)))
            pulled |= values(admin.pull_messages(mq, 0, 32, selector="NoSuchTag"))
        assert pulled == EXPECTED


def test_a_broker_without_property_filters_refuses_loudly(shared_dev: ServerProcess):
    send(shared_dev.namesrv, "SqlRefused")
    with Admin(shared_dev.namesrv) as admin:
        mq = next(iter(admin.topic_stats("SqlRefused")))
        with pytest.raises(
            ClientError, match="does not support consumer to filter message by SQL92"
        ):
            admin.pull_messages(mq, 0, 32, selector=MessageSelector.by_sql("a > 1"))
        assert admin.pull_messages(mq, 0, 32, selector="*"), "tags are served"
    # A consumer asks the brokers at start (CHECK_CLIENT_CONFIG), as RocketMQ's clients do.
    c = PushConsumer("sql-refused", client_config=fast_config(shared_dev.namesrv))
    c.subscribe("SqlRefused", MessageSelector.by_sql("a > 1"))
    c.register_listener(Collector())
    with pytest.raises(ClientError, match="enablePropertyFilter=true"):
        c.start()
    # Subscribing a started consumer is refused the same way, keeping what it had.
    c = PushConsumer("sql-refused-2", client_config=fast_config(shared_dev.namesrv))
    c.subscribe("SqlRefused", "*")
    c.register_listener(Collector())
    c.start()
    try:
        with pytest.raises(ClientError, match="does not serve the SQL92 subscription"):
            c.subscribe("SqlRefused", MessageSelector.by_sql("a > 1"))
        assert c.subscribed_topics() >= {"SqlRefused"}
    finally:
        c.shutdown()
