"""What :class:`~rocketpy.admin.Admin` returns: RocketMQ's admin bodies as typed records, read
from the JSON (standard or fastjson) that brokers answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rocketpy._util import mq_table
from rocketpy.message import MessageQueue


@dataclass(frozen=True)
class TopicOffset:
    """One queue of a topic (``TopicOffset``): its first and end offsets and the store time
    of its last message (ms, 0 when empty)."""

    min_offset: int
    max_offset: int
    last_update_timestamp: int

    @staticmethod
    def table(body: dict[str, Any]) -> dict[MessageQueue, TopicOffset]:
        """``TopicStatsTable.offsetTable``."""
        return {
            mq: TopicOffset(
                int(v.get("minOffset", 0)),
                int(v.get("maxOffset", 0)),
                int(v.get("lastUpdateTimestamp", 0)),
            )
            for mq, v in mq_table(body.get("offsetTable"), "TopicStatsTable").items()
        }


@dataclass(frozen=True)
class OffsetWrapper:
    """One queue of a group's progress (``OffsetWrapper``): the broker's end offset, the
    group's committed offset and the store time of the last message it consumed."""

    broker_offset: int
    consumer_offset: int
    last_timestamp: int

    @property
    def diff(self) -> int:
        """Messages not yet consumed (the lag)."""
        return max(self.broker_offset - self.consumer_offset, 0)


@dataclass
class ConsumeStats:
    """A group's progress on one broker or summed over several (``ConsumeStats``)."""

    offsets: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0

    @staticmethod
    def decode(body: dict[str, Any]) -> ConsumeStats:
        """From GET_CONSUME_STATS's body."""
        offsets = {
            mq: OffsetWrapper(
                int(v.get("brokerOffset", 0)),
                int(v.get("consumerOffset", 0)),
                int(v.get("lastTimestamp", 0)),
            )
            for mq, v in mq_table(body.get("offsetTable"), "ConsumeStats").items()
        }
        return ConsumeStats(offsets, float(body.get("consumeTps") or 0.0))

    def merge(self, other: ConsumeStats) -> None:
        """Adds another broker's figures (mqadmin sums the TPS and joins the tables)."""
        self.offsets.update(other.offsets)
        self.consume_tps += other.consume_tps

    @property
    def diff_total(self) -> int:
        """The group's total lag."""
        return sum(o.diff for o in self.offsets.values())


@dataclass(frozen=True)
class ClientConnection:
    """One client connection of a group (``Connection``)."""

    client_id: str
    client_addr: str
    language: str
    version: int

    @staticmethod
    def decode(d: dict[str, Any]) -> ClientConnection:
        """From ``{"clientId", "clientAddr", "language", "version"}``."""
        return ClientConnection(
            str(d.get("clientId", "")),
            str(d.get("clientAddr", "")),
            str(d.get("language", "")),
            int(d.get("version") or 0),
        )


@dataclass
class ConsumerConnection:
    """A consumer group's connections and subscriptions (``ConsumerConnection``)."""

    connections: list[ClientConnection]
    #: topic -> subscription expression.
    subscriptions: dict[str, str]
    consume_type: str
    message_model: str
    consume_from_where: str
    #: topic -> expression type (``TAG`` or ``SQL92``).
    expression_types: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def decode(body: dict[str, Any]) -> ConsumerConnection:
        """From GET_CONSUMER_CONNECTION_LIST's body."""
        subs = body.get("subscriptionTable") or {}
        return ConsumerConnection(
            [ClientConnection.decode(c) for c in body.get("connectionSet") or []],
            {str(t): str((s or {}).get("subString", "*")) for t, s in subs.items()},
            str(body.get("consumeType", "")),
            str(body.get("messageModel", "")),
            str(body.get("consumeFromWhere", "")),
            {str(t): str((s or {}).get("expressionType") or "TAG") for t, s in subs.items()},
        )


@dataclass(frozen=True)
class BrokerStats:
    """One statistic over the last minute, hour and day (``BrokerStatsData``): each window
    as ``(sum, tps, avgpt)``."""

    minute: tuple[int, float, float]
    hour: tuple[int, float, float]
    day: tuple[int, float, float]

    @staticmethod
    def decode(body: dict[str, Any]) -> BrokerStats:
        """From VIEW_BROKER_STATS_DATA's body."""

        def item(name: str) -> tuple[int, float, float]:
            d = body.get(name) or {}
            return int(d.get("sum", 0)), float(d.get("tps", 0.0)), float(d.get("avgpt", 0.0))

        return BrokerStats(item("statsMinute"), item("statsHour"), item("statsDay"))


@dataclass(frozen=True)
class ConsumeQueueUnit:
    """One consume-queue unit (``ConsumeQueueData``): where a message's record is in the
    CommitLog, its size there and its tag hash."""

    physic_offset: int
    physic_size: int
    tags_code: int

    def __str__(self) -> str:
        """As mqadmin's queryCq prints a unit (``ConsumeQueueData.toString``)."""
        return (
            f"ConsumeQueueData{{physicOffset={self.physic_offset}, "
            f"physicSize={self.physic_size}, tagsCode={self.tags_code}, "
            "extendDataJson='null', bitMap='null', eval=false, msg='null'}"
        )


@dataclass
class ConsumeQueueView:
    """A stretch of one consume queue (``QueryConsumeQueueResponseBody``): its units from
    the asked index (empty when nothing is stored there), the queue's bounds, and the asking
    group's ``SubscriptionData`` (as the broker wrote it) and filter note when a group was
    named."""

    units: list[ConsumeQueueUnit]
    min_queue_index: int
    max_queue_index: int
    subscription_data: dict[str, Any] | None = None
    filter_data: str | None = None

    @staticmethod
    def decode(body: dict[str, Any]) -> ConsumeQueueView:
        """From QUERY_CONSUME_QUEUE's body."""
        sub = body.get("subscriptionData")
        return ConsumeQueueView(
            [
                ConsumeQueueUnit(
                    int(u.get("physicOffset", 0)),
                    int(u.get("physicSize", 0)),
                    int(u.get("tagsCode", 0)),
                )
                for u in body.get("queueData") or []
            ],
            int(body.get("minQueueIndex", 0)),
            int(body.get("maxQueueIndex", 0)),
            sub if isinstance(sub, dict) else None,
            None if body.get("filterData") is None else str(body["filterData"]),
        )


def version_desc(ordinal: int) -> str:
    """RocketMQ's ``MQVersion`` name of a client or broker version ordinal, for versions from
    4.0.0 on (each x.y.z has a SNAPSHOT ordinal, then its release's; ten z per y); older ones
    are shown by number."""
    v4_0_0_snapshot = 212
    if ordinal < v4_0_0_snapshot:
        return f"V{ordinal}"
    n = ordinal - v4_0_0_snapshot
    minor_index, rest = divmod(n, 20)
    suffix = "_SNAPSHOT" if rest % 2 == 0 else ""
    return f"V{4 + minor_index // 10}_{minor_index % 10}_{rest // 2}{suffix}"
