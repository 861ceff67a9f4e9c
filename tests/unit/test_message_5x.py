"""``Message.delivery_timestamp`` and ``Message.message_group`` (RocketMQ 5.x concepts) as
properties of a 4.x message, what they refuse, and the queue a message group picks."""

from __future__ import annotations

import pickle

import pytest

from rocketpy import Message, MessageQueue
from rocketpy.producer._selectors import select_by_message_group


def test_delivery_timestamp_is_the_timer_property() -> None:
    m = Message("T", b"x", delivery_timestamp=1_700_000_000_000)
    assert m.delivery_timestamp == 1_700_000_000_000
    assert m.properties == {"TIMER_DELIVER_MS": "1700000000000"}
    m.delivery_timestamp = 1_700_000_000_001
    assert m.properties["TIMER_DELIVER_MS"] == "1700000000001"
    m.delivery_timestamp = None
    assert m.delivery_timestamp is None and "TIMER_DELIVER_MS" not in m.properties
    with pytest.raises(ValueError, match="milliseconds since the epoch"):
        m.delivery_timestamp = -1


def test_message_group_is_the_sharding_key() -> None:
    m = Message("T", b"x", message_group="order-7")
    assert m.message_group == "order-7"
    assert m.properties == {"__SHARDINGKEY": "order-7"}
    assert pickle.loads(pickle.dumps(m)).message_group == "order-7"
    m.message_group = None
    assert m.message_group is None and m.properties == {}
    with pytest.raises(ValueError, match="blank"):
        m.message_group = " "


def test_one_delay_only() -> None:
    with pytest.raises(ValueError, match="keep delivery_timestamp"):
        Message("T", b"x", delay_level=3, delivery_timestamp=1_700_000_000_000)
    timed = Message("T", b"x", delivery_timestamp=1_700_000_000_000)
    with pytest.raises(ValueError, match="not both"):
        timed.delay_level = 2
    delayed = Message("T", b"x", delay_level=2)
    with pytest.raises(ValueError, match="not both"):
        delayed.delivery_timestamp = 1_700_000_000_000
    delayed.delay_level = 0  # taking one away lets the other in
    delayed.delivery_timestamp = 1_700_000_000_000


def test_fifo_or_timed_not_both() -> None:
    with pytest.raises(ValueError, match="FIFO or delayed"):
        Message("T", b"x", message_group="g", delivery_timestamp=1_700_000_000_000)
    with pytest.raises(ValueError, match="FIFO or delayed"):
        Message("T", b"x", message_group="g").delivery_timestamp = 1_700_000_000_000


#: (group, write queues, index) as Guava 31.1's Hashing.consistentHash(group.hashCode(), n)
#: answers: RocketMQ 5.x's proxy picks a message group's queue this way.
GUAVA = [
    ("order-1", 4, 3),
    ("order-1", 16, 3),
    ("order-1", 1000, 489),
    ("order-2", 4, 2),
    ("order-2", 16, 11),
    ("order-2", 1000, 184),
    ("g", 16, 12),
    ("订单", 8, 7),
    ("订单", 1000, 50),
    ("abcdefghijklmnop", 1000, 853),
    ("x-99", 16, 13),
    ("x-99", 1000, 542),
]


@pytest.mark.parametrize(("group", "n", "index"), GUAVA)
def test_a_group_picks_the_queue_the_5x_proxy_picks(group: str, n: int, index: int) -> None:
    # The proxy sorts the write queues; the route's order does not matter.
    queues = [MessageQueue("T", "broker-a", i) for i in reversed(range(n))]
    assert select_by_message_group(queues, group) == MessageQueue("T", "broker-a", index)
