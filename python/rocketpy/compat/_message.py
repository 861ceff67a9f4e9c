"""The messages, results and enums of the 2.x client (``rocketmq.client`` of
``rocketmq-client-python``), over rocketpy's :class:`rocketpy.Message` and
:class:`rocketpy.MessageExt`.

Values are as 2.x gives them, as its ctypes layer reads them from the C++ client: a received
message's ``topic`` and ``id`` are ``str``; its ``body``, ``tags``, ``keys`` and properties
are ``bytes`` (``b""`` when absent, as the C++ client answers an empty string)."""

from __future__ import annotations

import enum
from typing import NamedTuple

from rocketpy._native import Message as NativeMessage
from rocketpy._native import MessageExt
from rocketpy.message import SendResult as NativeSendResult
from rocketpy.message import SendStatus as NativeSendStatus

__all__ = [
    "ConsumeStatus",
    "Message",
    "MessageModel",
    "MessageProperty",
    "ReceivedMessage",
    "SendResult",
    "SendStatus",
    "TransactionStatus",
]


class SendStatus(enum.IntEnum):
    """How far a sent message got (2.x's values)."""

    OK = 0
    FLUSH_DISK_TIMEOUT = 1
    FLUSH_SLAVE_TIMEOUT = 2
    SLAVE_NOT_AVAILABLE = 3


class TransactionStatus(enum.IntEnum):
    """What a local transaction or a check returns (2.x's values)."""

    COMMIT = 0
    ROLLBACK = 1
    UNKNOWN = 2


class ConsumeStatus(enum.IntEnum):
    """What a push consumer's callback returns (2.x's values)."""

    CONSUME_SUCCESS = 0
    RECONSUME_LATER = 1


class MessageModel(enum.IntEnum):
    """How a consumer group shares messages (2.x's values)."""

    BROADCASTING = 0
    CLUSTERING = 1


class MessageProperty(enum.Enum):
    """Well-known property names, as 2.x's ``rocketmq.consts.MessageProperty`` lists them
    (``ReceivedMessage.get_property`` takes one)."""

    TRACE_SWITCH = "TRACE_ON"
    MSG_REGION = "MSG_REGION"
    KEYS = "KEYS"
    TAGS = "TAGS"
    WAIT_STORE_MSG_OK = "WAIT"
    DELAY_TIME_LEVEL = "DELAY"
    RETRY_TOPIC = "RETRY_TOPIC"
    REAL_TOPIC = "REAL_TOPIC"
    REAL_QUEUE_ID = "REAL_QID"
    TRANSACTION_PREPARED = "TRAN_MSG"
    PRODUCER_GROUP = "PGROUP"
    MIN_OFFSET = "MIN_OFFSET"
    MAX_OFFSET = "MAX_OFFSET"
    BUYER_ID = "BUYER_ID"
    ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
    TRANSFER_FLAG = "TRANSFER_FLAG"
    CORRECTION_FLAG = "CORRECTION_FLAG"
    MQ2_FLAG = "MQ2_FLAG"
    RECONSUME_TIME = "RECONSUME_TIME"
    UNIQ_CLIENT_MESSAGE_ID_KEYIDX = "UNIQ_KEY"
    MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
    CONSUME_START_TIMESTAMP = "CONSUME_START_TIME"


class SendResult(NamedTuple):
    """2.x's send result: ``status`` (:class:`SendStatus`), ``msg_id`` (the unique id a
    consumer sees as ``msg.id``) and ``offset`` (the message's offset in its queue)."""

    status: SendStatus
    msg_id: str
    offset: int

    @staticmethod
    def of(result: NativeSendResult) -> SendResult:
        """The 2.x form of a rocketpy :class:`rocketpy.SendResult`."""
        status = _STATUS[result.status]
        return SendResult(status, result.msg_id, result.queue_offset)


#: rocketpy's send statuses as 2.x names them (``SEND_OK`` is 2.x's ``OK``).
_STATUS = {
    NativeSendStatus.SEND_OK: SendStatus.OK,
    NativeSendStatus.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    NativeSendStatus.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    NativeSendStatus.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}


def _text(value: str | bytes) -> str:
    """2.x takes ``str`` or UTF-8 ``bytes`` wherever it takes text."""
    return value.decode("utf-8") if isinstance(value, bytes) else value


