"""asyncio front ends: :class:`AsyncProducer` (``await producer.send(msg)``),
:class:`AsyncTransactionProducer` (``await producer.send_message_in_transaction(msg)``) and
:class:`AsyncConsumer` (``async for msg in consumer``). They wrap the thread-based clients;
network waits never block the event loop."""

from __future__ import annotations

import asyncio
import collections
import functools
import inspect
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

from rocketpy._native import MessageExt
from rocketpy.consumer.lite_pull import LitePullConsumer
from rocketpy.consumer.model import Subscription
from rocketpy.message import Message, MessageQueue, SendResult
from rocketpy.producer import MessageQueueSelector, Producer
from rocketpy.selector import MessageSelector
from rocketpy.transaction import (
    LocalTransactionState,
    TransactionProducer,
    TransactionSendResult,
    _state,
)
from rocketpy.validate import check_topic

__all__ = ["AsyncConsumer", "AsyncProducer", "AsyncTransactionProducer"]

log = logging.getLogger("rocketpy.transaction")


class AsyncProducer:
    """:class:`rocketpy.Producer` for asyncio code; takes the same arguments.

    Example (the name servers from ``$NAMESRV_ADDR``)::

        async with AsyncProducer("my-group") as producer:
            result = await producer.send(Message("TopicTest", b"hello"))
    """

    def __init__(self, group: str, namesrv_addr: str = "", **kwargs: Any) -> None:
        self.producer = Producer(group, namesrv_addr, **kwargs)

    async def start(self) -> None:
        """Connects (in a worker thread: route look-ups block)."""
        await asyncio.to_thread(self.producer.start)

    async def shutdown(self) -> None:
        """Releases the connections."""
        await asyncio.to_thread(self.producer.shutdown)

    async def send(
        self,
        msg: Message,
        queue: MessageQueue | None = None,
        *,
        selector: MessageQueueSelector | None = None,
        arg: object = None,
    ) -> SendResult:
        """Sends ``msg``; resolves when the broker answered. A message auto-batching can
        take at once goes straight to it from the event loop; otherwise (first send to a
        topic, a chosen queue, a full accumulator) the send starts in a worker thread, since
        a route look-up or the wait for room would block the loop."""
        future = None
        if queue is None and selector is None:
            future = self.producer.send_async_nowait(msg)
        if future is None:
            future = await asyncio.to_thread(
                self.producer.send_async, msg, None, queue, selector=selector, arg=arg
            )
        return await asyncio.wrap_future(future)

    async def send_batch(
        self, msgs: Sequence[Message], queue: MessageQueue | None = None
    ) -> SendResult:
        """Sends messages of one topic in one request."""
        future = await asyncio.to_thread(self.producer.send_batch_async, msgs, None, queue)
        return await asyncio.wrap_future(future)

    async def __aenter__(self) -> AsyncProducer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()


class _LoopChecks:
    """Runs a listener's ``check_local_transaction`` — a coroutine function or a plain one —
    for the check thread: coroutines on the producer's event loop."""

    def __init__(self, listener: Any, loop: asyncio.AbstractEventLoop, timeout_s: float) -> None:
        self.listener, self.loop, self.timeout_s = listener, loop, timeout_s

    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        raise AssertionError("AsyncTransactionProducer runs local transactions itself")

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        answer = self.listener.check_local_transaction(msg)
        if inspect.isawaitable(answer):
            future = asyncio.run_coroutine_threadsafe(_awaited(answer), self.loop)
            answer = future.result(self.timeout_s)
        return _state(answer, "check_local_transaction")


async def _awaited(answer: Any) -> Any:
    return await answer


