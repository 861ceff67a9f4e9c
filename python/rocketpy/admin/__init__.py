"""``Admin``: cluster, topic, group and message administration over the RocketMQ protocol —
the requests RocketMQ's ``mqadmin`` makes, so it works against rocketpy and any RocketMQ 4.x
or 5.x cluster alike. ``rocketpy admin`` (:mod:`rocketpy.mqadmin`) is its command line."""

from rocketpy.admin.client import PERM_READ, PERM_WRITE, Admin
from rocketpy.admin.types import (
    BrokerStats,
    ClientConnection,
    ConsumeQueueUnit,
    ConsumeQueueView,
    ConsumerConnection,
    ConsumeStats,
    OffsetWrapper,
    TopicOffset,
)

__all__ = [
    "PERM_READ",
    "PERM_WRITE",
    "Admin",
    "BrokerStats",
    "ClientConnection",
    "ConsumeQueueUnit",
    "ConsumeQueueView",
    "ConsumeStats",
    "ConsumerConnection",
    "OffsetWrapper",
    "TopicOffset",
]
