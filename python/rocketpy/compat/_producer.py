"""The producers of the 2.x client (``rocketmq.client.Producer`` and
``TransactionMQProducer``) over :class:`rocketpy.Producer` and
:class:`rocketpy.TransactionProducer`.

2.x configures a producer with setters between its construction and ``start()``; rocketpy
takes its settings when constructed, so the rocketpy producer is made by ``start()``. A
setter called after ``start()`` raises instead of changing nothing."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from rocketpy._native import Message as NativeMessage
from rocketpy._native import MessageExt
from rocketpy._util import unique_ids
from rocketpy.compat._message import (
    Message,
    MessageProperty,
    ReceivedMessage,
    SendResult,
    TransactionStatus,
)
from rocketpy.compat._settings import ClientSettings, text
from rocketpy.errors import ClientError
from rocketpy.producer import Producer as NativeProducer
from rocketpy.producer import select_by_hash
from rocketpy.transaction import LocalTransactionState, TransactionProducer

log = logging.getLogger("rocketpy.compat")

__all__ = ["Producer", "TransactionMQProducer"]

#: The zlib level rocketpy compresses with (the C++ client's default level too).
_COMPRESS_LEVEL = 5

#: 2.x's transaction outcomes as rocketpy's.
_OUTCOME = {
    TransactionStatus.COMMIT: LocalTransactionState.COMMIT_MESSAGE,
    TransactionStatus.ROLLBACK: LocalTransactionState.ROLLBACK_MESSAGE,
    TransactionStatus.UNKNOWN: LocalTransactionState.UNKNOW,
}


def _outcome(value: object, what: str) -> LocalTransactionState:
    """A 2.x callback's answer as rocketpy's; anything but a :class:`TransactionStatus` is
    UNKNOWN (2.x raises ValueError in the callback, with the same effect)."""
    # 2.x compares with ==: its plain ints 0, 1, 2 pass too.
    if isinstance(value, int) and value in {s.value for s in TransactionStatus}:
        return _OUTCOME[TransactionStatus(value)]
    log.error(
        "%s returned %r, not a TransactionStatus: treated as TransactionStatus.UNKNOWN",
        what,
        value,
    )
    return LocalTransactionState.UNKNOW


class Producer(ClientSettings):
    """2.x's producer: ``Producer(group_id)``, the setters, ``start()``, then ``send_sync``,
    ``send_oneway`` or ``send_orderly_with_sharding_key``.

    Args:
        group_id: the producer group.
        orderly: 2.x's orderly producer; every rocketpy producer can send in order
            (:meth:`send_orderly_with_sharding_key`), so this changes nothing.
        timeout: the send timeout in ms (:meth:`set_timeout`).
        compress_level: see :meth:`set_compress_level`.
        max_message_size: the largest body accepted (:meth:`set_max_message_size`).
    """

    def __init__(
        self,
        group_id: str | bytes,
        orderly: bool = False,
        timeout: int | None = None,
        compress_level: int | None = None,
        max_message_size: int | None = None,
    ) -> None:
        super().__init__(group_id)
        self._orderly = orderly
        self._producer: NativeProducer | None = None
        if timeout is not None:
            self.set_timeout(timeout)
        if compress_level is not None:
            self.set_compress_level(compress_level)
        if max_message_size is not None:
            self.set_max_message_size(max_message_size)

    @property
    def native(self) -> NativeProducer | None:
        """The rocketpy producer doing the work, once started."""
        return self._producer

    # -- settings (before start) ---------------------------------------------------------------

    def _is_started(self) -> bool:
        return self._producer is not None

    def set_group(self, group_name: str | bytes) -> None:
        """Sets the producer group."""
        self._set("set_group")
        self._group = text(group_name)

    def set_timeout(self, timeout: int) -> None:
        """Sets the send timeout in ms (rocketpy's ``send_timeout_ms``)."""
        self._set("set_timeout", send_timeout_ms=int(timeout))

    def set_compress_level(self, level: int) -> None:
        """rocketpy compresses at zlib level 5 (the C++ client's default): other levels
        cannot be chosen."""
        if level != _COMPRESS_LEVEL:
            raise NotImplementedError(
                f"rocketpy compresses bodies at zlib level {_COMPRESS_LEVEL} only; what it "
                "can set is which bodies: rocketpy.Producer(compress_msg_body_over_howmuch=...)"
            )
        self._set("set_compress_level")

    def set_max_message_size(self, max_size: int) -> None:
        """Sets the largest body accepted (rocketpy's ``max_message_size``)."""
        self._set("set_max_message_size", max_message_size=int(max_size))

    # -- lifecycle -----------------------------------------------------------------------------

    def _make(self) -> NativeProducer:
        return NativeProducer(self._group, self._namesrv, **self._options)

    def start(self) -> None:
        """Connects to the name servers; call once before sending."""
        if self._producer is not None:
            raise ClientError("producer already started")
        producer = self._make()
        producer.start()
        self._producer = producer

    def shutdown(self) -> None:
        """Stops the producer (nothing happens if it was not started)."""
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.shutdown()

    def __enter__(self) -> Producer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # -- sending -------------------------------------------------------------------------------

    def _started(self) -> NativeProducer:
        if self._producer is None:
            raise ClientError("producer not started: call start() first")
        return self._producer

    def send_sync(self, msg: Message) -> SendResult:
        """Sends ``msg`` and waits for the broker's answer.

        Raises:
            rocketpy.ClientError: the message was not stored (2.x raises
                ``ProducerSendSyncFailed``).
        """
        return SendResult.of(self._started().send(msg.native))

    def send_oneway(self, msg: Message) -> None:
        """Sends ``msg`` without waiting for an answer."""
        self._started().send_oneway(msg.native)

    def send_orderly_with_sharding_key(self, msg: Message, sharding_key: str | bytes) -> SendResult:
        """Sends ``msg`` to the queue of ``sharding_key``: messages of one key go to one
        queue, in order (rocketpy's ``send(msg, selector=select_by_hash, arg=key)``)."""
        key = text(sharding_key)
        return SendResult.of(self._started().send(msg.native, selector=select_by_hash, arg=key))


class _Listener:
    """2.x's callbacks as a rocketpy :class:`rocketpy.TransactionListener`: the local
    transaction's callback travels with each send, as 2.x passes it."""

    def __init__(self, checker: Callable[[ReceivedMessage], Any]) -> None:
        self.checker = checker

    def execute_local_transaction(self, msg: NativeMessage, arg: Any) -> LocalTransactionState:
        local_execute, user_args = arg
        return _outcome(local_execute(ReceivedMessage(msg), user_args), "local_execute")

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        return _outcome(self.checker(ReceivedMessage(msg)), "checker_callback")


class TransactionMQProducer(Producer):
    """2.x's transactional producer.

    Args:
        group_id: the producer group.
        checker_callback: ``checker_callback(msg) -> TransactionStatus``: the broker asks
            for the outcome of a transaction left UNKNOWN.
        user_args: kept as 2.x keeps it: 2.x does not pass it to ``checker_callback``.
        timeout, compress_level, max_message_size: as :class:`Producer`'s.
    """

    def __init__(
        self,
        group_id: str | bytes,
        checker_callback: Callable[[ReceivedMessage], Any],
        user_args: Any = None,
        timeout: int | None = None,
        compress_level: int | None = None,
        max_message_size: int | None = None,
    ) -> None:
        super().__init__(group_id, False, timeout, compress_level, max_message_size)
        self.user_args = user_args
        self._listener = _Listener(checker_callback)

    def _make(self) -> TransactionProducer:
        return TransactionProducer(self._group, self._namesrv, self._listener, **self._options)

    def __enter__(self) -> TransactionMQProducer:
        self.start()
        return self

    def send_message_in_transaction(
        self,
        message: Message,
        local_execute: Callable[[ReceivedMessage, Any], Any],
        user_args: Any = None,
    ) -> SendResult:
        """Sends ``message`` as a half message, runs ``local_execute(msg, user_args)``
        (returning a :class:`TransactionStatus`), and commits or rolls back the message;
        UNKNOWN leaves it to ``checker_callback``."""
        producer = self._started()
        assert isinstance(producer, TransactionProducer)
        # Its own copy with its unique id: local_execute sees msg.id, as in 2.x, and a
        # message object sent again gets a new id.
        native = message.native
        msg = NativeMessage(
            native.topic, native.body, properties=dict(native.properties), flag=native.flag
        )
        msg.properties[MessageProperty.UNIQ_CLIENT_MESSAGE_ID_KEYIDX.value] = unique_ids.next()
        result = producer.send_message_in_transaction(msg, (local_execute, user_args))
        return SendResult.of(result)
