"""The public class of :mod:`rocketpy.producer`: settings, lifecycle, and the send methods,
each choosing the native path when it can and the Python path (:mod:`._python_send`)
otherwise. Its parts, from the bottom up: ``_state`` (what every part reads), ``_prepare``,
``_routing``, ``_python_send``, ``_native_send``, ``_bulk``."""

from __future__ import annotations

import dataclasses
import itertools
import random
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import cast

from rocketpy._future import SendFuture
from rocketpy._native import ProducerCore
from rocketpy._util import now_millis, unique_ids
from rocketpy.client.fault import LatencyFaultTolerance
from rocketpy.client.instance import ClientConfig, ClientInstance
from rocketpy.client.route import TopicPublishInfo
from rocketpy.credentials import SessionCredentials, credentials_of
from rocketpy.errors import ClientError
from rocketpy.message import Message, MessageQueue, SendResult
from rocketpy.producer._bulk import BulkSends
from rocketpy.producer._prepare import STATUS, Prepared
from rocketpy.producer._selectors import MessageQueueSelector, SendCallback
from rocketpy.protocol import AUTO_CREATE_TOPIC_KEY
from rocketpy.tls import TlsOptions, tls_of
from rocketpy.validate import MAX_MESSAGE_SIZE, check_group


class Producer(BulkSends):
    """Sends messages to the brokers that serve their topic.

    Args:
        group: the producer group.
        namesrv_addr: name servers, ``host:port`` separated by ``;``. Default: ``$NAMESRV_ADDR``.
        send_timeout_ms: time allowed for one send, retries included.
        retry_times_when_send_failed: extra attempts of a failed synchronous send, each on
            another broker when there is one.
        retry_times_when_send_async_failed: the same for asynchronous sends.
        send_latency_fault_enable: avoid brokers that answered slowly or failed, for a time
            that grows with the latency (RocketMQ's latency table).
        compress_msg_body_over_howmuch: bodies larger than this are zlib-compressed.
        max_message_size: largest body (and largest batch) accepted.
        default_topic_queue_nums: queues of a topic auto-created by a first send.
        instance_name: see :class:`rocketpy.client.instance.ClientConfig`.
        credentials: the ACL account requests are signed with (``aclEnable`` servers); or
            ``access_key`` / ``secret_key``.
        tls: connect with TLS (``True``: checking servers against ``tls_ca_file``, else the
            system's CAs; or a :class:`rocketpy.TlsOptions`).
        auto_batch: let :meth:`send_async` gather messages per queue and send each queue's
            as one request (RocketMQ 5.x ``autoBatch``): messages that arrive while a
            request to their queue is in flight leave together with the next one, in order.
            Each still gets its own result, id, queue offset, future and callback.
            Messages that are compressed, delayed, or sent with ``timeout_ms`` go alone.
        batch_max_delay_ms: how long a message may wait for company when its queue has
            nothing in flight (``batchMaxDelayMs``); 0 sends it at once.
        batch_max_bytes: the largest request auto-batching builds (``batchMaxBytes``).
        total_batch_max_bytes: bytes of unanswered auto-batched messages after which
            :meth:`send_async` waits (``totalBatchMaxBytes``): the back-pressure that keeps a
            producer faster than its brokers from holding unbounded memory.

    Example (the name servers from ``$NAMESRV_ADDR``; or give them:
    ``Producer("my-group", "127.0.0.1:9876")``)::

        with Producer("my-group") as producer:
            result = producer.send(Message("TopicTest", b"hello", tags="TagA"))
            producer.send(Message("Orders", b"paid"), selector=select_by_hash, arg=order_id)
            future = producer.send_async(Message("TopicTest", b"later"))
    """

    # -- lifecycle ----------------------------------------------------------------------------

    def __init__(
        self,
        group: str,
        namesrv_addr: str = "",
        *,
        send_timeout_ms: int = 3000,
        retry_times_when_send_failed: int = 2,
        retry_times_when_send_async_failed: int = 2,
        send_latency_fault_enable: bool = False,
        compress_msg_body_over_howmuch: int = 4096,
        max_message_size: int = MAX_MESSAGE_SIZE,
        default_topic_queue_nums: int = 4,
        instance_name: str | None = None,
        client_config: ClientConfig | None = None,
        credentials: SessionCredentials | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        tls: bool | TlsOptions = False,
        tls_ca_file: str | None = None,
        auto_batch: bool = True,
        batch_max_delay_ms: int = 0,
        batch_max_bytes: int = 32 * 1024,
        total_batch_max_bytes: int = 32 * 1024 * 1024,
    ) -> None:
        check_group(group)
        self.group = group
        self.send_timeout_ms = send_timeout_ms
        self.retry_times_when_send_failed = retry_times_when_send_failed
        self.retry_times_when_send_async_failed = retry_times_when_send_async_failed
        self.send_latency_fault_enable = send_latency_fault_enable
        self.compress_msg_body_over_howmuch = compress_msg_body_over_howmuch
        self.max_message_size = max_message_size
        self.default_topic_queue_nums = default_topic_queue_nums
        self.auto_batch = auto_batch
        self.batch_max_delay_ms = batch_max_delay_ms
        self.batch_max_bytes = batch_max_bytes
        self.total_batch_max_bytes = total_batch_max_bytes
        self._core = None
        self._lane_queues = {}
        self._config = client_config or ClientConfig(namesrv_addr, instance_name=instance_name)
        account = credentials_of(credentials, access_key, secret_key)
        if account is not None:
            self._config = dataclasses.replace(self._config, credentials=account)
        tls_options = tls_of(tls, tls_ca_file)
        if tls_options is not None:
            self._config = dataclasses.replace(self._config, tls=tls_options)
        self._instance = None
        self._publish = {}
        self._lock = threading.Lock()
        self._index = itertools.count(random.randrange(1 << 16))
        self._faults = LatencyFaultTolerance()

    def start(self) -> None:
        """Connects to the name servers; call once before sending."""
        if self._instance is not None:
            raise ClientError("producer already started")
        inst = ClientInstance.acquire(self._config, self.group, "producer")
        try:
            inst.register_producer(self)
        except Exception:
            inst.release()
            raise
        self._instance = inst
        self._core = ProducerCore(
            inst.remoting,
            self.group,
            AUTO_CREATE_TOPIC_KEY,
            self.default_topic_queue_nums,
            self._batch_failed,
            SendResult,
            SendFuture,
            MessageQueue,
            STATUS,
            inst.client_id,
            unique_ids.native,
            min(self.compress_msg_body_over_howmuch, self.max_message_size),
            # A request never exceeds what a broker takes as one message.
            max_bytes=min(self.batch_max_bytes, self.max_message_size),
            max_delay_ms=self.batch_max_delay_ms,
            total_max_bytes=self.total_batch_max_bytes,
            timeout_ms=self.send_timeout_ms,
            # Fault avoidance learns every request's latency.
            on_latency=self._batch_latency if self.send_latency_fault_enable else None,
        )

    def shutdown(self) -> None:
        """Unregisters from the brokers and releases the connections (in a child process
        after ``os.fork()``, only forgets them: they belong to the parent)."""
        core, self._core = self._core, None
        if core is not None:
            # What was accepted goes out (and is answered) before the connections close.
            core.close()
            core.flush(self.send_timeout_ms)
        inst, self._instance = self._instance, None
        if inst is not None and not inst.forked():
            inst.unregister_producer(self.group)
            inst.release()

    def __enter__(self) -> Producer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # -- ClientInstance callbacks -------------------------------------------------------------

    def topics(self) -> set[str]:
        """Topics this producer has sent to (their routes are refreshed)."""
        with self._lock:
            return set(self._publish)

    def update_publish_info(self, topic: str, info: TopicPublishInfo) -> None:
        """Takes a refreshed route. The native paths' lanes of ``topic`` are forgotten only
        when the route changed: a periodic refresh of the same route must not send the next
        messages the slow way (nor make ``send_async_nowait`` refuse them)."""
        with self._lock:
            old = self._publish.get(topic)
            self._publish[topic] = info
        if old is None or old.route != info.route or old.from_template != info.from_template:
            self._forget_lanes(topic)

    # -- sending ------------------------------------------------------------------------------

    def send(
        self,
        msg: Message,
        queue: MessageQueue | None = None,
        *,
        selector: MessageQueueSelector | None = None,
        arg: object = None,
        timeout_ms: int | None = None,
    ) -> SendResult:
        """Sends ``msg`` and waits for the broker's answer.

        Args:
            msg: the message.
            queue: a specific queue (no retry on another broker then).
            selector: picks the queue from the topic's queues, given ``arg`` (e.g.
                :func:`select_by_hash` with an order id keeps each order's messages in one
                queue, hence in order); no retry on another queue.
            timeout_ms: overrides ``send_timeout_ms``.

        Raises:
            ClientError: invalid message, no route, or every attempt failed.
            BrokerResponseError: the broker refused the message for a reason a retry cannot fix.
        """
        core = self._core
        if (
            core is not None
            and queue is None
            and selector is None
            and not self.send_latency_fault_enable
        ):
            # The hot path: the topic's next lane; request, answer and result are native.
            timeout = self.send_timeout_ms if timeout_ms is None else timeout_ms
            deadline = now_millis() + timeout
            sent = core.send(None, msg, timeout)
            if sent.lane is None:  # the topic's lanes not known yet (a retry topic has none)
                lanes = self._lanes_of(core, msg.topic)
                if lanes:
                    sent = core.send(self._next(lanes), msg, timeout)
            if sent.result is not None:
                return cast(SendResult, sent.result)
            if sent.failed:
                return self._retry_direct(msg, sent, deadline)
            # Not sent: a body to compress, or no lane; the Python path below sends it.
        prepared = self._prepare(msg)
        return self._send_sync(
            prepared, self._choose(prepared, queue, selector, arg, msg), timeout_ms
        )

    def send_batch(
        self,
        msgs: Sequence[Message],
        queue: MessageQueue | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> SendResult:
        """Sends messages of one topic in one request (at most ``max_message_size`` bytes in
        all); they are stored contiguously in one queue. ``msg_id`` and ``offset_msg_id`` of
        the result list every message's id, comma-separated; ``queue_offset`` is the first's."""
        prepared = self._prepare_batch(msgs)
        return self._send_sync(prepared, queue, timeout_ms)

    def send_async(
        self,
        msg: Message,
        callback: SendCallback | None = None,
        queue: MessageQueue | None = None,
        *,
        selector: MessageQueueSelector | None = None,
        arg: object = None,
        timeout_ms: int | None = None,
    ) -> Future[SendResult]:
        """Sends without waiting: returns a future of the :class:`SendResult`, and calls
        ``callback(result, error)`` when done. Failures are retried on other brokers up to
        ``retry_times_when_send_async_failed`` times. Callbacks run on rocketpy's callback
        thread: keep them short. With ``auto_batch`` (the default) messages to one queue
        may share a request; their callbacks still run in the order they were sent.

        Raises:
            ClientError: invalid message, no route, or (auto-batching) the producer held
                ``total_batch_max_bytes`` of unanswered messages for ``send_timeout_ms``.
        """
        core = self._core if self.auto_batch else None
        if core is not None and timeout_ms is None:
            if queue is None and selector is None and not self.send_latency_fault_enable:
                # The hot path of auto-batching: the topic's next lane, the rest is native
                # (the core makes the future too).
                added = core.add(None, msg, callback, False, self.send_timeout_ms)
                if added is None:  # lanes not known yet (a retry topic has none)
                    lanes = self._lanes_of(core, msg.topic)
                    if lanes:
                        lane = self._next(lanes)
                        added = core.add(lane, msg, callback, False, self.send_timeout_ms)
                if added is not None:
                    return added
                # Not taken: it cannot be batched (a body to compress, a delay), or no lane.
            elif self._batchable_topic(msg.topic):
                # A queue the caller chose (no retry elsewhere), or fault avoidance's pick.
                chosen = self._choose(Prepared(msg.topic, {}, b"", ""), queue, selector, arg, msg)
                mq = chosen or self._select_queue(self.publish_info(msg.topic), None)
                addr = self._client().master_addr(mq.broker_name)
                if addr is not None:
                    lane = self._lane(core, addr, mq)
                    added = core.add(lane, msg, callback, chosen is not None, self.send_timeout_ms)
                    if added is not None:
                        return added
                # Sent alone (an unknown broker fails through the future, as always).
                return self._send_async(self._prepare(msg), chosen, callback, timeout_ms)
        prepared = self._prepare(msg)
        return self._send_async(
            prepared, self._choose(prepared, queue, selector, arg, msg), callback, timeout_ms
        )

    def send_async_nowait(self, msg: Message) -> Future[SendResult] | None:
        """:meth:`send_async` when it cannot block — the topic's queues are known and the
        auto-batching accumulator has room — else None (then call :meth:`send_async`, e.g.
        in a worker thread). For event loops: ``AsyncProducer`` sends this way."""
        core = self._core
        if core is None or not self.auto_batch or self.send_latency_fault_enable:
            return None
        try:
            return core.add(None, msg, None, False, 0)
        except ClientError:  # the accumulator is full (or closed): the caller may wait
            return None

    def send_batch_async(
        self,
        msgs: Sequence[Message],
        callback: SendCallback | None = None,
        queue: MessageQueue | None = None,
    ) -> Future[SendResult]:
        """:meth:`send_batch` without waiting (see :meth:`send_async`)."""
        return self._send_async(self._prepare_batch(msgs), queue, callback, None)

    def send_oneway(
        self,
        msg: Message,
        queue: MessageQueue | None = None,
        *,
        selector: MessageQueueSelector | None = None,
        arg: object = None,
    ) -> None:
        """Sends and forgets: no answer is awaited, so nothing reports whether it was stored."""
        prepared = self._prepare(msg)
        mq = self._choose(prepared, queue, selector, arg, msg) or self._select_queue(
            self.publish_info(prepared.topic), None
        )
        header = dict(prepared.header, queue_id=mq.queue_id)
        self._client().remoting.invoke_oneway(self._addr(mq), prepared.code, header, prepared.body)
