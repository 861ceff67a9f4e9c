"""Choosing a queue for a message (RocketMQ's ``MessageQueueSelector`` and its two stock
selectors, and the queue of a 5.x message group), and the shape of a send callback."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from rocketpy._native import java_string_hash
from rocketpy.message import Message, MessageQueue, SendResult

#: ``selector(queues, message, arg) -> queue`` (RocketMQ's ``MessageQueueSelector``).
MessageQueueSelector = Callable[[Sequence[MessageQueue], Message, object], MessageQueue]

#: The property holding a message's 5.x message group (``MessageConst.PROPERTY_SHARDING_KEY``).
SHARDING_KEY = "__SHARDINGKEY"

#: ``callback(result, error)``: exactly one is set.
SendCallback = Callable[[SendResult | None, BaseException | None], None]


def select_by_hash(mqs: Sequence[MessageQueue], msg: Message, arg: object) -> MessageQueue:
    """RocketMQ's ``SelectMessageQueueByHash``: the same sharding key always picks the same
    queue, and the same one a Java producer picks (Java's ``hashCode`` of a str or int)."""
    # Integer.hashCode is the int's 32-bit value; String.hashCode as Java computes it.
    h = ((arg + 2**31) % 2**32) - 2**31 if isinstance(arg, int) else java_string_hash(str(arg))
    # Java: `abs(h % n)` with a truncating %, which equals `abs(h) % n`.
    return mqs[abs(h) % len(mqs)]


def select_random(mqs: Sequence[MessageQueue], msg: Message, arg: object) -> MessageQueue:
    """RocketMQ's ``SelectMessageQueueByRandom``."""
    return random.choice(list(mqs))


def message_group_of(msg: Message | None) -> str | None:
    """The 5.x message group of ``msg`` (its ``__SHARDINGKEY`` property), or None."""
    if msg is None:
        return None
    return msg.properties.get(SHARDING_KEY) or None


def select_by_message_group(mqs: Sequence[MessageQueue], group: str) -> MessageQueue:
    """The queue of a message group: the one RocketMQ's 5.x proxy picks for it (its
    ``SendMessageQueueSelector``: a jump consistent hash of the group's Java ``hashCode``
    over the write queues sorted by topic, broker name and queue id), so a group keeps its
    queue whether a 5.x client or rocketpy sends it, and moves as little as possible when
    queues are added."""
    ordered = sorted(mqs)
    return ordered[_jump_hash(java_string_hash(group), len(ordered))]


def _jump_hash(key: int, buckets: int) -> int:
    """Lamping and Veach's jump consistent hash (as Guava's ``Hashing.consistentHash``
    computes it, with its 64-bit linear congruential generator)."""
    state = key & 0xFFFFFFFFFFFFFFFF  # Java widens the int hash to a signed long
    candidate = 0
    while True:
        state = (2862933555777941757 * state + 1) & 0xFFFFFFFFFFFFFFFF
        # (int)(state >>> 33) + 1 over 2^31: a double in (0, 1].
        step = ((state >> 33) + 1) / 2**31
        nxt = int((candidate + 1) / step)
        if nxt >= buckets:
            return candidate
        candidate = nxt
