"""Consumers take ``subscribe`` / ``assign`` inside ``with`` / ``async with``, i.e. after
their start and before the first poll, as Kafka's clients and RocketMQ's
``DefaultLitePullConsumer`` (start, fetch the queues, assign) take them; a poll with neither
is refused with what to do."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from servers import ServerProcess

from helpers import fast_config, wait_until
from rocketpy import (
    ConsumeFromWhere,
    LitePullConsumer,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from rocketpy.admin import Admin
from rocketpy.aio import AsyncConsumer
from rocketpy.errors import ClientError
from rocketpy.protocol import retry_topic


def make_topic(server: ServerProcess, messages: int) -> str:
    """A new topic of 4 queues holding ``messages`` messages (bodies ``m0``, ``m1``, ...)."""
    topic = f"InWith{uuid.uuid4().hex[:8]}"
    with Admin(server.namesrv) as admin:
        admin.create_topic(topic, queues=4)
    with Producer("in-with-producer", server.namesrv) as p:
        for i in range(messages):
            p.send(Message(topic, f"m{i}".encode()))
    return topic


#: Messages must come well before the periodic route refresh (30 s) and rebalance (20 s)
#: would bring them: the clients run with default intervals, so a subscription made after the
#: start has to take effect by itself.
PROMPT = 10


def poll_until(consumer: LitePullConsumer, n: int) -> list[MessageExt]:
    got: list[MessageExt] = []

    def enough() -> bool:
        got.extend(consumer.poll(200))
        return len(got) >= n

    wait_until(enough, PROMPT)
    return got


def group() -> str:
    return f"g-{uuid.uuid4().hex[:8]}"


def lite(server: ServerProcess) -> LitePullConsumer:
    return LitePullConsumer(
        group(),
        server.namesrv,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        instance_name=group(),
    )


def test_lite_pull_subscribes_inside_with(shared_dev: ServerProcess) -> None:
    topic = make_topic(shared_dev, 6)
    consumer = lite(shared_dev)
    with consumer:
        consumer.subscribe(topic)
        got = poll_until(consumer, 6)
        assert sorted(m.body for m in got) == sorted(f"m{i}".encode() for i in range(6))
        # Subscribed after the start, the group's retry topic joins as it would before.
        assert retry_topic(consumer.group) in consumer.subscribed_topics()


def test_lite_pull_assigns_as_rocketmq_documents(shared_dev: ServerProcess) -> None:
    # RocketMQ's own LitePullConsumer example: start, fetchMessageQueues, assign.
    topic = make_topic(shared_dev, 4)
    with lite(shared_dev) as consumer:
        queues = consumer.fetch_message_queues(topic)
        consumer.assign(queues[:2])
        got = poll_until(consumer, 1)
        assert got and all(m.queue_id in (0, 1) for m in got)


def test_polling_with_nothing_subscribed_says_what_to_do(shared_dev: ServerProcess) -> None:
    with lite(shared_dev) as consumer, pytest.raises(ClientError, match=r"subscribe.*or assign"):
        consumer.poll(100)


def test_async_consumer_subscribes_inside_async_with(shared_dev: ServerProcess) -> None:
    topic = make_topic(shared_dev, 5)

    async def main() -> list[bytes]:
        bodies: list[bytes] = []
        async with AsyncConsumer(
            group(),
            shared_dev.namesrv,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            instance_name=group(),
        ) as consumer:
            consumer.subscribe(topic)
            async for msg in consumer:
                bodies.append(msg.body)
                if len(bodies) == 5:
                    break
        return bodies

    bodies = asyncio.run(asyncio.wait_for(main(), PROMPT))
    assert sorted(bodies) == sorted(f"m{i}".encode() for i in range(5))


def test_async_consumer_refuses_a_bad_subscription_at_the_call(
    shared_dev: ServerProcess,
) -> None:
    # After the start a subscription is applied by the next poll, but checked at once.
    async def main() -> None:
        async with AsyncConsumer("g-bad", client_config=fast_config(shared_dev.namesrv)) as c:
            with pytest.raises(ClientError):
                c.subscribe("not a topic!")

    asyncio.run(main())


def test_push_consumer_subscribed_after_start_gets_its_queues_at_once(
    shared_dev: ServerProcess,
) -> None:
    topic = make_topic(shared_dev, 4)
    got: list[bytes] = []
    c = PushConsumer(
        group(),
        shared_dev.namesrv,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        instance_name=group(),
    )
    c.register_listener(lambda msgs: got.extend(m.body for m in msgs))
    c.subscribe(make_topic(shared_dev, 0))  # something to start with
    with c:
        c.subscribe(topic)
        assert wait_until(lambda: len(got) >= 4, PROMPT), got
    assert sorted(got) == [b"m0", b"m1", b"m2", b"m3"]
