"""``Producer``: sends messages, choosing queues round-robin and retrying on another broker."""

from __future__ import annotations

import itertools
import logging
import threading
import zlib

from rocketpy._native import RemotingResponse, encode_properties
from rocketpy._util import now_millis, unique_ids
from rocketpy.client.instance import ClientConfig, ClientInstance, check
from rocketpy.client.route import TopicPublishInfo, publish_info
from rocketpy.errors import BrokerResponseError, ClientError, RemotingError, RocketpyError
from rocketpy.message import Message, MessageQueue, SendResult, SendStatus
from rocketpy.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    MessageSysFlag,
    Property,
    RequestCode,
    ResponseCode,
)
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


class Producer:
    """Sends messages to the brokers that serve their topic.

    Args:
        group: the producer group.
        namesrv_addr: name servers, ``host:port`` separated by ``;``.
        send_timeout_ms: time allowed for one send, retries included.
        retry_times_when_send_failed: extra attempts of a failed synchronous send, each on
            another broker when there is one.
        compress_msg_body_over_howmuch: bodies larger than this are zlib-compressed.
        max_message_size: largest body accepted.
        default_topic_queue_nums: queues of a topic auto-created by a first send.
        instance_name: see :class:`rocketpy.client.instance.ClientConfig`.

    Example::

        producer = Producer("my-group", "127.0.0.1:9876")
        producer.start()
        result = producer.send(Message("TopicTest", b"hello", tags="TagA"))
        producer.shutdown()
    """

    def __init__(
        self,
        group: str,
        namesrv_addr: str,
        *,
        send_timeout_ms: int = 3000,
        retry_times_when_send_failed: int = 2,
        compress_msg_body_over_howmuch: int = 4096,
        max_message_size: int = MAX_MESSAGE_SIZE,
        default_topic_queue_nums: int = 4,
        instance_name: str | None = None,
        client_config: ClientConfig | None = None,
    ) -> None:
        check_group(group)
        self.group = group
        self.send_timeout_ms = send_timeout_ms
        self.retry_times_when_send_failed = retry_times_when_send_failed
        self.compress_msg_body_over_howmuch = compress_msg_body_over_howmuch
        self.max_message_size = max_message_size
        self.default_topic_queue_nums = default_topic_queue_nums
        self._config = client_config or ClientConfig(namesrv_addr, instance_name=instance_name)
        self._instance: ClientInstance | None = None
        self._publish: dict[str, TopicPublishInfo] = {}
        self._lock = threading.Lock()
        self._index = itertools.count()

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

    def shutdown(self) -> None:
        """Unregisters from the brokers and releases the connections."""
        inst, self._instance = self._instance, None
        if inst is not None:
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

    # -- sending --------------------------------------------------------------------------------

    def _client(self) -> ClientInstance:
        if self._instance is None:
            raise ClientError("producer not started: call start() first")
        return self._instance

    def publish_info(self, topic: str) -> TopicPublishInfo:
        """The topic's write queues, fetching the route if needed; a topic without a route
        gets the TBW102 template's (the broker then auto-creates it on the first send)."""
        with self._lock:
            info = self._publish.get(topic)
        if info is not None and info.ok() and not info.from_template:
            return info
        inst = self._client()
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
        if last_broker is not None:
            for i in range(len(queues)):
                mq = queues[(start + i) % len(queues)]
                if mq.broker_name != last_broker:
                    return mq
        return queues[start % len(queues)]

    def send(
        self, msg: Message, queue: MessageQueue | None = None, timeout_ms: int | None = None
    ) -> SendResult:
        """Sends ``msg`` and waits for the broker's answer.

        Args:
            msg: the message.
            queue: a specific queue (no retry on another broker then).
            timeout_ms: overrides ``send_timeout_ms``.

        Raises:
            ClientError: invalid message, no route, or every attempt failed.
            BrokerResponseError: the broker refused the message for a reason a retry cannot fix.
        """
        check_topic(msg.topic)
        check_body(msg.body, self.max_message_size)
        timeout = timeout_ms if timeout_ms is not None else self.send_timeout_ms
        deadline = now_millis() + timeout
        if queue is not None:
            return self._send_to(msg, queue, timeout)
        info = self.publish_info(msg.topic)
        attempts = 1 + max(0, self.retry_times_when_send_failed)
        last_broker: str | None = None
        errors: list[str] = []
        for attempt in range(attempts):
            left = deadline - now_millis()
            if left <= 0:
                break
            mq = self._select_queue(info, last_broker)
            last_broker = mq.broker_name
            try:
                return self._send_to(msg, mq, left)
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
                info = self._refresh_after_failure(msg.topic, info)
        raise ClientError(
            f"send to topic {msg.topic!r} failed after {len(errors)} attempt(s): {errors}"
        )

    def _refresh_after_failure(self, topic: str, info: TopicPublishInfo) -> TopicPublishInfo:
        try:
            with self._lock:
                self._publish.pop(topic, None)
            return self.publish_info(topic)
        except RocketpyError:
            return info

    def _send_to(self, msg: Message, mq: MessageQueue, timeout_ms: int) -> SendResult:
        inst = self._client()
        addr = inst.master_addr(mq.broker_name)
        if addr is None:
            inst.update_route(mq.topic)
            addr = inst.master_addr(mq.broker_name)
        if addr is None:
            raise ClientError(f"broker {mq.broker_name} has no master address")
        props = dict(msg.properties)
        uniq = props.get(Property.UNIQ_KEY) or unique_ids.next()
        props[Property.UNIQ_KEY] = uniq
        body = msg.body
        sys_flag = 0
        if len(body) > self.compress_msg_body_over_howmuch:
            body = zlib.compress(body, 5)
            sys_flag |= MessageSysFlag.COMPRESSED
        fields = {
            "a": self.group,
            "b": msg.topic,
            "c": AUTO_CREATE_TOPIC_KEY,
            "d": str(self.default_topic_queue_nums),
            "e": str(mq.queue_id),
            "f": str(sys_flag),
            "g": str(now_millis()),
            "h": str(msg.flag),
            "i": encode_properties(list(props.items())),
            "j": "0",
            "k": "false",
            "m": "false",
        }
        resp = inst.remoting.invoke(
            addr, RequestCode.SEND_MESSAGE_V2, fields, body, max(1, timeout_ms)
        )
        return self._result(resp, addr, mq, uniq)

    @staticmethod
    def _result(resp: RemotingResponse, addr: str, mq: MessageQueue, uniq: str) -> SendResult:
        status = _STATUS.get(resp.code)
        if status is None:
            check(resp, addr)
            raise BrokerResponseError(resp.code, resp.remark, addr)
        queue_id = int(resp.field("queueId", str(mq.queue_id)) or mq.queue_id)
        return SendResult(
            status=status,
            msg_id=uniq,
            offset_msg_id=resp.field("msgId", "") or "",
            message_queue=MessageQueue(mq.topic, mq.broker_name, queue_id),
            queue_offset=int(resp.field("queueOffset", "-1") or -1),
            region_id=resp.field("MSG_REGION", "DefaultRegion") or "DefaultRegion",
            transaction_id=resp.field("transactionId"),
        )
