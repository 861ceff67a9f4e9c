"""``Admin``: topic and cluster administration over the RocketMQ protocol (a small part of
RocketMQ's ``mqadmin``)."""

from __future__ import annotations

from typing import Any

from rocketpy._native import MessageExt, RemotingClient, RemotingResponse
from rocketpy._util import json_body
from rocketpy.client.instance import check
from rocketpy.client.route import TopicRouteData
from rocketpy.errors import ClientError, RemotingError
from rocketpy.message import MessageQueue
from rocketpy.protocol import AUTO_CREATE_TOPIC_KEY, Perm, RequestCode, ResponseCode
from rocketpy.validate import check_topic

#: Topic permissions (``PermName``).
PERM_READ, PERM_WRITE = Perm.READ, Perm.WRITE


class Admin:
    """Administration client.

    Args:
        namesrv_addr: name servers, ``host:port`` separated by ``;``.
        timeout_ms: per-request timeout.
    """

    def __init__(self, namesrv_addr: str, timeout_ms: int = 5000) -> None:
        self._namesrv = [a.strip() for a in namesrv_addr.split(";") if a.strip()]
        if not self._namesrv:
            raise ClientError("namesrv_addr is empty")
        self._timeout = timeout_ms
        self._client = RemotingClient()

    def close(self) -> None:
        """Closes the connections."""
        self._client.shutdown()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _namesrv_call(self, code: int, header: dict[str, object] | None = None) -> Any:
        last: Exception | None = None
        for addr in self._namesrv:
            try:
                return self._client.invoke(addr, code, header, None, self._timeout)
            except RemotingError as e:
                last = e
        raise ClientError(f"no name server answered: {last}")

    def cluster_info(self) -> dict[str, Any]:
        """``{"brokerAddrTable": {name: BrokerData}, "clusterAddrTable": {cluster: [names]}}``."""
        resp = self._namesrv_call(RequestCode.GET_BROKER_CLUSTER_INFO)
        return json_body(check(resp, "namesrv").body, "GET_BROKER_CLUSTER_INFO")

    def master_addrs(self, cluster: str | None = None) -> list[str]:
        """Master addresses of every broker (of ``cluster`` when given)."""
        info = self.cluster_info()
        names = (
            info["clusterAddrTable"].get(cluster, []) if cluster else list(info["brokerAddrTable"])
        )
        out = []
        for name in names:
            addr = info["brokerAddrTable"].get(name, {}).get("brokerAddrs", {}).get("0")
            if addr:
                out.append(addr)
        return sorted(out)

    def topic_list(self) -> list[str]:
        """Every topic the name servers know."""
        resp = self._namesrv_call(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        body = json_body(check(resp, "namesrv").body, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER")
        return sorted(str(t) for t in body.get("topicList") or [])

    def topic_route(self, topic: str) -> TopicRouteData | None:
        """The route of ``topic`` (None if it has none)."""
        resp = self._namesrv_call(RequestCode.GET_ROUTEINFO_BY_TOPIC, dict(topic=topic))
        if resp.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        return TopicRouteData.decode(check(resp, "namesrv").body)

    def create_topic(
        self,
        topic: str,
        queues: int = 8,
        perm: int = PERM_READ | PERM_WRITE,
        broker_addrs: list[str] | None = None,
        order: bool = False,
    ) -> None:
        """Creates (or updates) ``topic`` with ``queues`` read and write queues on every master
        (or on ``broker_addrs``)."""
        check_topic(topic)
        header = dict(
            topic=topic,
            default_topic=AUTO_CREATE_TOPIC_KEY,
            read_queue_nums=queues,
            write_queue_nums=queues,
            perm=perm,
            topic_filter_type="SINGLE_TAG",
            topic_sys_flag=0,
            order=order,
        )
        targets = broker_addrs or self.master_addrs()
        if not targets:
            raise ClientError("no broker is registered with the name servers")
        for addr in targets:
            check(
                self._client.invoke(
                    addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header, None, self._timeout
                ),
                addr,
            )

    def _broker_of(self, mq: MessageQueue) -> str:
        route = self.topic_route(mq.topic)
        for b in route.broker_datas if route else ():
            if b.broker_name == mq.broker_name and b.master_addr():
                return b.master_addr()  # type: ignore[return-value]
        raise ClientError(f"no master for {mq}")

    def _offset_call(self, code: int, mq: MessageQueue, addr: str | None, **extra: int) -> int:
        addr = addr or self._broker_of(mq)
        header = dict(topic=mq.topic, queue_id=mq.queue_id, **extra)
        resp = self._client.invoke(addr, code, header, None, self._timeout)
        return _offset(check(resp, addr))

    # ``broker_addr``, when the caller knows the master already, saves a route look-up.

    def max_offset(self, mq: MessageQueue, broker_addr: str | None = None) -> int:
        """One past the last offset of ``mq``."""
        return self._offset_call(RequestCode.GET_MAX_OFFSET, mq, broker_addr)

    def min_offset(self, mq: MessageQueue, broker_addr: str | None = None) -> int:
        """The first offset of ``mq`` still stored."""
        return self._offset_call(RequestCode.GET_MIN_OFFSET, mq, broker_addr)

    def search_offset(
        self, mq: MessageQueue, timestamp_ms: int, broker_addr: str | None = None
    ) -> int:
        """The first offset of ``mq`` stored at or after ``timestamp_ms`` (the max offset when
        none is)."""
        return self._offset_call(
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, mq, broker_addr, timestamp=timestamp_ms
        )

    def consumer_offset(self, group: str, mq: MessageQueue) -> int:
        """The offset ``group`` committed for ``mq`` (-1 if none)."""
        addr = self._broker_of(mq)
        header = dict(consumer_group=group, topic=mq.topic, queue_id=mq.queue_id)
        resp = self._client.invoke(
            addr, RequestCode.QUERY_CONSUMER_OFFSET, header, None, self._timeout
        )
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return -1
        return _offset(check(resp, addr))

    def query_message(
        self, topic: str, key: str, max_num: int = 32, begin_ms: int = 0, end_ms: int = 2**62
    ) -> list[MessageExt]:
        """Messages of ``topic`` with id (UNIQ_KEY) or key ``key``, from every master."""
        found: list[MessageExt] = []
        header = dict(
            topic=topic, key=key, max_num=max_num, begin_timestamp=begin_ms, end_timestamp=end_ms
        )
        for addr in self.master_addrs():
            resp = self._client.invoke(addr, RequestCode.QUERY_MESSAGE, header, None, self._timeout)
            if resp.code == ResponseCode.SUCCESS:
                found.extend(resp.decode_messages())
        return found


def _offset(resp: RemotingResponse) -> int:
    """The ``offset`` of an offset answer (-1 when the broker left it out)."""
    offset = resp.header.offset
    return -1 if offset is None else int(offset)
