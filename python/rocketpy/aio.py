"""asyncio front ends: :class:`AsyncProducer` (``await producer.send(msg)``) and
:class:`AsyncConsumer` (``async for msg in consumer``). They wrap the thread-based clients;
network waits never block the event loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from rocketpy._native import MessageExt
from rocketpy.consumer.lite_pull import LitePullConsumer
from rocketpy.message import Message, MessageQueue, SendResult
from rocketpy.producer import MessageQueueSelector, Producer

__all__ = ["AsyncConsumer", "AsyncProducer"]


class AsyncProducer:
    """:class:`rocketpy.Producer` for asyncio code; takes the same arguments.

    Example::

        async with AsyncProducer("my-group", "127.0.0.1:9876") as producer:
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
        """Sends ``msg``; resolves when the broker answered."""
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


class AsyncConsumer:
    """A :class:`rocketpy.LitePullConsumer` iterated with ``async for``; takes the same
    arguments. A message counts as consumed once it was yielded (offsets are committed
    automatically, and at :meth:`shutdown`).

    Example::

        async with AsyncConsumer("my-group", "127.0.0.1:9876") as consumer:
            consumer.subscribe("TopicTest")  # before entering, or call start() after
            async for msg in consumer:
                print(msg.body)
    """

    def __init__(
        self, group: str, namesrv_addr: str = "", *, poll_timeout_ms: int = 1000, **kwargs: Any
    ) -> None:
        self.consumer = LitePullConsumer(group, namesrv_addr, **kwargs)
        self.poll_timeout_ms = poll_timeout_ms
        self._closed = False

    def subscribe(self, topic: str, expression: str = "*") -> None:
        """See :meth:`LitePullConsumer.subscribe`."""
        self.consumer.subscribe(topic, expression)

    async def start(self) -> None:
        """Starts pulling."""
        await asyncio.to_thread(self.consumer.start)

    async def shutdown(self) -> None:
        """Commits and stops."""
        self._closed = True
        await asyncio.to_thread(self.consumer.shutdown)

    async def poll(self, timeout_ms: int | None = None) -> list[MessageExt]:
        """The next batch (empty after the timeout)."""
        return await asyncio.to_thread(
            self.consumer.poll, timeout_ms if timeout_ms is not None else self.poll_timeout_ms
        )

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
