"""The push consumer of the 2.x client (``rocketmq.client.PushConsumer``) over
:class:`rocketpy.PushConsumer`: ``subscribe(topic, callback, expression)`` with a callback
that takes one message and returns a :class:`ConsumeStatus`.

As with the producers, the rocketpy consumer is made by ``start()`` from the settings given
before it. Each topic's messages go to that topic's callback (2.x keeps one callback per
consumer, the last subscribed; with one subscription, the usual case, both are the same)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from rocketpy._native import MessageExt
from rocketpy.compat._message import ConsumeStatus, MessageModel, ReceivedMessage
from rocketpy.compat._settings import ClientSettings, text
from rocketpy.consumer.model import MessageModel as NativeMessageModel
from rocketpy.consumer.push import ConsumeOrderlyStatus
from rocketpy.consumer.push import ConsumeStatus as NativeConsumeStatus
from rocketpy.consumer.push import PushConsumer as NativePushConsumer
from rocketpy.errors import ClientError

log = logging.getLogger("rocketpy.compat")

__all__ = ["PushConsumer"]

#: ``callback(msg) -> ConsumeStatus``.
Callback = Callable[[ReceivedMessage], Any]


class PushConsumer(ClientSettings):
    """2.x's push consumer.

    Args:
        group_id: the consumer group.
        orderly: consume each queue in order, one message at a time (rocketpy's
            ``register_listener(fn, orderly=True)``); a failure retries the message after a
            pause instead of sending it back.
        message_model: :class:`MessageModel` ``CLUSTERING`` (members share the queues) or
            ``BROADCASTING`` (every member gets every message).
    """

    NATIVE = "rocketpy.PushConsumer"

    def __init__(
        self,
        group_id: str | bytes,
        orderly: bool = False,
        message_model: MessageModel = MessageModel.CLUSTERING,
    ) -> None:
        super().__init__(group_id)
        self._orderly = orderly
        self._subscriptions: dict[str, tuple[Callback, str]] = {}
        self._last: Callback | None = None
        self._warned: set[int] = set()
        self._warned_lock = threading.Lock()
        self._consumer: NativePushConsumer | None = None
        self.set_message_model(message_model)

    @property
    def native(self) -> NativePushConsumer | None:
        """The rocketpy consumer doing the work, once started."""
        return self._consumer

    # -- settings (before start) ---------------------------------------------------------------

    def _is_started(self) -> bool:
        return self._consumer is not None

    def set_message_model(self, model: MessageModel) -> None:
        """Clustering or broadcasting (:class:`MessageModel`)."""
        native = NativeMessageModel[MessageModel(model).name]
        self._set("set_message_model", message_model=native)

    def set_group(self, group_id: str | bytes) -> None:
        """Sets the consumer group."""
        self._set("set_group")
        self._group = text(group_id)

    def set_thread_count(self, thread_count: int) -> None:
        """Threads running the callback (rocketpy's ``consume_thread_max``)."""
        self._set("set_thread_count", consume_thread_max=int(thread_count))

    def set_message_batch_max_size(self, max_size: int) -> None:
        """Most messages handed over at once (rocketpy's
        ``consume_message_batch_max_size``); the callback still takes them one by one, and
        one that fails has the whole batch delivered again, as in 2.x."""
        self._set("set_message_batch_max_size", consume_message_batch_max_size=int(max_size))

    def subscribe(
        self, topic: str | bytes, callback: Callback, expression: str | bytes = "*"
    ) -> None:
        """Consumes ``topic``'s messages matching ``expression`` (``*``, or tags like
        ``TagA || TagB``) with ``callback(msg) -> ConsumeStatus``. A callback that raises,
        or returns something else, has the message delivered again later."""
        if not callable(callback):
            raise TypeError(f"the callback of {text(topic)!r} is not callable: {callback!r}")
        self._set("subscribe")
        self._subscriptions[text(topic)] = (callback, text(expression))
        self._last = callback

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        """Joins the group and starts consuming."""
        if self._consumer is not None:
            raise ClientError("consumer already started")
        consumer = NativePushConsumer(self._group, self._namesrv, **self._options)
        for topic, (_, expression) in self._subscriptions.items():
            consumer.subscribe(topic, expression)
        consumer.register_listener(self._listen, orderly=self._orderly)
        consumer.start()
        self._consumer = consumer

    def shutdown(self) -> None:
        """Stops consuming (nothing happens if it was not started)."""
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.shutdown()

    def __enter__(self) -> PushConsumer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # -- consuming -----------------------------------------------------------------------------

    def _listen(self, msgs: list[MessageExt]) -> NativeConsumeStatus | ConsumeOrderlyStatus:
        ok = all(self._consume(m) for m in msgs)
        if self._orderly:
            return (
                ConsumeOrderlyStatus.SUCCESS
                if ok
                else ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
            )
        return NativeConsumeStatus.CONSUME_SUCCESS if ok else NativeConsumeStatus.RECONSUME_LATER

    def _consume(self, msg: MessageExt) -> bool:
        """Runs the callback of ``msg``'s topic; True when it returned CONSUME_SUCCESS."""
        entry = self._subscriptions.get(msg.topic)
        callback = entry[0] if entry is not None else self._last
        if callback is None:
            return False
        try:
            status = callback(ReceivedMessage(msg))
        except Exception:
            log.exception("the callback of %s raised: delivered again later", msg.topic)
            return False
        if status == ConsumeStatus.CONSUME_SUCCESS:
            return True
        if status != ConsumeStatus.RECONSUME_LATER:
            self._warn_once(callback, status)
        return False

    def _warn_once(self, callback: Callback, status: object) -> None:
        """2.x raises ValueError for a return that is not a ConsumeStatus and delivers the
        message again; rocketpy does the same and says so once per callback."""
        with self._warned_lock:
            if id(callback) in self._warned:
                return
            self._warned.add(id(callback))
        log.error(
            "callback %r returned %r, not a ConsumeStatus: treated as RECONSUME_LATER "
            "(return ConsumeStatus.CONSUME_SUCCESS)",
            getattr(callback, "__name__", callback),
            status,
        )
