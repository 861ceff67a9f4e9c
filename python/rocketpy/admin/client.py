"""The :class:`Admin` client: each method is one of the requests RocketMQ's ``mqadmin`` makes
(same codes and headers), to the name servers or to the right brokers."""

from __future__ import annotations

import json
from typing import Any

from rocketpy._native import MessageExt, RemotingClient, RemotingResponse
from rocketpy._util import json_body, mq_table
from rocketpy.admin.cluster_table import broker_entries, masters
from rocketpy.admin.controller import ControllerAdmin
from rocketpy.admin.message_id import find_by_id
from rocketpy.admin.types import (
    BrokerStats,
    ClientConnection,
    ConsumeQueueView,
    ConsumerConnection,
    ConsumeStats,
    TopicOffset,
)
from rocketpy.client.instance import check
from rocketpy.client.namesrv import invoke_in_turn, namesrv_addrs
from rocketpy.client.route import TopicRouteData
from rocketpy.consumer.model import Subscription
from rocketpy.credentials import SessionCredentials, credentials_of
from rocketpy.errors import ClientError, ConfigError
from rocketpy.message import MessageQueue
from rocketpy.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    Perm,
    PullSysFlag,
    RequestCode,
    ResponseCode,
    retry_topic,
)
from rocketpy.selector import MessageSelector
from rocketpy.tls import TlsOptions, tls_of
from rocketpy.validate import check_topic

#: Topic permissions (``PermName``).
PERM_READ, PERM_WRITE = Perm.READ, Perm.WRITE


