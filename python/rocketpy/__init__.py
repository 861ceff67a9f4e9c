"""rocketpy: a RocketMQ-compatible messaging system for Python.

Producers and consumers speak the RocketMQ 4.x protocol to rocketpy's (or Apache RocketMQ's)
name servers and brokers; rocketpy's servers are Rust, started with ``rocketpy dev`` or
:class:`rocketpy.server.DevServer`.
"""

from rocketpy._native import MessageExt, __version__
from rocketpy.client.instance import ClientConfig
from rocketpy.consumer.allocate import (
    allocate_averagely,
    allocate_averagely_by_circle,
    by_config,
    by_machine_room,
    consistent_hash,
)
from rocketpy.consumer.base import ConsumeFromWhere, MessageModel
from rocketpy.consumer.lite_pull import LitePullConsumer
from rocketpy.consumer.push import (
    ConsumeOrderlyStatus,
    ConsumeStatus,
    MessageListener,
    PushConsumer,
)
from rocketpy.credentials import SessionCredentials
from rocketpy.errors import (
    BrokerResponseError,
    ClientError,
    ConfigError,
    CorruptDataError,
    DataLossError,
    ForkedProcessError,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
    RocketpyError,
    StoreError,
    StoreFullError,
    StoreLockedError,
)
from rocketpy.logs import set_native_log_level
from rocketpy.message import Message, MessageQueue, SendResult, SendStatus
from rocketpy.producer import (
    BulkSendError,
    BulkSendResult,
    MessageQueueSelector,
    Producer,
    select_by_hash,
    select_random,
)
from rocketpy.selector import MessageSelector
from rocketpy.tls import TlsOptions
from rocketpy.transaction import (
    LocalTransactionState,
    TransactionListener,
    TransactionProducer,
    TransactionSendResult,
)

__all__ = [
    "BrokerResponseError",
    "BulkSendError",
    "BulkSendResult",
    "ClientConfig",
    "ClientError",
    "ConfigError",
    "ConsumeFromWhere",
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "CorruptDataError",
    "DataLossError",
    "ForkedProcessError",
    "LitePullConsumer",
    "LocalTransactionState",
    "Message",
    "MessageExt",
    "MessageListener",
    "MessageModel",
    "MessageQueue",
    "MessageQueueSelector",
    "MessageSelector",
    "Producer",
    "PushConsumer",
    "RemotingConnectError",
    "RemotingError",
    "RemotingTimeoutError",
    "RocketpyError",
    "SendResult",
    "SendStatus",
    "SessionCredentials",
    "StoreError",
    "StoreFullError",
    "StoreLockedError",
    "TlsOptions",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "__version__",
    "allocate_averagely",
    "allocate_averagely_by_circle",
    "by_config",
    "by_machine_room",
    "consistent_hash",
    "select_by_hash",
    "select_random",
    "set_native_log_level",
]
