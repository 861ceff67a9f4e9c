"""Messages, queues and send results."""

from __future__ import annotations

import enum
from dataclasses import dataclass

# ``Message`` is native (see ``crates/python/src/outgoing.rs`` for why).
from rocketpy._native import Message, MessageExt

__all__ = ["Message", "MessageExt", "MessageQueue", "SendResult", "SendStatus"]


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
