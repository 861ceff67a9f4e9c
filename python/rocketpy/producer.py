"""``Producer``: sends messages synchronously, asynchronously, oneway, in batches, or to a
queue chosen by a selector (ordered messages); picks queues round-robin, retries on another
broker, and can avoid slow brokers (send latency fault tolerance)."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
import random
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import cast

from rocketpy._future import SendFuture
from rocketpy._native import (
    ProducerCore,
    RemotingResponse,
    encode_batch,
    encode_properties,
    java_string_hash,
)
from rocketpy._util import now_millis, unique_ids
from rocketpy.client.fault import LatencyFaultTolerance
from rocketpy.client.instance import ClientConfig, ClientInstance, check
from rocketpy.client.route import TopicPublishInfo, publish_info
from rocketpy.credentials import SessionCredentials, credentials_of
from rocketpy.errors import BrokerResponseError, ClientError, RemotingError, RocketpyError
from rocketpy.message import Message, MessageQueue, SendResult, SendStatus
from rocketpy.metrics import METRICS
from rocketpy.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    RETRY_GROUP_TOPIC_PREFIX,
    MessageSysFlag,
    Property,
    RequestCode,
    ResponseCode,
)
from rocketpy.tls import TlsOptions, tls_of
from rocketpy.validate import MAX_MESSAGE_SIZE, check_body, check_group, check_topic

log = logging.getLogger("rocketpy.producer")

#: Broker answers after which a send is retried (RocketMQ's ``retryResponseCodes``).
_RETRY_CODES = {
    ResponseCode.TOPIC_NOT_EXIST,
    ResponseCode.SERVICE_NOT_AVAILABLE,
    ResponseCode.SYSTEM_ERROR,
    ResponseCode.SYSTEM_BUSY,
    ResponseCode.NO_PERMISSION,
}

_STATUS = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}

#: ``selector(queues, message, arg) -> queue`` (RocketMQ's ``MessageQueueSelector``).
MessageQueueSelector = Callable[[Sequence[MessageQueue], Message, object], MessageQueue]

#: ``callback(result, error)``: exactly one is set.
SendCallback = Callable[[SendResult | None, BaseException | None], None]

#: An auto-batched message of a failed request: future, callback, id, message, and whether
#: the caller chose its queue.
_Batched = tuple["SendFuture[SendResult]", SendCallback | None, str, Message, bool]


def _complete(
    future: SendFuture[SendResult],
    callback: SendCallback | None,
    result: SendResult | None,
    error: BaseException | None,
) -> None:
    """Ends one asynchronous send: the future, then the callback (on the callback thread).
    A future the caller cancelled stays cancelled; the callback still learns the outcome."""
    future._finish(result, error)
    if callback is not None:
        try:
            callback(result, error)
        except Exception:
            log.exception("a send callback raised")


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


@dataclass
class _Prepared:
    """A message ready to go: its SEND_MESSAGE header by attribute (without the queue) and
    its body."""

    topic: str
    header: dict[str, object]
    body: bytes
    msg_id: str
    code: int = RequestCode.SEND_MESSAGE_V2
    #: Messages in the request (a batch's size), for the client metrics.
    count: int = 1


class Producer:
    """Sends messages to the brokers that serve their topic.

    Args:
        group: the producer group.
        namesrv_addr: name servers, ``host:port`` separated by ``;``.
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

    Example::

        with Producer("my-group", "127.0.0.1:9876") as producer:
            result = producer.send(Message("TopicTest", b"hello", tags="TagA"))
            producer.send(Message("Orders", b"paid"), selector=select_by_hash, arg=order_id)
            future = producer.send_async(Message("TopicTest", b"later"))
    """

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
        #: The native send paths (auto-batching, direct synchronous sends), once started. It
        #: keeps each topic's write queues (with their master's address) as lanes it takes
        #: round-robin: no route look-up per message; forgotten when the route changes.
        self._core: ProducerCore | None = None
        #: Each lane's broker address and queue (what Python needs when a native send fails).
        self._lane_queues: dict[int, tuple[str, MessageQueue]] = {}
        self._config = client_config or ClientConfig(namesrv_addr, instance_name=instance_name)
        account = credentials_of(credentials, access_key, secret_key)
        if account is not None:
            self._config = dataclasses.replace(self._config, credentials=account)
        tls_options = tls_of(tls, tls_ca_file)
        if tls_options is not None:
            self._config = dataclasses.replace(self._config, tls=tls_options)
        self._instance: ClientInstance | None = None
        self._publish: dict[str, TopicPublishInfo] = {}
        self._lock = threading.Lock()
        self._index = itertools.count(random.randrange(1 << 16))
        self._faults = LatencyFaultTolerance()

    # -- lifecycle ----------------------------------------------------------------------------

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
            self._batch_done,
            SendResult,
            SendFuture,
            MessageQueue,
            _STATUS,
            inst.client_id,
            unique_ids.native,
            min(self.compress_msg_body_over_howmuch, self.max_message_size),
            # A request never exceeds what a broker takes as one message.
            max_bytes=min(self.batch_max_bytes, self.max_message_size),
            max_delay_ms=self.batch_max_delay_ms,
            total_max_bytes=self.total_batch_max_bytes,
            timeout_ms=self.send_timeout_ms,
            # Fault avoidance learns every request's latency in Python (_batch_done).
            stored_natively=not self.send_latency_fault_enable,
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
        """Takes a refreshed route."""
        with self._lock:
            self._publish[topic] = info
        self._forget_lanes(topic)

    # -- routes and queues ---------------------------------------------------------------------

    def _client(self) -> ClientInstance:
        if self._instance is None:
            raise ClientError("producer not started: call start() first")
        self._instance.check_process("producer")
        return self._instance

    def publish_info(self, topic: str) -> TopicPublishInfo:
        """The topic's write queues, fetching the route if needed; a topic without a route
        gets the TBW102 template's (the broker then auto-creates it on the first send)."""
        inst = self._client()
        with self._lock:
            info = self._publish.get(topic)
        if info is not None and info.ok() and not info.from_template:
            return info
        with self._lock:
            # Registers interest, so update_route hands this producer the route too.
            self._publish.setdefault(topic, TopicPublishInfo())
        route = inst.update_route(topic)
        if route is not None:
            info = publish_info(topic, route)
        else:
            template = inst.fetch_route(AUTO_CREATE_TOPIC_KEY)
            if template is None:
                raise ClientError(
                    f"no route info of topic {topic!r}: create it first (UPDATE_AND_CREATE_TOPIC) "
                    "or enable autoCreateTopicEnable on a broker"
                )
            inst.remember_brokers(template)
            info = publish_info(topic, template, self.default_topic_queue_nums)
        if not info.ok():
            raise ClientError(f"topic {topic!r} has no writable queue on any live master")
        with self._lock:
            self._publish[topic] = info
        return info

    def message_queues(self, topic: str) -> list[MessageQueue]:
        """The write queues of ``topic``."""
        return list(self.publish_info(topic).queues)

    def _select_queue(self, info: TopicPublishInfo, last_broker: str | None) -> MessageQueue:
        queues = info.queues
        start = next(self._index)
        if self.send_latency_fault_enable:
            for i in range(len(queues)):
                mq = queues[(start + i) % len(queues)]
                if self._faults.is_available(mq.broker_name) and mq.broker_name != last_broker:
                    return mq
            best = self._faults.pick_one_at_least()
            if best is not None:
                of_best = [mq for mq in queues if mq.broker_name == best]
                if of_best:
                    return of_best[start % len(of_best)]
                self._faults.remove(best)
        if last_broker is not None:
            for i in range(len(queues)):
                mq = queues[(start + i) % len(queues)]
                if mq.broker_name != last_broker:
                    return mq
        return queues[start % len(queues)]

    def _refresh_after_failure(self, topic: str, info: TopicPublishInfo) -> TopicPublishInfo:
        try:
            with self._lock:
                self._publish.pop(topic, None)
            return self.publish_info(topic)
        except RocketpyError:
            return info

    def _note_latency(self, mq: MessageQueue, started: float, failed: bool, count: int = 1) -> None:
        """One send attempt ended: fault avoidance and the client metrics learn of it."""
        self._note_elapsed(mq, time.monotonic() - started, failed, count)

    def _note_elapsed(self, mq: MessageQueue, elapsed: float, failed: bool, count: int) -> None:
        if self.send_latency_fault_enable:
            self._faults.update(mq.broker_name, elapsed * 1000, failed)
        inst = self._instance
        if METRICS is not None and inst is not None:
            METRICS.record_send(mq.topic, inst.client_id, elapsed, not failed, count)

    # -- preparing messages --------------------------------------------------------------------

    def _prepare(self, msg: Message, uniq: str | None = None) -> _Prepared:
        check_topic(msg.topic)
        check_body(msg.body, self.max_message_size)
        props = dict(msg.properties)
        uniq = uniq or props.get(Property.UNIQ_KEY) or unique_ids.next()
        props[Property.UNIQ_KEY] = uniq
        body = msg.body
        sys_flag = 0
        if len(body) > self.compress_msg_body_over_howmuch:
            body = zlib.compress(body, 5)
            sys_flag |= MessageSysFlag.COMPRESSED
        header = self._header(
            msg.topic, sys_flag, msg.flag, encode_properties(list(props.items())), batch=False
        )
        return _Prepared(msg.topic, header, body, uniq)

    def _header(
        self, topic: str, sys_flag: int, flag: int, props: str, batch: bool
    ) -> dict[str, object]:
        return dict(
            producer_group=self.group,
            topic=topic,
            default_topic=AUTO_CREATE_TOPIC_KEY,
            default_topic_queue_nums=self.default_topic_queue_nums,
            sys_flag=sys_flag,
            born_timestamp=now_millis(),
            flag=flag,
            properties=props,
            reconsume_times=0,
            unit_mode=False,
            batch=batch,
        )

    def _prepare_batch(self, msgs: Sequence[Message]) -> _Prepared:
        if not msgs:
            raise ClientError("a batch needs at least one message")
        topic = msgs[0].topic
        check_topic(topic)
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise ClientError("retry topics are not supported by batch sends")
        items = []
        ids = []
        for m in msgs:
            if m.topic != topic:
                raise ClientError(f"a batch must have one topic: {topic!r} and {m.topic!r}")
            if m.delay_level > 0:
                raise ClientError("delayed messages are not supported by batch sends")
            check_body(m.body, self.max_message_size)
            props = dict(m.properties)
            uniq = props.get(Property.UNIQ_KEY) or unique_ids.next()
            props[Property.UNIQ_KEY] = uniq
            ids.append(uniq)
            items.append((m.flag, m.body, encode_properties(list(props.items()))))
        body = encode_batch(items)
        if len(body) > self.max_message_size:
            raise ClientError(
                f"the batch is {len(body)} bytes, over the limit {self.max_message_size}; split it"
            )
        header = self._header(topic, 0, 0, "", batch=True)
        return _Prepared(
            topic, header, body, ",".join(ids), RequestCode.SEND_BATCH_MESSAGE, len(ids)
        )

    def _addr(self, mq: MessageQueue) -> str:
        inst = self._client()
        addr = inst.master_addr(mq.broker_name)
        if addr is None:
            inst.update_route(mq.topic)
            addr = inst.master_addr(mq.broker_name)
        if addr is None:
            raise ClientError(f"broker {mq.broker_name} has no master address")
        return addr

    @staticmethod
    def _result(resp: RemotingResponse, addr: str, mq: MessageQueue, msg_id: str) -> SendResult:
        status = _STATUS.get(resp.code)
        if status is None:
            check(resp, addr)
            raise BrokerResponseError(resp.code, resp.remark, addr)
        h = resp.header
        queue_id, queue_offset = h.queue_id, h.queue_offset
        return SendResult(
            status=status,
            msg_id=msg_id,
            offset_msg_id=h.msg_id or "",
            message_queue=MessageQueue(
                mq.topic, mq.broker_name, mq.queue_id if queue_id is None else queue_id
            ),
            queue_offset=-1 if queue_offset is None else queue_offset,
            region_id=h.msg_region or "DefaultRegion",
            transaction_id=h.transaction_id,
        )

    def _choose(
        self,
        prepared: _Prepared,
        queue: MessageQueue | None,
        selector: MessageQueueSelector | None,
        arg: object,
        msg: Message | None,
    ) -> MessageQueue | None:
        """A fixed queue (given or selected), or None to let the retry loop pick."""
        if queue is not None:
            return queue
        if selector is not None:
            mqs = self.message_queues(prepared.topic)
            chosen = selector(mqs, msg if msg is not None else Message(prepared.topic, b"-"), arg)
            if chosen not in mqs:
                raise ClientError(
                    f"the selector chose {chosen}, which is not a queue of {prepared.topic!r}"
                )
            return chosen
        return None

    # -- synchronous ---------------------------------------------------------------------------

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
            if sent is None:  # lanes not known yet (or a retry topic: none)
                lanes = self._lanes_of(core, msg.topic)
                sent = core.send(self._next(lanes), msg, timeout) if lanes else ""
            if isinstance(sent, tuple):
                return self._retry_direct(msg, sent, deadline)
            if not isinstance(sent, str):
                return cast(SendResult, sent)
            # "": a body to compress, or no lane; the Python path below sends it.
        prepared = self._prepare(msg)
        return self._send_sync(
            prepared, self._choose(prepared, queue, selector, arg, msg), timeout_ms
        )

    def _retry_direct(
        self,
        msg: Message,
        failed: tuple[int, str, RemotingResponse | None, BaseException | None],
        deadline: int,
    ) -> SendResult:
        """The first attempt of :meth:`send` (native) failed: raise, or go on with the
        retries in Python under the same unique id and deadline."""
        lane, uniq, resp, err = failed
        addr, mq = self._lane_queues[lane]
        self._forget_lanes(msg.topic)
        if resp is not None:
            try:
                # Raises for every answer that is not "stored" (the native path took those).
                self._result(resp, addr, mq, uniq)
            except BrokerResponseError as e:
                if e.code not in _RETRY_CODES:
                    raise
                err = e
        error = str(err)
        attempts = 1 + max(0, self.retry_times_when_send_failed)
        log.warning("send to %s failed (attempt 1/%d): %s", mq, attempts, error)
        info = self.publish_info(msg.topic)
        if attempts > 1:
            info = self._refresh_after_failure(msg.topic, info)
        return self._send_sync(
            self._prepare(msg, uniq), None, None, deadline, 1, mq.broker_name, [error], info
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

    def _send_once(self, prepared: _Prepared, mq: MessageQueue, timeout_ms: int) -> SendResult:
        addr = self._addr(mq)
        header = dict(prepared.header, queue_id=mq.queue_id)
        started = time.monotonic()
        try:
            resp = self._client().remoting.invoke(
                addr, prepared.code, header, prepared.body, max(1, timeout_ms), direct=True
            )
            result = self._result(resp, addr, mq, prepared.msg_id)
        except (RemotingError, ClientError, BrokerResponseError):
            self._note_latency(mq, started, True, prepared.count)
            raise
        self._note_latency(mq, started, False, prepared.count)
        return result

    def _send_sync(
        self,
        prepared: _Prepared,
        fixed: MessageQueue | None,
        timeout_ms: int | None,
        deadline: int | None = None,
        first: int = 0,
        last_broker: str | None = None,
        errors: list[str] | None = None,
        info: TopicPublishInfo | None = None,
    ) -> SendResult:
        """Sends ``prepared`` (to ``fixed`` only, or retrying on other brokers), from
        attempt number ``first`` on, until ``deadline`` (ms; default: ``timeout_ms`` from
        now)."""
        if deadline is None:
            deadline = now_millis() + (
                timeout_ms if timeout_ms is not None else self.send_timeout_ms
            )
        if fixed is not None:
            return self._send_once(prepared, fixed, max(1, deadline - now_millis()))
        if info is None:
            info = self.publish_info(prepared.topic)
        attempts = 1 + max(0, self.retry_times_when_send_failed)
        errors = list(errors or ())
        for attempt in range(first, attempts):
            left = deadline - now_millis()
            if left <= 0:
                break
            mq = self._select_queue(info, last_broker)
            last_broker = mq.broker_name
            try:
                return self._send_once(prepared, mq, left)
            except BrokerResponseError as e:
                if e.code not in _RETRY_CODES:
                    raise
                errors.append(str(e))
            except (RemotingError, ClientError) as e:
                errors.append(str(e))
            log.warning(
                "send to %s failed (attempt %d/%d): %s", mq, attempt + 1, attempts, errors[-1]
            )
            if attempt + 1 < attempts:
                info = self._refresh_after_failure(prepared.topic, info)
        raise ClientError(
            f"send to topic {prepared.topic!r} failed after {len(errors)} attempt(s): {errors}"
        )

    # -- asynchronous --------------------------------------------------------------------------

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
                if added is None:  # lanes not known yet (or a retry topic: none)
                    lanes = self._lanes_of(core, msg.topic)
                    if lanes:
                        lane = self._next(lanes)
                        added = core.add(lane, msg, callback, False, self.send_timeout_ms)
                if added is not None:
                    if not isinstance(added, str):
                        return added
                    self._refused(msg, added)
            elif self._batchable_topic(msg.topic):
                # A queue the caller chose (no retry elsewhere), or fault avoidance's pick.
                chosen = self._choose(_Prepared(msg.topic, {}, b"", ""), queue, selector, arg, msg)
                mq = chosen or self._select_queue(self.publish_info(msg.topic), None)
                addr = self._client().master_addr(mq.broker_name)
                if addr is not None:
                    lane = self._lane(core, addr, mq)
                    added = core.add(lane, msg, callback, chosen is not None, self.send_timeout_ms)
                    if added is not None and not isinstance(added, str):
                        return added
                    self._refused(msg, added or "")
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
        added = core.add(None, msg, None, False, 0)
        return None if added is None or isinstance(added, str) else added

    def _refused(self, msg: Message, refused: str) -> None:
        """The accumulator did not take ``msg``: raise why, or return to send it alone
        (``refused`` empty: compressed, delayed or empty)."""
        if refused:
            raise ClientError(f"async send to {msg.topic!r} refused: {refused}")

    def _batchable_topic(self, topic: str) -> bool:
        """Whether messages of ``topic`` may be batched (raises if the name is invalid):
        not a retry topic, which batch requests do not take."""
        check_topic(topic)
        return not topic.startswith(RETRY_GROUP_TOPIC_PREFIX)

    def _lanes_of(self, core: ProducerCore, topic: str) -> list[int]:
        """The lanes of ``topic``'s write queues (cached until the route changes); empty
        when its messages cannot take the native paths (a retry topic)."""
        if not self._batchable_topic(topic):
            return []
        info = self.publish_info(topic)
        inst = self._client()
        lanes = [
            self._lane(core, a, mq) for mq in info.queues if (a := inst.master_addr(mq.broker_name))
        ]
        if not lanes:
            # No cached address: look it up (and raise if there is none).
            mq = info.queues[0]
            lanes = [self._lane(core, self._addr(mq), mq)]
        elif not info.from_template:
            core.set_lanes(topic, lanes)
        return lanes

    def _next(self, lanes: list[int]) -> int:
        """The next of ``lanes`` in turn."""
        return lanes[next(self._index) % len(lanes)]

    def _forget_lanes(self, topic: str) -> None:
        """The native paths look ``topic``'s lanes up again (its route changed, or a send
        failed)."""
        core = self._core
        if core is not None:
            core.forget_lanes(topic)

    def _lane(self, core: ProducerCore, addr: str, mq: MessageQueue) -> int:
        """The core's lane to ``mq`` at ``addr``."""
        lane = core.lane(addr, mq.broker_name, mq.topic, mq.queue_id)
        self._lane_queues[lane] = (addr, mq)
        return lane

    def _batch_done(
        self,
        addr: str,
        topic: str,
        broker_name: str,
        queue_id: int,
        elapsed: float,
        resp: RemotingResponse | None,
        err: BaseException | None,
        count: int,
    ) -> tuple[SendStatus, MessageQueue, str, str, int] | Callable[[list[_Batched]], None]:
        """One auto-batched request of ``count`` messages ended (on the callback thread).
        On success, returns what its messages' results share — ``(status, queue, region,
        msg ids, first offset)`` — and the accumulator completes each message natively;
        otherwise returns the function that retries or fails them."""
        mq = MessageQueue(topic, broker_name, queue_id)
        status = _STATUS.get(resp.code) if resp is not None else None
        self._note_elapsed(mq, elapsed, status is None, count)
        if resp is not None and status is not None:
            h = resp.header
            if h.queue_id is not None and h.queue_id != queue_id:
                mq = MessageQueue(topic, broker_name, h.queue_id)
            first = h.queue_offset
            return (
                status,
                mq,
                h.msg_region or "DefaultRegion",
                h.msg_id or "",
                -1 if first is None else first,
            )
        self._forget_lanes(topic)
        error: BaseException
        if resp is not None:
            error = BrokerResponseError(resp.code, resp.remark, addr)
            retry = resp.code in _RETRY_CODES
        else:
            error = err if err is not None else ClientError("no answer")
            retry = isinstance(error, RemotingError)
        return functools.partial(self._batch_failed, broker_name, error, retry)

    def _batch_failed(
        self, broker_name: str, error: BaseException, retry: bool, items: list[_Batched]
    ) -> None:
        """Each message of a failed auto-batched request is retried alone on another broker
        (when the failure allows it and its queue was not chosen by the caller), or fails."""
        attempts = max(0, self.retry_times_when_send_async_failed)
        for future, callback, uniq, msg, fixed in items:
            if retry and not fixed and attempts > 0 and self._instance is not None:
                try:
                    prepared = self._prepare(msg, uniq)
                    self._attempt_async(
                        prepared, None, future, callback, None, 1, broker_name, [str(error)]
                    )
                    continue
                except RocketpyError as e:
                    _complete(future, callback, None, e)
                    continue
            _complete(future, callback, None, error)

    def send_batch_async(
        self,
        msgs: Sequence[Message],
        callback: SendCallback | None = None,
        queue: MessageQueue | None = None,
    ) -> Future[SendResult]:
        """:meth:`send_batch` without waiting (see :meth:`send_async`)."""
        return self._send_async(self._prepare_batch(msgs), queue, callback, None)

    def _send_async(
        self,
        prepared: _Prepared,
        fixed: MessageQueue | None,
        callback: SendCallback | None,
        timeout_ms: int | None,
    ) -> Future[SendResult]:
        future: SendFuture[SendResult] = SendFuture()
        self._attempt_async(prepared, fixed, future, callback, timeout_ms, 0, None, [])
        return future

    def _attempt_async(
        self,
        prepared: _Prepared,
        fixed: MessageQueue | None,
        future: SendFuture[SendResult],
        callback: SendCallback | None,
        timeout_ms: int | None,
        first: int,
        first_broker: str | None,
        first_errors: list[str],
    ) -> None:
        """Sends ``prepared`` alone, from attempt number ``first`` on, retrying on other
        brokers; ends ``future`` and ``callback``."""
        timeout = timeout_ms if timeout_ms is not None else self.send_timeout_ms
        deadline = now_millis() + timeout
        attempts = 1 if fixed is not None else 1 + max(0, self.retry_times_when_send_async_failed)
        info = self.publish_info(prepared.topic) if fixed is None else None

        def attempt(n: int, last_broker: str | None, errors: list[str]) -> None:
            left = deadline - now_millis()
            if left <= 0 or n >= attempts:
                error = ClientError(
                    f"async send to {prepared.topic!r} failed: {errors or 'timed out'}"
                )
                _complete(future, callback, None, error)
                return
            mq = fixed if fixed is not None else self._select_queue(info, last_broker)  # type: ignore[arg-type]
            try:
                addr = self._addr(mq)
            except RocketpyError as e:
                _complete(future, callback, None, e)
                return
            started = time.monotonic()

            def done(resp: RemotingResponse | None, err: BaseException | None) -> None:
                if resp is not None:
                    try:
                        result = self._result(resp, addr, mq, prepared.msg_id)
                    except BrokerResponseError as e:
                        self._note_latency(mq, started, True, prepared.count)
                        if e.code in _RETRY_CODES:
                            attempt(n + 1, mq.broker_name, [*errors, str(e)])
                        else:
                            _complete(future, callback, None, e)
                        return
                    self._note_latency(mq, started, False, prepared.count)
                    _complete(future, callback, result, None)
                    return
                self._note_latency(mq, started, True, prepared.count)
                attempt(n + 1, mq.broker_name, [*errors, str(err)])

            header = dict(prepared.header, queue_id=mq.queue_id)
            self._client().remoting.invoke_async(
                addr, prepared.code, header, prepared.body, max(1, left), done
            )

        attempt(first, first_broker, first_errors)

    # -- oneway --------------------------------------------------------------------------------

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
