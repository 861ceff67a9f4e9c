"""Messages made ready to go: checked, compressed when large, given their unique id, and
turned into a SEND_MESSAGE header and body (or a batch's); and a broker's answer turned into a
:class:`~rocketpy.message.SendResult`."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from rocketpy._native import RemotingResponse, encode_batch, encode_properties
from rocketpy._util import now_millis, unique_ids
from rocketpy.client.instance import check
from rocketpy.errors import BrokerResponseError, ClientError
from rocketpy.message import Message, MessageQueue, SendResult, SendStatus
from rocketpy.producer._state import ProducerState
from rocketpy.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    RETRY_GROUP_TOPIC_PREFIX,
    MessageSysFlag,
    Property,
    RequestCode,
    ResponseCode,
)
from rocketpy.validate import check_body, check_topic

#: The broker answers that mean "stored", and how stored.
STATUS = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}


@dataclass
class Prepared:
    """A message ready to go: its SEND_MESSAGE header by attribute (without the queue) and
    its body."""

    topic: str
    header: dict[str, object]
    body: bytes
    msg_id: str
    code: int = RequestCode.SEND_MESSAGE_V2
    #: Messages in the request (a batch's size), for the client metrics.
    count: int = 1


class Preparing(ProducerState):
    """Preparing messages and reading answers."""

    def _prepare(self, msg: Message, uniq: str | None = None) -> Prepared:
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
        return Prepared(msg.topic, header, body, uniq)

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

    def _prepare_batch(self, msgs: Sequence[Message]) -> Prepared:
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
            if m.delay_level > 0 or m.delivery_timestamp is not None:
                raise ClientError("delayed messages are not supported by batch sends")
            if m.message_group is not None:
                # A batch goes to one queue: the group's queue is chosen per message by send().
                raise ClientError("messages with a message_group are sent alone: use send()")
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
        return Prepared(
            topic, header, body, ",".join(ids), RequestCode.SEND_BATCH_MESSAGE, len(ids)
        )

    @staticmethod
    def _result(resp: RemotingResponse, addr: str, mq: MessageQueue, msg_id: str) -> SendResult:
        status = STATUS.get(resp.code)
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
