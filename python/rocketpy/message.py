"""Messages, queues and send results."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rocketpy._native import MessageExt
from rocketpy.protocol import Property

__all__ = ["Message", "MessageExt", "MessageQueue", "SendResult", "SendStatus"]


class Message:
    """A message to send.

    Args:
        topic: the topic (1 to 127 characters of letters, digits, ``%``, ``|``, ``_``, ``-``).
        body: the payload (``bytes``; ``str`` is encoded as UTF-8).
        tags: one tag, used for broker-side filtering (``subscribe(topic, "TagA || TagB")``).
        keys: a key or several (a list, or one space-separated string), indexed for look-up.
        properties: user properties; names must not contain the separators ``\\x01``/``\\x02``.
        flag: an application-defined integer stored with the message.
        delay_level: deliver after the broker's delay level N (1 = 1 s ... 18 = 2 h); 0 = now.
    """

    __slots__ = ("body", "flag", "properties", "topic")

    def __init__(
        self,
        topic: str,
        body: bytes | bytearray | memoryview | str,
        tags: str | None = None,
        keys: str | Iterable[str] | None = None,
        properties: Mapping[str, str] | None = None,
        *,
        flag: int = 0,
        delay_level: int = 0,
    ) -> None:
        self.topic = topic
        self.body: bytes = body.encode() if isinstance(body, str) else bytes(body)
        self.flag = flag
        self.properties: dict[str, str] = dict(properties) if properties else {}
        if tags:
            self.properties[Property.TAGS] = tags
        if keys:
            self.keys = keys if isinstance(keys, str) else " ".join(keys)
        if delay_level:
            self.delay_level = delay_level

    @property
    def tags(self) -> str | None:
        """The TAGS property."""
        return self.properties.get(Property.TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        self._set(Property.TAGS, value)

    @property
    def keys(self) -> str | None:
        """The KEYS property: keys separated by spaces."""
        return self.properties.get(Property.KEYS)

    @keys.setter
    def keys(self, value: str | None) -> None:
        self._set(Property.KEYS, value)

    @property
    def delay_level(self) -> int:
        """The delay level (0 = none)."""
        return int(self.properties.get(Property.DELAY_TIME_LEVEL, "0"))

    @delay_level.setter
    def delay_level(self, level: int) -> None:
        self._set(Property.DELAY_TIME_LEVEL, str(level) if level > 0 else None)

    def _set(self, name: str, value: str | None) -> None:
        if value is None:
            self.properties.pop(name, None)
        else:
            self.properties[name] = value

    def __repr__(self) -> str:
        return (
            f"Message(topic={self.topic!r}, tags={self.tags!r}, keys={self.keys!r}, "
            f"body={len(self.body)} bytes)"
        )


@dataclass(frozen=True, order=True, slots=True)
class MessageQueue:
    """One queue of a topic on one broker group."""

    topic: str
    broker_name: str
    queue_id: int

    def __str__(self) -> str:
        return f"MessageQueue[{self.topic}@{self.broker_name}#{self.queue_id}]"


class SendStatus(enum.Enum):
    """How far a sent message got (RocketMQ's ``SendStatus``)."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


@dataclass(frozen=True, slots=True)
class SendResult:
    """The outcome of a send.

    Attributes:
        status: ``SEND_OK`` unless a flush or replication wait timed out (the message is
            stored in every case).
        msg_id: the client-generated unique id (UNIQ_KEY).
        offset_msg_id: the broker's id (store address + CommitLog offset).
        message_queue: where the message went.
        queue_offset: its offset in that queue.
    """

    status: SendStatus
    msg_id: str
    offset_msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    region_id: str = "DefaultRegion"
    transaction_id: str | None = None
