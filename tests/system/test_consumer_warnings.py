"""What a consumer cannot do as asked is said, not silently done otherwise: a listener that
returns something that is not a status, and a subscription to a topic that does not exist."""

from __future__ import annotations

import logging

import pytest

from helpers import fast_config, wait_until
from rocketpy import ConsumeFromWhere, ConsumeStatus, Message, Producer, PushConsumer
from rocketpy.admin import Admin


def consumer(namesrv: str, group: str, topic: str) -> PushConsumer:
    c = PushConsumer(
        group,
        client_config=fast_config(namesrv),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    c.subscribe(topic)
    return c


def test_a_listener_returning_no_status_is_warned_about_once(shared_dev, caplog):
    ns = shared_dev.namesrv
    with Admin(ns) as admin:
        admin.create_topic("WarnStatus", queues=1)
    calls: list[bytes] = []

    def listener(msgs):
        calls.extend(m.body for m in msgs)
        # True is not a status: a failure (consumed again), said once for this listener.
        return True if len(calls) < 3 else ConsumeStatus.CONSUME_SUCCESS

    c = consumer(ns, "warn-status-group", "WarnStatus")
    c.register_listener(listener)
    with caplog.at_level(logging.WARNING, logger="rocketpy.consumer"):
        c.start()
        try:
            with Producer("warn-status-producer", client_config=fast_config(ns)) as p:
                p.send(Message("WarnStatus", b"m"))
            assert wait_until(lambda: len(calls) >= 3, timeout=30), calls
        finally:
            c.shutdown()
    said = [r.getMessage() for r in caplog.records if "which is not a ConsumeStatus" in r.message]
    assert len(said) == 1, said
    assert "listener" in said[0] and "returned True" in said[0]
    assert "ConsumeStatus.CONSUME_SUCCESS (or None)" in said[0]


def test_a_subscription_to_a_missing_topic_is_warned_about(shared_dev, caplog):
    c = consumer(shared_dev.namesrv, "warn-missing-group", "NoSuchTopicYet")
    c.register_listener(lambda msgs: ConsumeStatus.CONSUME_SUCCESS)
    with caplog.at_level(logging.WARNING, logger="rocketpy.consumer"):
        c.start()
        try:
            c.subscribe("AlsoMissing")
        finally:
            c.shutdown()
    said = " | ".join(r.getMessage() for r in caplog.records)
    for topic in ("NoSuchTopicYet", "AlsoMissing"):
        assert f"topic {topic!r} does not exist" in said
    assert "updateTopic" in said
    assert "%RETRY%" not in said, "a group's retry topic appears with its first failure"


@pytest.mark.parametrize("value", [[], "OK", 1])
def test_unhashable_and_other_values_count_as_failure(value):
    c = PushConsumer("warn-unit-group", "127.0.0.1:1")
    c.register_listener(lambda msgs: value)
    c._check_status(c._listener, value)  # type: ignore[arg-type]
    assert c._warned_status
