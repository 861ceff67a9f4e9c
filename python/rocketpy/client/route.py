"""Topic routes as the name server returns them, and what producers and consumers derive."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rocketpy._native import CorruptDataError
from rocketpy._util import json_body
from rocketpy.message import MessageQueue
from rocketpy.protocol import MASTER_ID

PERM_READ = 1 << 2
PERM_WRITE = 1 << 1


@dataclass(frozen=True)
class QueueData:
    """Queues of a topic on one broker group."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0


@dataclass(frozen=True)
class BrokerData:
    """Addresses of one broker group, by broker id (0 = master)."""

    cluster: str
    broker_name: str
    broker_addrs: dict[int, str]

    def master_addr(self) -> str | None:
        """The master's address."""
        return self.broker_addrs.get(MASTER_ID)


@dataclass(frozen=True)
class TopicRouteData:
    """A topic's route (the body of GET_ROUTEINFO_BY_TOPIC)."""

    queue_datas: tuple[QueueData, ...]
    broker_datas: tuple[BrokerData, ...]
    order_topic_conf: str | None = None

    @staticmethod
    def decode(body: bytes) -> TopicRouteData:
        """Parses the JSON (standard or fastjson); a body that is not a route is a
        :class:`~rocketpy.errors.CorruptDataError`."""
        raw = json_body(body, "topic route")
        try:
            return TopicRouteData._from(raw)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CorruptDataError(f"topic route: unexpected content ({e!r})") from None

    @staticmethod
    def _from(raw: dict[str, Any]) -> TopicRouteData:
        queues = tuple(
            sorted(
                (
                    QueueData(
                        broker_name=q["brokerName"],
                        read_queue_nums=int(q.get("readQueueNums", 0)),
                        write_queue_nums=int(q.get("writeQueueNums", 0)),
                        perm=int(q.get("perm", 0)),
                        topic_sys_flag=int(q.get("topicSysFlag", 0)),
                    )
                    for q in raw.get("queueDatas") or []
                ),
                key=lambda q: q.broker_name,
            )
        )
        brokers = tuple(
            sorted(
                (
                    BrokerData(
                        cluster=b.get("cluster", ""),
                        broker_name=b["brokerName"],
                        broker_addrs={int(k): v for k, v in (b.get("brokerAddrs") or {}).items()},
                    )
                    for b in raw.get("brokerDatas") or []
                ),
                key=lambda b: b.broker_name,
            )
        )
        return TopicRouteData(queues, brokers, raw.get("orderTopicConf"))


@dataclass
class TopicPublishInfo:
    """Where a producer may write a topic: write queues of brokers with a master."""

    queues: list[MessageQueue] = field(default_factory=list)
    route: TopicRouteData | None = None
    order_topic: bool = False
    from_template: bool = False

    def ok(self) -> bool:
        """Whether there is at least one queue."""
        return bool(self.queues)


def publish_info(
    topic: str, route: TopicRouteData, max_queues: int | None = None
) -> TopicPublishInfo:
    """The write queues of ``route``; ``max_queues`` caps each broker's count (template route)."""
    masters = {b.broker_name for b in route.broker_datas if b.master_addr()}
    queues: list[MessageQueue] = []
    for q in route.queue_datas:
        if not q.perm & PERM_WRITE or q.broker_name not in masters:
            continue
        n = q.write_queue_nums if max_queues is None else min(max_queues, q.write_queue_nums)
        queues.extend(MessageQueue(topic, q.broker_name, i) for i in range(n))
    return TopicPublishInfo(queues, route, bool(route.order_topic_conf), max_queues is not None)


def subscribe_queues(topic: str, route: TopicRouteData) -> list[MessageQueue]:
    """The readable queues of ``route``."""
    return [
        MessageQueue(topic, q.broker_name, i)
        for q in route.queue_datas
        if q.perm & PERM_READ
        for i in range(q.read_queue_nums)
    ]