class AsyncTransactionProducer:
    """:class:`rocketpy.TransactionProducer` for asyncio code; takes the same arguments. The
    listener's ``execute_local_transaction`` and ``check_local_transaction`` may be
    coroutine functions (they run on the event loop the producer was started on) or plain
    ones.

    Example (a set stands for the application's database)::

        class Orders:
            def __init__(self):
                self.paid = set()

            async def execute_local_transaction(self, msg, order_id):
                self.paid.add(order_id)  # e.g. await db.insert(order_id)
                return LocalTransactionState.COMMIT_MESSAGE

            async def check_local_transaction(self, msg):
                found = msg.keys in self.paid
                return LocalTransactionState.COMMIT_MESSAGE if found else LocalTransactionState.UNKNOW

        async with AsyncTransactionProducer("orders-tx", listener=Orders()) as producer:
            msg = Message("Orders", b"paid", keys="order-42")
            await producer.send_message_in_transaction(msg, "order-42")
    """

    def __init__(
        self,
        group: str,
        namesrv_addr: str = "",
        listener: Any = None,
        *,
        check_timeout_s: float = 30.0,
        **kwargs: Any,
    ) -> None:
        self.listener = listener
        self._kwargs, self._group, self._namesrv = kwargs, group, namesrv_addr
        self._check_timeout_s = check_timeout_s
        self.producer: TransactionProducer | None = None

    async def start(self) -> None:
        """Connects, and answers checks on this event loop."""
        loop = asyncio.get_running_loop()
        checks = _LoopChecks(self.listener, loop, self._check_timeout_s)
        self.producer = TransactionProducer(self._group, self._namesrv, checks, **self._kwargs)
        await asyncio.to_thread(self.producer.start)

    async def shutdown(self) -> None:
        """Releases the connections."""
        if self.producer is not None:
            await asyncio.to_thread(self.producer.shutdown)

    async def send_message_in_transaction(
        self, msg: Message, arg: Any = None
    ) -> TransactionSendResult:
        """As :meth:`rocketpy.TransactionProducer.send_message_in_transaction`."""
        producer = self.producer
        if producer is None:
            raise RuntimeError("producer not started: await start() first")
        half, result = await asyncio.to_thread(producer._prepare_half, msg)
        state = LocalTransactionState.ROLLBACK_MESSAGE
        if result.status.value == "SEND_OK":
            try:
                answer = self.listener.execute_local_transaction(msg, arg)
                if inspect.isawaitable(answer):
                    answer = await answer
                state = _state(answer, "execute_local_transaction")
            except Exception:
                log.exception("local transaction of %s failed; its check decides", result.msg_id)
                state = LocalTransactionState.UNKNOW
        if half is not None:
            await asyncio.to_thread(producer.end_transaction, half, state)
        return TransactionSendResult.of(result, state)

    async def __aenter__(self) -> AsyncTransactionProducer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()


class AsyncConsumer:
    """A :class:`rocketpy.LitePullConsumer` iterated with ``async for``; takes the same
    arguments. A message counts as consumed once it was yielded (offsets are committed
    automatically, and at :meth:`shutdown`).

    :meth:`subscribe` and :meth:`assign` may come before or after the start (``async with``
    starts it). Before, they are kept; after, they are checked at once (a bad topic or
    expression raises at the call) and applied by the next :meth:`poll` in its worker thread,
    since applying one asks the brokers and would block the event loop.

    Example (the name servers from ``$NAMESRV_ADDR``)::

        async with AsyncConsumer("my-group") as consumer:
            consumer.subscribe("TopicTest")
            async for msg in consumer:
                print(msg.topic, msg.body)
                break  # or keep going: the loop ends when the consumer is shut down
    """

    def __init__(
        self, group: str, namesrv_addr: str = "", *, poll_timeout_ms: int = 1000, **kwargs: Any
    ) -> None:
        self.consumer = LitePullConsumer(group, namesrv_addr, **kwargs)
        self.poll_timeout_ms = poll_timeout_ms
        self._closed = False
        self._started = False
        #: Subscriptions and assignments made after the start, for the next poll's thread.
        self._pending: collections.deque[Callable[[], None]] = collections.deque()

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        """See :meth:`LitePullConsumer.subscribe` (tags, or ``MessageSelector.by_sql``)."""
        if not self._started:
            self.consumer.subscribe(topic, expression)  # kept until start: no network
            return
        check_topic(topic)
        Subscription.parse(topic, expression)  # refused here rather than at the next poll
        self._pending.append(functools.partial(self.consumer.subscribe, topic, expression))

    def assign(self, mqs: Iterable[MessageQueue]) -> None:
        """See :meth:`LitePullConsumer.assign`: exactly these queues, no rebalance."""
        mqs = list(mqs)
        if not self._started:
            self.consumer.assign(mqs)
            return
        self._pending.append(functools.partial(self.consumer.assign, mqs))

    async def start(self) -> None:
        """Joins the cluster and starts pulling (in a worker thread: route look-ups block)."""
        await asyncio.to_thread(self.consumer.start)
        self._started = True

    async def shutdown(self) -> None:
        """Commits and stops."""
        self._closed = True
        await asyncio.to_thread(self.consumer.shutdown)

    async def poll(self, timeout_ms: int | None = None) -> list[MessageExt]:
        """The next batch (empty after the timeout)."""
        return await asyncio.to_thread(
            self._poll, timeout_ms if timeout_ms is not None else self.poll_timeout_ms
        )

    def _poll(self, timeout_ms: int) -> list[MessageExt]:
        while self._pending:
            self._pending.popleft()()
        return self.consumer.poll(timeout_ms)

    def __aiter__(self) -> AsyncIterator[MessageExt]:
        return self._messages()

    async def _messages(self) -> AsyncIterator[MessageExt]:
        while not self._closed:
            for msg in await self.poll():
                yield msg

    async def __aenter__(self) -> AsyncConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()