class Admin:
    """Administration client.

    Args:
        namesrv_addr: name servers, ``host:port`` separated by ``;``. Default: ``$NAMESRV_ADDR``.
            ``None``: none (only requests to given brokers and controllers then work).
        timeout_ms: per-request timeout.
        credentials: the ACL account requests are signed with (``aclEnable`` servers;
            changes need an admin account); or ``access_key`` / ``secret_key``.
        tls: connect with TLS (``True``: checking servers against ``tls_ca_file``, else the
            system's CAs; or a :class:`rocketpy.TlsOptions`).
    """

    def __init__(
        self,
        namesrv_addr: str | None = "",
        timeout_ms: int = 5000,
        *,
        credentials: SessionCredentials | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        tls: bool | TlsOptions = False,
        tls_ca_file: str | None = None,
    ) -> None:
        self._namesrv = [] if namesrv_addr is None else namesrv_addrs(namesrv_addr)
        self._timeout = timeout_ms
        account = credentials_of(credentials, access_key, secret_key)
        tls_options = tls_of(tls, tls_ca_file)
        self._client = RemotingClient(
            credentials=account.native() if account else None,
            tls=tls_options.native() if tls_options else None,
        )

    def close(self) -> None:
        """Closes the connections."""
        self._client.shutdown()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def controller(self) -> ControllerAdmin:
        """Controller mode's requests (:mod:`rocketpy.admin.controller`) over this client."""
        return ControllerAdmin(self._client, self._timeout)

    def _namesrv_call(self, code: int, header: dict[str, object] | None = None) -> Any:
        if not self._namesrv:
            raise ConfigError("no name server: this Admin was made with namesrv_addr=None")
        return invoke_in_turn(
            self._namesrv,
            0,
            code,
            lambda addr: self._client.invoke(addr, code, header, None, self._timeout),
        )[1]

    def cluster_info(self) -> dict[str, Any]:
        """``{"brokerAddrTable": {name: BrokerData}, "clusterAddrTable": {cluster: [names]}}``."""
        resp = self._namesrv_call(RequestCode.GET_BROKER_CLUSTER_INFO)
        return json_body(check(resp, "namesrv").body, "GET_BROKER_CLUSTER_INFO")

    def master_addrs(self, cluster: str | None = None) -> list[str]:
        """Master addresses of every broker (of ``cluster`` when given)."""
        return masters(broker_entries(self.cluster_info(), cluster))

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

    def topic_route_json(self, topic: str) -> dict[str, Any] | None:
        """The route of ``topic`` as the name server's JSON (None if it has none)."""
        resp = self._namesrv_call(RequestCode.GET_ROUTEINFO_BY_TOPIC, dict(topic=topic))
        if resp.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        return json_body(check(resp, "namesrv").body, "topic route")

    def create_topic(
        self,
        topic: str,
        queues: int = 8,
        perm: int = PERM_READ | PERM_WRITE,
        broker_addrs: list[str] | None = None,
        order: bool = False,
        attributes: str | None = None,
    ) -> None:
        """Creates (or updates) ``topic`` with ``queues`` read and write queues on every master
        (or on ``broker_addrs``). ``attributes`` are RocketMQ 5's changes, e.g.
        ``"+message.type=FIFO"`` (the topic takes only FIFO messages from 5.x clients;
        ``NORMAL``, ``DELAY``, ``TRANSACTION``; ``MIXED`` where the broker allows it), or
        ``"-message.type"`` to remove it.

        Raises:
            BrokerResponseError: a broker refused (an attribute it does not support, a
                change of one that cannot change).
        """
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
        if attributes:
            header["attributes"] = attributes
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

    def consumer_offset(self, group: str, mq: MessageQueue, broker_addr: str | None = None) -> int:
        """The offset ``group`` committed for ``mq`` (-1 if none)."""
        addr = broker_addr or self._broker_of(mq)
        header = dict(consumer_group=group, topic=mq.topic, queue_id=mq.queue_id)
        resp = self._client.invoke(
            addr, RequestCode.QUERY_CONSUMER_OFFSET, header, None, self._timeout
        )
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return -1
        return _offset(check(resp, addr))

    def commit_offset(
        self, group: str, mq: MessageQueue, offset: int, broker_addr: str | None = None
    ) -> None:
        """Records ``offset`` (the next message to consume) as ``group``'s progress on ``mq``
        (UPDATE_CONSUMER_OFFSET), as a consumer's offset store does: the group's lag then
        shows in consumerProgress and the broker's metrics."""
        addr = broker_addr or self._broker_of(mq)
        self._broker_call(
            addr,
            RequestCode.UPDATE_CONSUMER_OFFSET,
            dict(consumer_group=group, topic=mq.topic, queue_id=mq.queue_id, commit_offset=offset),
        )

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

    # -- mqadmin's requests --------------------------------------------------------------------

    def _broker_call(
        self,
        addr: str,
        code: int,
        header: dict[str, object] | None = None,
        body: bytes | None = None,
    ) -> RemotingResponse:
        return check(self._client.invoke(addr, code, header, body, self._timeout), addr)

    def _broker_json(
        self, addr: str, code: int, header: dict[str, object] | None, what: str
    ) -> dict[str, Any]:
        return json_body(self._broker_call(addr, code, header).body, what)

    def _route_masters(self, topic: str) -> list[str]:
        route = self.topic_route(topic)
        if route is None:
            raise ClientError(f"topic {topic!r} has no route: it does not exist")
        return sorted({b.master_addr() for b in route.broker_datas if b.master_addr()})  # type: ignore[misc]

    def topics_of_cluster(self, cluster: str) -> list[str]:
        """Topics with queues on a broker of ``cluster`` (GET_TOPICS_BY_CLUSTER)."""
        resp = self._namesrv_call(RequestCode.GET_TOPICS_BY_CLUSTER, dict(cluster=cluster))
        body = json_body(check(resp, "namesrv").body, "GET_TOPICS_BY_CLUSTER")
        return sorted(str(t) for t in body.get("topicList") or [])

    def topic_stats(self, topic: str) -> dict[MessageQueue, TopicOffset]:
        """Every queue of ``topic`` on every master (GET_TOPIC_STATS_INFO)."""
        out: dict[MessageQueue, TopicOffset] = {}
        for addr in self._route_masters(topic):
            body = self._broker_json(
                addr, RequestCode.GET_TOPIC_STATS_INFO, dict(topic=topic), "TopicStatsTable"
            )
            out.update(TopicOffset.table(body))
        return out

    def consume_stats(self, group: str, topic: str | None = None) -> ConsumeStats:
        """A group's progress over every master that has its retry topic (or ``topic``'s
        route), as mqadmin's consumerProgress gathers it (GET_CONSUME_STATS)."""
        try:
            addrs = self._route_masters(topic or retry_topic(group))
        except ClientError:
            addrs = self.master_addrs()
        stats = ConsumeStats()
        header: dict[str, object] = dict(consumer_group=group)
        if topic:
            header["topic"] = topic
        for addr in addrs:
            body = self._broker_json(addr, RequestCode.GET_CONSUME_STATS, header, "ConsumeStats")
            stats.merge(ConsumeStats.decode(body))
        return stats

    def consumer_connection(
        self, group: str, broker_addr: str | None = None
    ) -> ConsumerConnection | None:
        """A consumer group's live connections (GET_CONSUMER_CONNECTION_LIST), from the first
        master (or ``broker_addr``) that knows the group online; None when it is online
        nowhere."""
        for addr in [broker_addr] if broker_addr else self.master_addrs():
            resp = self._client.invoke(
                addr,
                RequestCode.GET_CONSUMER_CONNECTION_LIST,
                dict(consumer_group=group),
                None,
                self._timeout,
            )
            if resp.code == ResponseCode.SUCCESS:
                body = json_body(resp.body, "ConsumerConnection")
                return ConsumerConnection.decode(body)
        return None

    def producer_connections(self, group: str, topic: str) -> list[ClientConnection]:
        """A producer group's live connections on the masters of ``topic``
        (GET_PRODUCER_CONNECTION_LIST)."""
        seen: dict[str, ClientConnection] = {}
        for addr in self._route_masters(topic):
            resp = self._client.invoke(
                addr,
                RequestCode.GET_PRODUCER_CONNECTION_LIST,
                dict(producer_group=group),
                None,
                self._timeout,
            )
            if resp.code == ResponseCode.SUCCESS:
                body = json_body(resp.body, "ProducerConnection")
                for c in body.get("connectionSet") or []:
                    conn = ClientConnection.decode(c)
                    seen[conn.client_id] = conn
        return sorted(seen.values(), key=lambda c: c.client_id)

    def groups_of_topic(self, topic: str) -> list[str]:
        """Groups that consume ``topic`` (QUERY_TOPIC_CONSUME_BY_WHO on its masters)."""
        groups: set[str] = set()
        for addr in self._route_masters(topic):
            body = self._broker_json(
                addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, dict(topic=topic), "GroupList"
            )
            groups.update(str(g) for g in body.get("groupList") or [])
        return sorted(groups)

    def query_consume_queue(
        self,
        mq: MessageQueue,
        index: int,
        count: int = 10,
        group: str | None = None,
        broker_addr: str | None = None,
    ) -> ConsumeQueueView:
        """Up to ``count`` consume-queue units of ``mq`` from queue offset ``index``
        (QUERY_CONSUME_QUEUE, mqadmin's queryCq): each message's CommitLog offset, size and
        tag hash, without reading the messages. The answer stops at the end of the queue file
        holding ``index``; an index outside the stored units gives no units (and bounds of
        -1: the broker then answers without a body)."""
        addr = broker_addr or self._broker_of(mq)
        header: dict[str, object] = dict(
            topic=mq.topic, queue_id=mq.queue_id, index=index, count=count
        )
        if group:
            header["consumer_group"] = group
        resp = self._broker_call(addr, RequestCode.QUERY_CONSUME_QUEUE, header)
        if not resp.body:  # RocketMQ: SUCCESS with only a remark for a missing index
            return ConsumeQueueView([], -1, -1)
        return ConsumeQueueView.decode(json_body(resp.body, "QueryConsumeQueueResponseBody"))

    def broker_runtime_info(self, addr: str) -> dict[str, str]:
        """A broker's runtime figures (GET_BROKER_RUNTIME_INFO's ``KVTable``)."""
        body = self._broker_json(addr, RequestCode.GET_BROKER_RUNTIME_INFO, None, "KVTable")
        return {str(k): str(v) for k, v in (body.get("table") or {}).items()}

    def broker_config(self, addr: str) -> dict[str, str]:
        """A broker's effective configuration (GET_BROKER_CONFIG)."""
        text = self._broker_call(addr, RequestCode.GET_BROKER_CONFIG).body.decode(
            "utf-8", "replace"
        )
        out = {}
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() and not key.lstrip().startswith("#"):
                out[key.strip()] = value.strip()
        return out

    def update_broker_config(self, addr: str, key: str, value: str) -> None:
        """Changes one key of a running broker (UPDATE_BROKER_CONFIG)."""
        body = f"{key}={value}\n".encode()
        self._broker_call(addr, RequestCode.UPDATE_BROKER_CONFIG, None, body)

    def broker_stats(self, addr: str, stats_name: str, stats_key: str) -> BrokerStats | None:
        """One statistic of a broker (VIEW_BROKER_STATS_DATA); None when it saw no traffic."""
        resp = self._client.invoke(
            addr,
            RequestCode.VIEW_BROKER_STATS_DATA,
            dict(stats_name=stats_name, stats_key=stats_key),
            None,
            self._timeout,
        )
        if resp.code != ResponseCode.SUCCESS:
            return None
        return BrokerStats.decode(json_body(resp.body, "BrokerStatsData"))

    def delete_topic(self, topic: str, cluster: str | None = None) -> None:
        """Deletes ``topic`` on every master (of ``cluster``) and its route on every name
        server (DELETE_TOPIC_IN_BROKER, DELETE_TOPIC_IN_NAMESRV)."""
        for addr in self.master_addrs(cluster):
            self._broker_call(addr, RequestCode.DELETE_TOPIC_IN_BROKER, dict(topic=topic))
        header: dict[str, object] = dict(topic=topic)
        if cluster:
            header["cluster_name"] = cluster
        for ns in self._namesrv:
            check(
                self._client.invoke(
                    ns, RequestCode.DELETE_TOPIC_IN_NAMESRV, header, None, self._timeout
                ),
                ns,
            )

    def update_subscription_group(self, addr: str, config: dict[str, Any]) -> None:
        """Creates or updates a subscription group on a broker (``SubscriptionGroupConfig``
        JSON: groupName, consumeEnable, consumeBroadcastEnable, retryQueueNums,
        retryMaxTimes, brokerId, whichBrokerWhenConsumeSlowly, ...)."""
        body = json.dumps(config).encode()
        self._broker_call(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, body)

    def delete_subscription_group(self, addr: str, group: str, clean_offset: bool = False) -> None:
        """Deletes a group's settings on a broker (DELETE_SUBSCRIPTIONGROUP)."""
        self._broker_call(
            addr,
            RequestCode.DELETE_SUBSCRIPTIONGROUP,
            dict(group_name=group, clean_offset=clean_offset),
        )

    def set_write_perm(self, broker_name: str, writable: bool) -> dict[str, int]:
        """Takes the write permission of ``broker_name``'s topics away (or gives it back) on
        every name server (WIPE_WRITE_PERM_OF_BROKER / ADD_WRITE_PERM_OF_BROKER); returns the
        topic count each name server changed."""
        code = (
            RequestCode.ADD_WRITE_PERM_OF_BROKER
            if writable
            else RequestCode.WIPE_WRITE_PERM_OF_BROKER
        )
        out = {}
        for ns in self._namesrv:
            resp = check(
                self._client.invoke(ns, code, dict(broker_name=broker_name), None, self._timeout),
                ns,
            )
            count = resp.header.add_topic_count if writable else resp.header.wipe_topic_count
            out[ns] = int(count or 0)
        return out

    def reset_offset_by_time(
        self, group: str, topic: str, timestamp_ms: int, force: bool = True
    ) -> dict[MessageQueue, int]:
        """Moves ``group`` on ``topic`` to the first message stored at or after
        ``timestamp_ms`` (-1: the end). Online members are told by their brokers
        (INVOKE_BROKER_TO_RESET_OFFSET); for a group with no member online the offsets are
        committed directly, as mqadmin falls back to. Returns the new offsets."""
        out: dict[MessageQueue, int] = {}
        offline = False
        for addr in self._route_masters(topic):
            resp = self._client.invoke(
                addr,
                RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                dict(topic=topic, group=group, timestamp=timestamp_ms, is_force=force),
                None,
                self._timeout,
            )
            if resp.code == ResponseCode.CONSUMER_NOT_ONLINE:
                offline = True
                continue
            body = json_body(check(resp, addr).body, "ResetOffsetBody")
            out.update({mq: int(o) for mq, o in mq_table(body.get("offsetTable"), "reset").items()})
        if offline:
            out.update(self._reset_offline(group, topic, timestamp_ms, force))
        return out

    def _reset_offline(
        self, group: str, topic: str, timestamp_ms: int, force: bool
    ) -> dict[MessageQueue, int]:
        """mqadmin's fallback for a group with no member online: each queue's offset at the
        time, committed with UPDATE_CONSUMER_OFFSET (never forward unless ``force``)."""
        route = self.topic_route(topic)
        masters = {b.broker_name: b.master_addr() for b in route.broker_datas} if route else {}
        out = {}
        # One route and one stats look-up for the topic, not one per queue.
        for mq, stats in self.topic_stats(topic).items():
            addr = masters.get(mq.broker_name)
            if addr is None:
                raise ClientError(f"no master for {mq}")
            if timestamp_ms == -1:
                offset = stats.max_offset
            else:
                offset = self.search_offset(mq, timestamp_ms, addr)
            current = self.consumer_offset(group, mq, addr)
            if not force and 0 <= current < offset:
                offset = current
            self.commit_offset(group, mq, offset, addr)
            out[mq] = offset
        return out

    def view_message(
        self, msg_id: str, commit_log_offset: int | None = None, *, topic: str | None = None
    ) -> MessageExt | None:
        """The message with id ``msg_id``: the id a producer returned (``SendResult.msg_id``,
        looked up in ``topic``, or in every topic when none is given) or an offset id
        (``SendResult.offset_msg_id``). With ``commit_log_offset``, ``msg_id`` is a broker's
        address and the answer the message at that CommitLog offset (VIEW_MESSAGE_BY_ID).
        None when there is no such message."""
        if commit_log_offset is None:
            return find_by_id(self, msg_id, topic)
        addr = msg_id
        resp = self._client.invoke(
            addr,
            RequestCode.VIEW_MESSAGE_BY_ID,
            dict(offset=commit_log_offset),
            None,
            self._timeout,
        )
        if resp.code != ResponseCode.SUCCESS:
            return None
        msgs = resp.decode_messages()
        return msgs[0] if msgs else None

    def pull_messages(
        self,
        mq: MessageQueue,
        offset: int,
        max_num: int = 32,
        group: str = "TOOLS_CONSUMER",
        selector: str | MessageSelector = "*",
    ) -> list[MessageExt]:
        """Up to ``max_num`` messages of ``mq`` from ``offset`` on (one PULL_MESSAGE that
        commits nothing, as mqadmin's tools pull) that ``selector`` keeps (tags, or
        ``MessageSelector.by_sql``, which the broker evaluates); empty when there are none.

        Raises:
            ClientError: ``selector`` is not a tag expression or does not compile, or the
                broker refused the filter (an SQL92 filter on a broker with
                ``enablePropertyFilter=false``).
        """
        sub = Subscription.parse(mq.topic, selector)
        addr = self._broker_of(mq)
        header = dict(
            consumer_group=group,
            topic=mq.topic,
            queue_id=mq.queue_id,
            queue_offset=offset,
            max_msg_nums=max_num,
            sys_flag=PullSysFlag.SUBSCRIPTION,
            commit_offset=0,
            suspend_timeout_millis=0,
            subscription=sub.expression,
            sub_version=0,
            expression_type=sub.type,
        )
        resp = self._client.invoke(addr, RequestCode.PULL_MESSAGE, header, None, self._timeout)
        if resp.code in (ResponseCode.SYSTEM_ERROR, ResponseCode.SUBSCRIPTION_PARSE_FAILED):
            raise ClientError(f"the broker refused the pull: {resp.remark}")
        if resp.code != ResponseCode.SUCCESS:
            return []
        return [m for m in resp.decode_messages() if m.queue_offset >= offset and sub.matches(m)]

    def pull_one(
        self, mq: MessageQueue, offset: int, group: str = "TOOLS_CONSUMER"
    ) -> MessageExt | None:
        """The message at ``offset`` of ``mq`` (a PULL_MESSAGE of one message, as mqadmin's
        queryMsgByOffset), or None."""
        msgs = [m for m in self.pull_messages(mq, offset, 1, group) if m.queue_offset == offset]
        return msgs[0] if msgs else None


def _offset(resp: RemotingResponse) -> int:
    """The ``offset`` of an offset answer (-1 when the broker left it out)."""
    offset = resp.header.offset
    return -1 if offset is None else int(offset)
