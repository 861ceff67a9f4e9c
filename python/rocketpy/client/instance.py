"""``ClientInstance``: what producers and consumers of one client id share (RocketMQ's
``MQClientInstance``): the remoting client, name server fail-over, the route cache refreshed
every 30 s, heartbeats to every broker, and the rebalance service.

Process events: at interpreter exit every client still running is shut down (offsets
committed, the group left) within :data:`EXIT_GRACE_S`; a child process created by
``os.fork()`` starts with no instances, and clients its parent started raise
:class:`~rocketpy.errors.ForkedProcessError` there (their threads stayed in the parent) except
``shutdown()``, which does nothing.
"""

from __future__ import annotations

import atexit
import functools
import json
import logging
import os
import threading
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from rocketpy._native import (
    ForkedProcessError,
    Header,
    RemotingClient,
    RemotingResponse,
    decode_messages,
    release_free_memory,
)
from rocketpy._util import current_pid, json_body, local_ip, mq_table
from rocketpy.client.namesrv import invoke_in_turn, namesrv_addrs
from rocketpy.client.route import TopicPublishInfo, TopicRouteData, publish_info, subscribe_queues
from rocketpy.client.scheduler import Scheduler
from rocketpy.credentials import SessionCredentials
from rocketpy.errors import BrokerResponseError, ClientError, RocketpyError
from rocketpy.message import MessageQueue
from rocketpy.protocol import MASTER_ID, Property, RequestCode, ResponseCode
from rocketpy.tls import TlsOptions

log = logging.getLogger("rocketpy.client")

#: Seconds the interpreter waits at exit for running clients to shut down.
EXIT_GRACE_S = 5.0


@dataclass
class ClientConfig:
    """Settings shared by a client instance (RocketMQ's ``ClientConfig`` names in snake case).

    Attributes:
        namesrv_addr: name servers, ``host:port`` separated by ``;``; empty: the environment
            variable ``NAMESRV_ADDR``, as RocketMQ's clients read it.
        instance_name: part of the client id (``ip@instance_name``); clients with the same
            name in one process share one instance. Default: the process id.
        poll_name_server_interval_ms: route refresh period.
        heartbeat_broker_interval_ms: heartbeat period.
        persist_consumer_offset_interval_ms: offset commit period.
        rebalance_interval_ms: rebalance period (also on NOTIFY_CONSUMER_IDS_CHANGED).
        request_timeout_ms: timeout of name server and admin requests.
        credentials: the ACL account every request is signed with (``aclEnable`` servers).
        tls: TLS on every connection (servers with ``tls.server.mode`` permissive or
            enforcing), see :class:`rocketpy.TlsOptions`.
    """

    namesrv_addr: str = ""
    instance_name: str | None = None
    poll_name_server_interval_ms: int = 30_000
    heartbeat_broker_interval_ms: int = 30_000
    persist_consumer_offset_interval_ms: int = 5_000
    rebalance_interval_ms: int = 20_000
    request_timeout_ms: int = 3_000
    credentials: SessionCredentials | None = None
    tls: TlsOptions | None = None

    def namesrv_list(self) -> list[str]:
        """The name server addresses (``$NAMESRV_ADDR`` when ``namesrv_addr`` is empty)."""
        return namesrv_addrs(self.namesrv_addr)


class ProducerLike(Protocol):
    """What the instance needs from a producer."""

    group: str

    def topics(self) -> set[str]: ...

    def update_publish_info(self, topic: str, info: TopicPublishInfo) -> None: ...

    def shutdown(self) -> None: ...


class ConsumerLike(Protocol):
    """What the instance needs from a consumer."""

    group: str

    def subscribed_topics(self) -> set[str]: ...

    def consumer_data(self) -> dict[str, Any]: ...

    def update_subscribe_queues(self, topic: str, queues: list[MessageQueue]) -> None: ...

    def do_rebalance(self) -> None: ...

    def persist_offsets(self) -> None: ...

    def shutdown(self) -> None: ...


#: How long a broker has to answer a heartbeat.
HEARTBEAT_TIMEOUT_MS = 3000


def check(resp: RemotingResponse, addr: str, *ok: int) -> RemotingResponse:
    """``resp`` if its code is SUCCESS or one of ``ok``, else a :class:`BrokerResponseError`."""
    if resp.code == ResponseCode.SUCCESS or resp.code in ok:
        return resp
    raise BrokerResponseError(resp.code, resp.remark, addr)


