"""What a consumer cannot do as asked is said, not silently done otherwise: a listener that
returns something that is not a status, and a subscription to a topic that does not exist."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from helpers import fast_config, wait_until
from rocketpy import ConsumeFromWhere, ConsumeStatus, Message, Producer, PushConsumer
from rocketpy.admin import Admin
from rocketpy.client.instance import ClientInstance
from rocketpy.consumer import broker_check


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


def test_a_subscription_to_a_missing_topic_is_warned_about(shared_dev, caplog, monkeypatch):
    # The warning waits WARN_AFTER_S for a route (a topic a send just created is announced a
    # moment later); shortened here.
    monkeypatch.setattr(broker_check, "WARN_AFTER_S", 0.1)
    c = consumer(shared_dev.namesrv, "warn-missing-group", "NoSuchTopicYet")
    c.register_listener(lambda msgs: ConsumeStatus.CONSUME_SUCCESS)

    def said() -> str:
        return " | ".join(r.getMessage() for r in caplog.records)

    missing = ("NoSuchTopicYet", "AlsoMissing")
    with caplog.at_level(logging.WARNING, logger="rocketpy.consumer"):
        c.start()
        try:
            c.subscribe("AlsoMissing")
            assert wait_until(
                lambda: all(f"topic {t!r} does not exist" in said() for t in missing), timeout=10
            ), said()
        finally:
            c.shutdown()
    assert "updateTopic" in said()
    assert "%RETRY%" not in said(), "a group's retry topic appears with its first failure"


def test_a_topic_that_appears_in_time_is_not_warned_about(shared_dev, caplog):
    """A topic a send has just created reaches the name server a moment after the answer: the
    warning waits for a second look (the README's ACL example printed it). The scheduler is
    played by the test, which runs the second look when it chooses."""
    inst = ClientInstance.acquire(fast_config(shared_dev.namesrv), "warn-late", "consumer")
    looks: list[tuple[float, Callable[[], None]]] = []

    def later(delay: float, fn: Callable[[], None]) -> None:
        looks.append((delay, fn))

    def said() -> str:
        return " | ".join(r.getMessage() for r in caplog.records)

    try:
        with caplog.at_level(logging.WARNING, logger="rocketpy.consumer"):
            assert broker_check.route_or_warn(inst, "AppearsSoon", later) is None
            assert broker_check.route_or_warn(inst, "StillMissing", later) is None
            assert [d for d, _ in looks] == [broker_check.WARN_AFTER_S] * 2
            assert "does not exist" not in said(), "no warning before the second look"
            with Admin(shared_dev.namesrv) as admin:
                admin.create_topic("AppearsSoon", queues=2)
                assert wait_until(lambda: admin.topic_route("AppearsSoon") is not None)
            for _, fn in looks:
                fn()
    finally:
        inst.release()
    assert "AppearsSoon" not in said()
    assert "topic 'StillMissing' does not exist" in said()


@pytest.mark.parametrize("value", [[], "OK", 1])
def test_unhashable_and_other_values_count_as_failure(value):
    c = PushConsumer("warn-unit-group", "127.0.0.1:1")
    c.register_listener(lambda msgs: value)
    c._check_status(c._listener, value)  # type: ignore[arg-type]
    assert c._warned_status
