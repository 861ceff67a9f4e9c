"""Choosing a queue for a message (RocketMQ's ``MessageQueueSelector`` and its two stock
selectors), and the shape of a send callback."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from rocketpy._native import java_string_hash
from rocketpy.message import Message, MessageQueue, SendResult

#: ``selector(queues, message, arg) -> queue`` (RocketMQ's ``MessageQueueSelector``).
MessageQueueSelector = Callable[[Sequence[MessageQueue], Message, object], MessageQueue]

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
