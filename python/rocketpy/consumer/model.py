"""The consumers' vocabulary: message models, where a new group starts, subscriptions, and
the pull state of an assigned queue (shared by push and lite-pull consumers)."""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass, field
from typing import Any

from rocketpy._native import MessageExt, java_string_hash
from rocketpy._util import now_millis
from rocketpy.consumer.process_queue import ProcessQueue
from rocketpy.message import MessageQueue
from rocketpy.protocol import MASTER_ID
from rocketpy.selector import SQL92, TAG, MessageSelector, selector_of


class MessageModel(enum.Enum):
    """How a group shares messages."""

    #: Each message goes to one member; queues are shared among members; offsets on brokers.
    CLUSTERING = "CLUSTERING"
    #: Every member gets every message; offsets in a local file.
    BROADCASTING = "BROADCASTING"


class ConsumeFromWhere(enum.Enum):
    """Where a group with no committed offset starts (the broker may still answer 0 for a
    young queue whose first message is in memory, as RocketMQ does)."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    #: From the first message stored at or after ``consume_timestamp``.
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


@dataclass
class Subscription:
    """A topic and its expression: tags (``*`` or ``TagA || TagB``) or an SQL92 filter."""

    topic: str
    expression: str
    tags: frozenset[str]
    version: int = field(default_factory=now_millis)
    #: RocketMQ's expression type: ``TAG`` or ``SQL92``.
    type: str = TAG

    @staticmethod
    def parse(topic: str, expression: str | MessageSelector | None) -> Subscription:
        """The subscription to ``expression`` (a tag expression or a selector). Tags are
        sent to brokers without blanks (``A||B``): rocketmq-rust's broker hashes the
        untrimmed tags of ``A || B`` and then filters out every message; brokers that trim
        read both spellings alike.

        Raises:
            ClientError: a string that cannot be a tag expression (see
                :func:`~rocketpy.validate.check_tag_expression`), or an SQL92 filter that
                does not compile.
        """
        selector = selector_of(expression)
        if selector.type == SQL92:
            return Subscription(topic, selector.expression, frozenset(), type=SQL92)
        expr = selector.expression
        if expr == "*":
            return Subscription(topic, expr, frozenset())
        ordered = list(dict.fromkeys(t.strip() for t in expr.split("||") if t.strip()))
        return Subscription(topic, "||".join(ordered) or "*", frozenset(ordered))

    def matches(self, msg: MessageExt) -> bool:
        """Exact tag match (the broker filters by tag hash, which can collide); SQL92 filters
        are evaluated by the broker."""
        return not self.tags or msg.tags in self.tags

    def data(self) -> dict[str, Any]:
        """``SubscriptionData`` JSON for heartbeats."""
        tags = sorted(self.tags)
        return {
            "classFilterMode": False,
            "topic": self.topic,
            "subString": self.expression,
            "tagsSet": tags,
            "codeSet": [java_string_hash(t) for t in tags],
            "subVersion": self.version,
            "expressionType": self.type,
        }


@dataclass
class PullRequest:
    """The pull state of one assigned queue."""

    mq: MessageQueue
    pq: ProcessQueue
    next_offset: int
    #: The broker id to pull from: the broker's last ``suggestWhichBrokerId`` (RocketMQ's
    #: pullFromWhichNodeTable), the master's at first.
    pull_from: int = MASTER_ID
    #: The queue's max offset on the broker at the last pull answer (-1: none yet), for
    #: the consume-lag metric.
    broker_max: int = -1


def _millis(when: dt.datetime | int | float) -> int:
    if isinstance(when, dt.datetime):
        return int(when.timestamp() * 1000)
    return int(when)