class ClientInstance:
    """Shared by every producer and consumer with the same client id. Get one with
    :meth:`ClientInstance.acquire`; release it with :meth:`release`."""

    _registry: ClassVar[dict[str, ClientInstance]] = {}
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, client_id: str, config: ClientConfig) -> None:
        self.client_id = client_id
        self.config = config
        #: The process that created it (see :meth:`check_process`).
        self.pid = os.getpid()
        self._namesrv = config.namesrv_list()
        self._namesrv_index = 0
        self.remoting = RemotingClient(
            request_handler=self._on_server_request,
            credentials=config.credentials.native() if config.credentials else None,
            tls=config.tls.native() if config.tls else None,
        )
        self._lock = threading.RLock()
        self._producers: dict[str, ProducerLike] = {}
        self._consumers: dict[str, ConsumerLike] = {}
        self._routes: dict[str, TopicRouteData] = {}
        self._broker_addrs: dict[str, dict[int, str]] = {}
        self._users = 0
        self._started = False
        self._scheduler: Scheduler | None = None
        self._rebalance_wakeup = threading.Event()
        self._rebalance_thread: threading.Thread | None = None
        self._closing = threading.Event()

    # -- lifecycle ------------------------------------------------------------------------

    @classmethod
    def acquire(cls, config: ClientConfig, group: str, kind: str) -> ClientInstance:
        """The started instance for ``config``'s client id. When no instance name was given
        and the default instance already has a client of this group and kind, a fresh
        instance is used so several clients of one group can live in one process."""
        with cls._registry_lock:
            base = config.instance_name or str(os.getpid())
            if config.credentials is not None:
                # Clients of different accounts never share an instance (its connections
                # sign with one account).
                base += f"~{config.credentials.access_key}"
            if config.tls is not None:
                base += f"~tls{abs(hash(config.tls))}"  # connections of one kind per instance
            n = 0
            while True:
                name = base if n == 0 else f"{base}#{n}"
                client_id = f"{local_ip()}@{name}"
                inst = cls._registry.get(client_id)
                if inst is None:
                    inst = ClientInstance(client_id, config)
                    cls._registry[client_id] = inst
                if not inst._has(group, kind):
                    break
                if config.instance_name:
                    raise ClientError(
                        f"a {kind} of group {group!r} already exists in instance {name!r}; "
                        "use another group or instance_name"
                    )
                n += 1
            inst._users += 1
            inst._start()
            return inst

    def release(self) -> None:
        """Drops one user; the last one shuts the instance down."""
        with ClientInstance._registry_lock:
            self._users -= 1
            if self._users > 0:
                return
            ClientInstance._registry.pop(self.client_id, None)
        self._shutdown()

    def check_process(self, what: str) -> None:
        """Raises :class:`ForkedProcessError` in a child process after ``os.fork()``: this
        instance's threads and connections stayed in the parent."""
        if self.forked():
            raise ForkedProcessError(
                f"this {what} was started in process {self.pid} before os.fork(); it cannot "
                f"be used in child process {current_pid()}: create and start a new one in the "
                "child (or use the 'spawn' multiprocessing start method)"
            )

    def forked(self) -> bool:
        """Whether this is a child process of the one that created the instance."""
        return self.pid != current_pid()

    @classmethod
    def _after_fork_in_child(cls) -> None:
        # The parent's instances (and possibly a held lock) are not usable here.
        cls._registry = {}
        cls._registry_lock = threading.Lock()

    @classmethod
    def _close_all_at_exit(cls) -> None:
        """Shuts down the clients still running, on a daemon thread given
        :data:`EXIT_GRACE_S` (a listener that never returns must not hold the exit)."""
        with cls._registry_lock:
            instances = [i for i in cls._registry.values() if not i.forked()]
        clients: list[ProducerLike | ConsumerLike] = []
        for inst in instances:
            with inst._lock:
                clients += list(inst._consumers.values()) + list(inst._producers.values())
        if not clients:
            return

        def close() -> None:
            for c in clients:
                try:
                    c.shutdown()
                except Exception as e:
                    log.warning("shutdown of %s at exit failed: %s", c.group, e)

        t = threading.Thread(target=close, name="rocketpy-exit", daemon=True)
        t.start()
        t.join(EXIT_GRACE_S)
        if t.is_alive():
            log.warning("clients still shutting down after %.0f s; exiting anyway", EXIT_GRACE_S)

    def _has(self, group: str, kind: str) -> bool:
        with self._lock:
            return group in (self._producers if kind == "producer" else self._consumers)

    def _start(self) -> None:
        if self._started:
            return
        self._started = True
        c = self.config
        self._scheduler = Scheduler(f"rocketpy-{self.client_id}")
        self._scheduler.every(
            0.01, c.poll_name_server_interval_ms / 1000, self._safe(self.refresh_routes)
        )
        self._scheduler.every(
            1.0, c.heartbeat_broker_interval_ms / 1000, self._safe(self._heartbeat_round)
        )
        self._scheduler.every(
            c.persist_consumer_offset_interval_ms / 1000,
            c.persist_consumer_offset_interval_ms / 1000,
            self._safe(self._persist_all_offsets),
        )
        # Free heap pages back to the OS: without it a client's memory stays stepped up after
        # a burst such as a broker restart (see rocketpy_remoting::memory).
        self._scheduler.every(30.0, 30.0, release_free_memory)
        self._rebalance_thread = threading.Thread(
            target=self._rebalance_loop, name=f"rocketpy-rebalance-{self.client_id}", daemon=True
        )
        self._rebalance_thread.start()

    def _shutdown(self) -> None:
        self._closing.set()
        self._rebalance_wakeup.set()
        if self._scheduler:
            self._scheduler.stop()
        if self._rebalance_thread and self._rebalance_thread is not threading.current_thread():
            self._rebalance_thread.join(timeout=10)
        self.remoting.shutdown()

    @staticmethod
    def _safe(fn: Any) -> Any:
        def run() -> None:
            try:
                fn()
            except Exception as e:
                log.warning("%s failed: %s", getattr(fn, "__name__", fn), e)

        return run

    # -- registration -----------------------------------------------------------------------

    def register_producer(self, producer: ProducerLike) -> None:
        """Adds a producer (its group must be new in this instance)."""
        with self._lock:
            if producer.group in self._producers:
                raise ClientError(f"producer group {producer.group!r} already registered")
            self._producers[producer.group] = producer

    def unregister_producer(self, group: str) -> None:
        """Removes a producer and tells the brokers."""
        with self._lock:
            self._producers.pop(group, None)
        self._unregister_client(producer_group=group)

    def register_consumer(self, consumer: ConsumerLike) -> None:
        """Adds a consumer (its group must be new in this instance)."""
        with self._lock:
            if consumer.group in self._consumers:
                raise ClientError(f"consumer group {consumer.group!r} already registered")
            self._consumers[consumer.group] = consumer

    def unregister_consumer(self, group: str) -> None:
        """Removes a consumer and tells the brokers (they notify the rest of the group)."""
        with self._lock:
            self._consumers.pop(group, None)
        self._unregister_client(consumer_group=group)

    def _unregister_client(self, producer_group: str = "", consumer_group: str = "") -> None:
        header = dict(
            client_id=self.client_id,
            producer_group=producer_group or None,
            consumer_group=consumer_group or None,
        )
        for addr in self._all_broker_addrs():
            try:
                self.remoting.invoke(addr, RequestCode.UNREGISTER_CLIENT, header, None, 3000)
            except Exception as e:
                log.debug("UNREGISTER_CLIENT to %s failed: %s", addr, e)

    # -- name servers and routes ------------------------------------------------------------

    def invoke_namesrv(
        self, code: int, header: dict[str, object], timeout_ms: int | None = None
    ) -> RemotingResponse:
        """Sends to the current name server, failing over to the others in turn."""
        timeout = timeout_ms or self.config.request_timeout_ms
        # Each call walks every name server once from the current one, whatever other
        # threads do meanwhile; the one that answers becomes the current one.
        i, resp = invoke_in_turn(
            self._namesrv,
            self._namesrv_index,
            code,
            lambda addr: self.remoting.invoke(addr, code, header, None, timeout),
        )
        self._namesrv_index = i
        return resp

    def fetch_route(self, topic: str) -> TopicRouteData | None:
        """The topic's route from a name server; ``None`` if the topic does not exist."""
        resp = self.invoke_namesrv(RequestCode.GET_ROUTEINFO_BY_TOPIC, dict(topic=topic))
        if resp.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        check(resp, "namesrv")
        return TopicRouteData.decode(resp.body)

    def update_route(self, topic: str) -> TopicRouteData | None:
        """Refreshes one topic's route and tells the interested clients."""
        route = self.fetch_route(topic)
        if route is None:
            return None
        self.remember_brokers(route)
        with self._lock:
            changed = self._routes.get(topic) != route
            self._routes[topic] = route
            producers = list(self._producers.values())
            consumers = list(self._consumers.values())
        if changed:
            log.info("route of %s: %s", topic, route)
        for p in producers:
            if topic in p.topics():
                p.update_publish_info(topic, publish_info(topic, route))
        for c in consumers:
            if topic in c.subscribed_topics():
                c.update_subscribe_queues(topic, subscribe_queues(topic, route))
        return route

    def refresh_routes(self) -> None:
        """Refreshes the route of every topic a client of this instance uses."""
        with self._lock:
            topics = set()
            for p in self._producers.values():
                topics |= p.topics()
            for c in self._consumers.values():
                topics |= c.subscribed_topics()
        for topic in topics:
            try:
                self.update_route(topic)
            except Exception as e:
                log.warning("route refresh of %s failed: %s", topic, e)

    def remember_brokers(self, route: TopicRouteData) -> None:
        """Caches the broker addresses of ``route`` (e.g. the TBW102 template's)."""
        with self._lock:
            for b in route.broker_datas:
                self._broker_addrs[b.broker_name] = dict(b.broker_addrs)

    def route(self, topic: str) -> TopicRouteData | None:
        """The cached route."""
        with self._lock:
            return self._routes.get(topic)

    def master_addr(self, broker_name: str) -> str | None:
        """The master address of a broker group, from the cached routes."""
        with self._lock:
            return self._broker_addrs.get(broker_name, {}).get(MASTER_ID)

    def find_broker_in_subscribe(
        self, broker_name: str, broker_id: int = MASTER_ID, only_this: bool = False
    ) -> tuple[str, bool] | None:
        """The address of ``broker_id`` in the group and whether it is a slave; unless
        ``only_this``, any live member when that one is not in the route (reads and offsets
        go to a slave while the master is away, as RocketMQ's clients do)."""
        with self._lock:
            addrs = self._broker_addrs.get(broker_name, {})
            if broker_id in addrs:
                return addrs[broker_id], broker_id != MASTER_ID
            if only_this or not addrs:
                return None
            bid, addr = min(addrs.items())
            return addr, bid != MASTER_ID

    def broker_addr(self, broker_name: str) -> str | None:
        """The master address, or any address of the group."""
        with self._lock:
            addrs = self._broker_addrs.get(broker_name, {})
            if MASTER_ID in addrs:
                return addrs[MASTER_ID]
            return next(iter(sorted(addrs.items())), (0, None))[1]

    def _all_broker_addrs(self) -> list[str]:
        with self._lock:
            return sorted({a for addrs in self._broker_addrs.values() for a in addrs.values()})

    # -- heartbeats and server requests -----------------------------------------------------

    def heartbeat_data(self) -> dict[str, Any]:
        """The HeartbeatData body."""
        with self._lock:
            return {
                "clientID": self.client_id,
                "producerDataSet": [{"groupName": g} for g in self._producers],
                "consumerDataSet": [c.consumer_data() for c in self._consumers.values()],
            }

    def send_heartbeat(self, wait: bool = True) -> None:
        """Sends a heartbeat to every known broker at once (masters only when there are no
        consumers); with ``wait``, returns once each answered or timed out (3 s)."""
        data = self.heartbeat_data()
        if not data["producerDataSet"] and not data["consumerDataSet"]:
            return
        body = json.dumps(data).encode()
        with self._lock:
            targets = sorted(
                {
                    addr
                    for addrs in self._broker_addrs.values()
                    for bid, addr in addrs.items()
                    if bid == MASTER_ID or data["consumerDataSet"]
                }
            )
        left = [len(targets)]
        counting = threading.Lock()
        all_done = threading.Event()

        def answered(addr: str, resp: RemotingResponse | None, err: BaseException | None) -> None:
            try:
                if err is not None:
                    raise err
                if resp is not None:
                    check(resp, addr)
            except Exception as e:
                log.warning("heartbeat to %s failed: %s", addr, e)
            with counting:
                left[0] -= 1
                if left[0] == 0:
                    all_done.set()

        for addr in targets:
            try:
                self.remoting.invoke_async(
                    addr,
                    RequestCode.HEART_BEAT,
                    None,
                    body,
                    HEARTBEAT_TIMEOUT_MS,
                    functools.partial(answered, addr),
                )
            except Exception as e:
                answered(addr, None, e)
        if wait and targets:
            all_done.wait(HEARTBEAT_TIMEOUT_MS / 1000 + 1)

    def _heartbeat_round(self) -> None:
        # Not waited for: the scheduler's thread also refreshes routes, and a paused or cut-off
        # broker's timeout would hold up the route that names its replacement.
        self.send_heartbeat(wait=False)

    def _on_server_request(self, code: int, header: Header, body: bytes, peer: str) -> None:
        if code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
            log.info("group %s changed; rebalancing now", header.consumer_group)
            self.rebalance_now()
        elif code == RequestCode.CHECK_TRANSACTION_STATE:
            self._check_transaction_state(header, body, peer)
        elif code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET:
            self._reset_offsets(header, body, peer)
        else:
            log.debug("ignoring server request code %s", code)

    def _reset_offsets(self, header: Header, body: bytes, peer: str) -> None:
        """Moves a consumer group to the offsets a broker sends (mqadmin resetOffsetByTime)."""
        try:
            data = json_body(body, "RESET_CONSUMER_CLIENT_OFFSET")
            offsets = {mq: int(o) for mq, o in mq_table(data.get("offsetTable"), "reset").items()}
        except (RocketpyError, ValueError, TypeError) as e:
            log.warning("unreadable RESET_CONSUMER_CLIENT_OFFSET from %s: %s", peer, e)
            return
        with self._lock:
            consumer = self._consumers.get(str(header.group))
        reset = getattr(consumer, "reset_offsets", None)
        if reset is None:
            log.debug("offset reset for group %r, which has no consumer here", header.group)
            return
        log.info("group %s: offsets of %s reset by %s", header.group, header.topic, peer)
        # Off the network thread: the reset commits offsets and rebalances.
        threading.Thread(
            target=reset, args=(str(header.topic), offsets), name="rocketpy-reset", daemon=True
        ).start()

    def _check_transaction_state(self, header: Header, body: bytes, peer: str) -> None:
        """Hands a broker's question about a transaction to the producer of its group."""
        try:
            [msg] = decode_messages(body)
        except Exception as e:
            log.warning("unreadable CHECK_TRANSACTION_STATE from %s: %s", peer, e)
            return
        group = msg.get_property(Property.PRODUCER_GROUP) or ""
        with self._lock:
            producer = self._producers.get(group)
        check = getattr(producer, "check_transaction_state", None)
        if check is None:
            log.debug(
                "check of a transaction of group %r, which has no transaction producer here", group
            )
            return
        check(peer, header, msg)

    # -- rebalance and offsets --------------------------------------------------------------

    def rebalance_now(self) -> None:
        """Wakes the rebalance service."""
        self._rebalance_wakeup.set()

    def _rebalance_loop(self) -> None:
        interval = self.config.rebalance_interval_ms / 1000
        while not self._closing.is_set():
            self._rebalance_wakeup.wait(interval)
            self._rebalance_wakeup.clear()
            if self._closing.is_set():
                return
            with self._lock:
                consumers = list(self._consumers.values())
            for c in consumers:
                try:
                    c.do_rebalance()
                except Exception:
                    log.exception("rebalance of group %s failed", c.group)

    def _persist_all_offsets(self) -> None:
        with self._lock:
            consumers = list(self._consumers.values())
        for c in consumers:
            c.persist_offsets()


os.register_at_fork(after_in_child=ClientInstance._after_fork_in_child)
# Registered after rocketpy._native's own hook, so it runs first (atexit is last-in,
# first-out) while native threads may still call into Python.
atexit.register(ClientInstance._close_all_at_exit)
