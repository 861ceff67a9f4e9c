"""The names of the official 2.x Python client (``rocketmq.client`` of
``rocketmq-client-python``, a wrapper of the C++ client) on rocketpy's producers and
consumers, so 2.x code runs by changing its import::

    import os

    from rocketpy.compat import Producer, Message   # was: from rocketmq.client import ...

    producer = Producer("PID-XXX")
    producer.set_name_server_address(os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876"))
    producer.start()
    msg = Message("YOUR-TOPIC")
    msg.set_keys("XXX")
    msg.set_tags("XXX")
    msg.set_body("XXXX")
    ret = producer.send_sync(msg)
    print(ret.status, ret.msg_id, ret.offset)
    producer.shutdown()

Names, argument orders and enum values are 2.x's. What rocketpy cannot do (a name-server
address service, message traces, another zlib level) raises ``NotImplementedError`` naming
what rocketpy offers instead. Failures raise rocketpy's errors (:class:`rocketpy.ClientError`
and its subclasses) where 2.x raises those of ``rocketmq.exceptions``. New code should use
rocketpy's own API (``docs/porting.md`` maps one to the other)."""

from __future__ import annotations

from rocketpy.compat._consumer import PushConsumer
from rocketpy.compat._message import (
    ConsumeStatus,
    Message,
    MessageModel,
    MessageProperty,
    ReceivedMessage,
    SendResult,
    SendStatus,
    TransactionStatus,
)
from rocketpy.compat._producer import Producer, TransactionMQProducer

__all__ = [
    "ConsumeStatus",
    "Message",
    "MessageModel",
    "MessageProperty",
    "Producer",
    "PushConsumer",
    "ReceivedMessage",
    "SendResult",
    "SendStatus",
    "TransactionMQProducer",
    "TransactionStatus",
]