class Message:
    """A message to send, built with 2.x's setters.

    Args:
        topic: the topic (``str`` or UTF-8 ``bytes``).
    """

    def __init__(self, topic: str | bytes) -> None:
        # The body starts empty, as 2.x's; sending it so is refused (RocketMQ's rule).
        self._message = NativeMessage(_text(topic), b"")

    @property
    def native(self) -> NativeMessage:
        """The :class:`rocketpy.Message` this one builds (what rocketpy's producers send)."""
        return self._message

    def set_keys(self, keys: str | bytes) -> None:
        """Sets the keys (one, or several separated by spaces)."""
        self._message.keys = _text(keys)

    def set_tags(self, tags: str | bytes) -> None:
        """Sets the tag."""
        self._message.tags = _text(tags)

    def set_body(self, body: str | bytes) -> None:
        """Sets the body (``str`` is sent as UTF-8)."""
        self._message.body = body

    def set_property(self, key: str | bytes, value: str | bytes) -> None:
        """Sets a user property."""
        self._message.properties[_text(key)] = _text(value)

    def set_delay_time_level(self, delay_time_level: int) -> None:
        """Delivers the message after the broker's delay level ``delay_time_level``."""
        self._message.delay_level = delay_time_level


class ReceivedMessage:
    """A message handed to a 2.x callback: a consumed :class:`rocketpy.MessageExt`, or (to a
    transaction's ``local_execute``) the :class:`rocketpy.Message` being sent."""

    def __init__(self, message: MessageExt | NativeMessage) -> None:
        self._message = message

    @property
    def native(self) -> MessageExt | NativeMessage:
        """The rocketpy message behind this one."""
        return self._message

    def _ext(self, name: str) -> int:
        # A message being sent has no stored fields yet: 0, as the C++ client's default.
        return int(getattr(self._message, name, 0) or 0)

    @property
    def topic(self) -> str:
        """The topic."""
        return self._message.topic

    @property
    def tags(self) -> bytes:
        """The tag (``b""``: none)."""
        return (self._message.tags or "").encode()

    @property
    def keys(self) -> bytes:
        """The keys, separated by spaces (``b""``: none)."""
        return (self._message.keys or "").encode()

    @property
    def body(self) -> bytes:
        """The body."""
        return self._message.body

    @property
    def id(self) -> str:
        """The message id a producer's ``send_sync`` returned (its unique key)."""
        if isinstance(self._message, MessageExt):
            return self._message.msg_id
        return self._message.properties.get(MessageProperty.UNIQ_CLIENT_MESSAGE_ID_KEYIDX.value, "")

    @property
    def delay_time_level(self) -> int:
        """The delay level it was sent with (0: none)."""
        return int(self._message.properties.get(MessageProperty.DELAY_TIME_LEVEL.value) or 0)

    @property
    def queue_id(self) -> int:
        """The queue it was read from."""
        return self._ext("queue_id")

    @property
    def reconsume_times(self) -> int:
        """How many times it was delivered again."""
        return self._ext("reconsume_times")

    @property
    def store_size(self) -> int:
        """Its size in the CommitLog."""
        return self._ext("store_size")

    @property
    def born_timestamp(self) -> int:
        """When it was sent (ms)."""
        return self._ext("born_timestamp")

    @property
    def store_timestamp(self) -> int:
        """When the broker stored it (ms)."""
        return self._ext("store_timestamp")

    @property
    def queue_offset(self) -> int:
        """Its offset in its queue."""
        return self._ext("queue_offset")

    @property
    def commit_log_offset(self) -> int:
        """Its offset in the CommitLog."""
        return self._ext("commit_log_offset")

    @property
    def prepared_transaction_offset(self) -> int:
        """Its half message's offset (transactional messages)."""
        return self._ext("prepared_transaction_offset")

    def get_property(self, prop: str | bytes | MessageProperty) -> bytes:
        """The property ``prop`` (a name or a :class:`MessageProperty`), ``b""`` if unset."""
        name = prop.value if isinstance(prop, MessageProperty) else _text(prop)
        return (self._message.properties.get(name) or "").encode()

    def __getitem__(self, key: str | bytes | MessageProperty) -> bytes:
        return self.get_property(key)

    def __str__(self) -> str:
        return self.body.decode("utf-8")

    def __bytes__(self) -> bytes:
        return self.body

    def __repr__(self) -> str:
        return f"<ReceivedMessage topic={self.topic!r} id={self.id!r} body={self.body!r}>"
