"""rocketpy: a RocketMQ-compatible messaging system for Python.

Producers and consumers speak the RocketMQ 4.x protocol to rocketpy's (or Apache RocketMQ's)
name servers and brokers; rocketpy's servers are Rust, started with ``rocketpy dev`` or
:class:`rocketpy.server.DevServer`.
"""

from rocketpy._native import MessageExt, __version__
from rocketpy.client.instance import ClientConfig
from rocketpy.consumer.allocate import allocate_averagely
from rocketpy.consumer.push import ConsumeFromWhere, ConsumeStatus, MessageListener, PushConsumer
from rocketpy.errors import (
    BrokerResponseError,
    ClientError,
    ConfigError,
    CorruptDataError,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
    RocketpyError,
    StoreError,
    StoreLockedError,
)
from rocketpy.message import Message, MessageQueue, SendResult, SendStatus
from rocketpy.producer import Producer

__all__ = [
    "BrokerResponseError",
    "ClientConfig",
    "ClientError",
    "ConfigError",
    "ConsumeFromWhere",
    "ConsumeStatus",
    "CorruptDataError",
    "Message",
    "MessageExt",
    "MessageListener",
    "MessageQueue",
    "Producer",
    "PushConsumer",
    "RemotingConnectError",
    "RemotingError",
    "RemotingTimeoutError",
    "RocketpyError",
    "SendResult",
    "SendStatus",
    "StoreError",
    "StoreLockedError",
    "__version__",
    "allocate_averagely",
]
