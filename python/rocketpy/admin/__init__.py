"""``Admin``: cluster, topic, group and message administration over the RocketMQ protocol —
the requests RocketMQ's ``mqadmin`` makes, so it works against rocketpy and any RocketMQ 4.x
or 5.x cluster alike. ``rocketpy admin`` (:mod:`rocketpy.mqadmin`) is its command line.
``Admin.controller()`` (:class:`ControllerAdmin`) makes controller mode's requests."""

from rocketpy.admin.client import PERM_READ, PERM_WRITE, Admin
from rocketpy.admin.controller import (
    BrokerEpoch,
    BrokerMemberGroup,
    ControllerAdmin,
    ControllerMetadata,
    ElectMasterResult,
    EpochEntry,
    ReplicaIdentity,
    ReplicasInfo,
)
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
    "BrokerEpoch",
    "BrokerMemberGroup",
    "BrokerStats",
    "ClientConnection",
    "ConsumeQueueUnit",
    "ConsumeQueueView",
    "ConsumeStats",
    "ConsumerConnection",
    "ControllerAdmin",
    "ControllerMetadata",
    "ElectMasterResult",
    "EpochEntry",
    "OffsetWrapper",
    "ReplicaIdentity",
    "ReplicasInfo",
    "TopicOffset",
]
