"""What push and lite-pull consumers share: subscriptions, queue assignment (rebalance or
explicit), asynchronous pulls with long polling and flow control, and offset stores.

Threads: the client instance's rebalance service calls :meth:`ConsumerBase.do_rebalance`;
pull completions run on the native callback thread; delayed pulls run on this consumer's
scheduler. Subclasses decide what happens to pulled messages (:meth:`_deliver`) and may veto
queues (:meth:`_accept_queue`, orderly consumers lock them first)."""

from __future__ import annotations

import abc
import dataclasses
import datetime as dt
import logging
import threading
import time
from pathlib import Path
from typing import Any

from rocketpy._native import MessageExt, RemotingResponse
from rocketpy._util import json_body, now_millis
from rocketpy.client.instance import ClientConfig, ClientInstance, check
from rocketpy.client.route import subscribe_queues
from rocketpy.client.scheduler import Scheduler
from rocketpy.consumer.allocate import AllocateStrategy, allocate_averagely
from rocketpy.consumer.broker_check import check_in_brokers, check_subscription, route_or_warn
from rocketpy.consumer.flow import PullGate
from rocketpy.consumer.model import (
    ConsumeFromWhere,
    MessageModel,
    PullRequest,
    Subscription,
    _millis,
)
from rocketpy.consumer.offset_store import (
    UNKNOWN,
    LocalFileOffsetStore,
    OffsetStore,
    RemoteOffsetStore,
    default_local_offset_dir,
)
from rocketpy.consumer.process_queue import ProcessQueue
from rocketpy.credentials import SessionCredentials, credentials_of
from rocketpy.errors import ClientError
from rocketpy.message import MessageQueue
from rocketpy.metrics import METRICS, lag_of
from rocketpy.protocol import Property as P
from rocketpy.protocol import PullSysFlag, RequestCode, ResponseCode, retry_topic
from rocketpy.selector import MessageSelector
from rocketpy.tls import TlsOptions, tls_of
from rocketpy.validate import check_group, check_topic

log = logging.getLogger("rocketpy.consumer")

__all__ = ["ConsumeFromWhere", "ConsumerBase", "MessageModel", "PullRequest", "Subscription"]


class ConsumerBase(abc.ABC):
    """Shared machinery of :class:`PushConsumer` and :class:`LitePullConsumer`."""

    #: ConsumerData.consumeType announced in heartbeats.
    consume_type = "CONSUME_PASSIVELY"

    def __init__(
        self,
        group: str,
        namesrv_addr: str = "",
        *,
        message_model: MessageModel = MessageModel.CLUSTERING,
        consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        consume_timestamp: dt.datetime | int | None = None,
        allocate_strategy: AllocateStrategy = allocate_averagely,
        pull_batch_size: int = 32,
        pull_threshold_for_queue: int = 1000,
        pull_threshold_size_for_queue_mib: int = 100,
        offset_store_dir: str | Path | None = None,
        instance_name: str | None = None,
        client_config: ClientConfig | None = None,
        credentials: SessionCredentials | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        tls: bool | TlsOptions = False,
        tls_ca_file: str | None = None,
    ) -> None:
        check_group(group)
        self.group = group
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.consume_timestamp = (
            _millis(consume_timestamp)
            if consume_timestamp is not None
            else now_millis() - 30 * 60 * 1000
        )
        self.allocate_strategy = allocate_strategy
        self.pull_batch_size = pull_batch_size
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.pull_threshold_size_for_queue = pull_threshold_size_for_queue_mib * 1024 * 1024
        self.offset_store_dir = (
            Path(offset_store_dir) if offset_store_dir else default_local_offset_dir()
        )
        self._config = client_config or ClientConfig(namesrv_addr, instance_name=instance_name)
        account = credentials_of(credentials, access_key, secret_key)
        if account is not None:
            self._config = dataclasses.replace(self._config, credentials=account)
        tls_options = tls_of(tls, tls_ca_file)
        if tls_options is not None:
            self._config = dataclasses.replace(self._config, tls=tls_options)
        self._subscriptions: dict[str, Subscription] = {}
        self._topic_queues: dict[str, list[MessageQueue]] = {}
        self._table: dict[MessageQueue, PullRequest] = {}
        self._lock = threading.RLock()
        self._rebalance_lock = threading.Lock()
        self._instance: ClientInstance | None = None
        self._offsets: OffsetStore | None = None
        self._scheduler: Scheduler | None = None
        self._gate = PullGate(self._pull, self._can_pull)  # see flow.py; woken on consumption
        self._running = False

    # -- configuration ------------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        """Subscribes to ``topic``: ``expression`` is ``*``, tags like ``TagA || TagB``, or a
        :class:`~rocketpy.MessageSelector` (``MessageSelector.by_sql("a > 5")`` filters by
        message properties on brokers with ``enablePropertyFilter=true``).

        Raises:
            ClientError: an invalid topic, a string that cannot be tags (``a > 5``: it would
                match nothing; the message points to ``by_sql``), an SQL92 filter that fails.
            TypeError: a callback in place of the expression (use ``register_listener``).
        """
        check_topic(topic)
        sub = Subscription.parse(topic, expression)
        inst = self._instance
        later = self._scheduler.call_later if self._scheduler is not None else None
        route = check_subscription(inst, self.group, sub, later) if inst is not None else None
        with self._lock:
            self._subscriptions[topic] = sub
        if inst is not None:
            if route is not None:
                self.update_subscribe_queues(topic, subscribe_queues(topic, route))
            inst.send_heartbeat()
            inst.rebalance_now()

    def unsubscribe(self, topic: str) -> None:
        """Stops consuming ``topic``."""
        with self._lock:
            self._subscriptions.pop(topic, None)
        if self._instance is not None:
            self._instance.rebalance_now()

    # -- lifecycle ----------------------------------------------------------------------------

    def _start_base(self) -> None:
        if self._running:
            raise ClientError("consumer already started")
        if self.message_model is MessageModel.CLUSTERING and self._subscriptions:
            retry = retry_topic(self.group)
            with self._lock:
                self._subscriptions.setdefault(retry, Subscription.parse(retry, "*"))
        inst = ClientInstance.acquire(self._config, self.group, "consumer")
        self._instance = inst
        if self.message_model is MessageModel.BROADCASTING:
            self._offsets = LocalFileOffsetStore(self.offset_store_dir, inst.client_id, self.group)
        else:
            self._offsets = RemoteOffsetStore(inst, self.group)
        self._scheduler = Scheduler(f"rocketpy-pull-{self.group}")
        self._running = True
        try:
            inst.register_consumer(self)
            for topic in self.subscribed_topics():
                try:
                    route_or_warn(inst, topic, self._scheduler.call_later)
                except Exception as e:
                    log.warning("route of %s not available yet: %s", topic, e)
                with self._lock:
                    sub = self._subscriptions.get(topic)
                if sub is not None:
                    check_in_brokers(inst, self.group, sub)
            inst.send_heartbeat()
        except Exception:
            self._running = False
            self._scheduler.stop()
            inst.release()
            raise
        inst.rebalance_now()
        if METRICS is not None:
            METRICS.track(self)

    @property
    def client_id(self) -> str:
        """The client id announced in heartbeats (``ip@instance``); empty before start."""
        inst = self._instance
        return inst.client_id if inst is not None else ""

    def queue_lags(self) -> list[tuple[MessageQueue, int]]:
        """Per assigned queue, messages not consumed yet: the broker's max offset at the last
        pull, minus the next offset to pull, plus messages held (the consume-lag metric)."""
        with self._lock:
            held = list(self._table.items())
        return [
            (mq, lag_of(pr.broker_max, pr.next_offset, pr.pq.count))
            for mq, pr in held
            if not pr.pq.dropped
        ]

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Stops consuming, commits offsets and leaves the group."""

    def _forget_if_forked(self) -> bool:
        """In a child process after ``os.fork()`` a started consumer belongs to the parent:
        forget it (no network, no threads here) and say so."""
        inst = self._instance
        if inst is None or not inst.forked():
            return False
        self._running = False
        self._instance = None
        return True

    def _check_process(self) -> None:
        inst = self._instance
        if inst is not None:
            inst.check_process("consumer")

    def _stop_pulling(self) -> dict[MessageQueue, PullRequest]:
        """First half of a shutdown: no more pulls; returns the table (still intact)."""
        self._running = False
        if self._scheduler:
            self._scheduler.stop()
        with self._lock:
            return dict(self._table)

    def _leave(self, table: dict[MessageQueue, PullRequest]) -> None:
        """Second half: drop the queues, commit offsets, leave the group."""
        if METRICS is not None:
            METRICS.untrack(self)
        inst, offsets = self._instance, self._offsets
        for pr in table.values():
            pr.pq.dropped = True
        for mq, pr in table.items():
            self._on_queue_removed(mq, pr)
        with self._lock:
            self._table.clear()
        if offsets is not None:
            offsets.persist_all(set(table), oneway=False, final=True)
        if inst is not None:
            inst.unregister_consumer(self.group)
            inst.release()
        self._instance = None

    # -- ClientInstance callbacks -------------------------------------------------------------

    def subscribed_topics(self) -> set[str]:
        """Topics consumed, the retry topic included."""
        with self._lock:
            return set(self._subscriptions)

    def consumer_data(self) -> dict[str, Any]:
        """This group's ConsumerData for heartbeats."""
        with self._lock:
            subs = [s.data() for s in self._subscriptions.values()]
        return {
            "groupName": self.group,
            "consumeType": self.consume_type,
            "messageModel": self.message_model.value,
            "consumeFromWhere": self.consume_from_where.value,
            "subscriptionDataSet": subs,
            "unitMode": False,
        }

    def update_subscribe_queues(self, topic: str, queues: list[MessageQueue]) -> None:
        """Takes the readable queues of a refreshed route."""
        with self._lock:
            self._topic_queues[topic] = sorted(queues)

    def persist_offsets(self) -> None:
        """Commits the offsets of the queues held."""
        if self._offsets is not None and self._running:
            with self._lock:
                mqs = set(self._table)
            self._offsets.persist_all(mqs)

    def assigned_queues(self) -> list[MessageQueue]:
        """The queues this member consumes now."""
        with self._lock:
            return sorted(self._table)

    # -- rebalance ------------------------------------------------------------------------------

    def do_rebalance(self) -> None:
        """Recomputes this member's queues for every subscribed topic."""
        if not self._running:
            return
        with self._rebalance_lock:
            for topic in self.subscribed_topics():
                try:
                    self._rebalance_topic(topic)
                except Exception as e:
                    log.warning("rebalance of %s for group %s failed: %s", topic, self.group, e)

    def _consumer_ids(self, topic: str) -> list[str]:
        inst = self._instance
        assert inst is not None
        route = inst.route(topic)
        for b in route.broker_datas if route else ():
            addr = inst.broker_addr(b.broker_name)
            if addr is None:
                continue
            try:
                resp = inst.remoting.invoke(
                    addr,
                    RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                    dict(consumer_group=self.group),
                    None,
                    3000,
                )
                body = json_body(check(resp, addr).body, "GET_CONSUMER_LIST_BY_GROUP")
                return sorted(str(c) for c in body.get("consumerIdList") or [])
            except Exception as e:
                log.debug("consumer list from %s failed: %s", addr, e)
        return []

    def _rebalance_topic(self, topic: str) -> None:
        inst = self._instance
        assert inst is not None
        with self._lock:
            mqs = list(self._topic_queues.get(topic, []))
        if self.message_model is MessageModel.BROADCASTING:
            mine = set(mqs)
        else:
            if not mqs:
                return
            cids = self._consumer_ids(topic)
            if not cids:
                log.debug("no consumer ids for group %s yet", self.group)
                return
            mine = set(self.allocate_strategy(self.group, inst.client_id, mqs, cids))
        self._update_queues(topic, mine)

    def _update_queues(self, topic: str, mine: set[MessageQueue]) -> None:
        """Drops queues of `topic` not in `mine` and starts pulling the new ones."""
        with self._lock:
            current = {mq: pr for mq, pr in self._table.items() if mq.topic == topic}
        for mq, pr in current.items():
            if mq not in mine:
                pr.pq.dropped = True
                self._release_queue(mq, pr)
        started = []
        for mq in sorted(mine - set(current)):
            if not self._accept_queue(mq):
                continue
            offset = self._compute_pull_from_where(mq)
            if offset < 0:
                log.warning("no start offset for %s; will retry at the next rebalance", mq)
                continue
            pr = PullRequest(mq, ProcessQueue(), offset)
            self._prepare_queue(pr)
            with self._lock:
                self._table[mq] = pr
            started.append(pr)
            log.info("group %s now consumes %s from offset %d", self.group, mq, offset)
        for pr in started:
            self._pull(pr)

    def _accept_queue(self, mq: MessageQueue) -> bool:
        """Hook: whether to take a newly assigned queue (orderly consumers lock it first)."""
        return True

    def _prepare_queue(self, pr: PullRequest) -> None:  # noqa: B027 (optional hook)
        """Hook: a queue is about to be pulled."""

    def _on_queue_removed(self, mq: MessageQueue, pr: PullRequest) -> None:  # noqa: B027 (optional hook)
        """Hook: a queue was given up (orderly consumers unlock it)."""

    def _release_queue(self, mq: MessageQueue, pr: PullRequest) -> None:
        assert self._offsets is not None
        self._offsets.persist(mq)
        self._offsets.remove(mq)
        with self._lock:
            self._table.pop(mq, None)
        self._on_queue_removed(mq, pr)
        log.info("group %s released %s", self.group, mq)

    def _compute_pull_from_where(self, mq: MessageQueue) -> int:
        assert self._offsets is not None
        last = self._offsets.read_store(mq)
        if last >= 0:
            return last
        if last == UNKNOWN:
            return -1
        if mq.topic.startswith("%RETRY%"):
            return 0
        if self.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
            return 0
        if self.consume_from_where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
            return self.search_offset(mq, self.consume_timestamp)
        return self.max_offset(mq)

    # -- queue queries -------------------------------------------------------------------------

    def _queue_request(
        self, mq: MessageQueue, code: int, extra: dict[str, int] | None = None
    ) -> RemotingResponse:
        inst = self._instance
        if inst is None:
            raise ClientError("consumer not started")
        found = inst.find_broker_in_subscribe(mq.broker_name)
        if found is None:
            inst.update_route(mq.topic)
            found = inst.find_broker_in_subscribe(mq.broker_name)
        if found is None:
            raise ClientError(f"broker {mq.broker_name} has no address in the route")
        addr = found[0]
        header: dict[str, object] = dict(topic=mq.topic, queue_id=mq.queue_id, **(extra or {}))
        return check(inst.remoting.invoke(addr, code, header, None, 3000), addr)

    def _queue_offset(
        self, mq: MessageQueue, code: int, extra: dict[str, int] | None = None
    ) -> int:
        offset = self._queue_request(mq, code, extra).header.offset
        return -1 if offset is None else int(offset)

    def max_offset(self, mq: MessageQueue) -> int:
        """One past the last offset of ``mq``."""
        return self._queue_offset(mq, RequestCode.GET_MAX_OFFSET)

    def min_offset(self, mq: MessageQueue) -> int:
        """The first readable offset of ``mq``."""
        return self._queue_offset(mq, RequestCode.GET_MIN_OFFSET)

    def search_offset(self, mq: MessageQueue, timestamp: dt.datetime | int) -> int:
        """The first offset of ``mq`` stored at or after ``timestamp`` (ms or datetime)."""
        return self._queue_offset(
            mq, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, dict(timestamp=_millis(timestamp))
        )

    # -- pulling --------------------------------------------------------------------------------

    def _pull_later(self, pr: PullRequest, delay_s: float) -> None:
        if self._running and self._scheduler is not None:
            self._scheduler.call_later(delay_s, lambda: self._pull(pr))

    def _can_pull(self, pr: PullRequest) -> float:
        """Hook: 0 to pull now, else seconds to wait (flow control, locks, pauses)."""
        pq = pr.pq
        if pq.count > self.pull_threshold_for_queue or pq.size > self.pull_threshold_size_for_queue:
            return 0.05
        return 0.0

    def _pull(self, pr: PullRequest) -> None:
        if not self._running or pr.pq.dropped:
            return
        pr.pq.last_pull = time.monotonic()
        if (wait := self._can_pull(pr)) > 0:
            self._gate.hold(pr, wait, self._scheduler if self._running else None)
            return
        with self._lock:
            sub = self._subscriptions.get(pr.mq.topic)
        inst, offsets = self._instance, self._offsets
        if inst is None or offsets is None:
            return
        if sub is None:
            sub = Subscription.parse(pr.mq.topic, "*")  # assigned queue of an unsubscribed topic
        # The node the broker suggested last (a slave when this consumer reads far behind),
        # else the master; any member of the group when that one is not in the route.
        found = inst.find_broker_in_subscribe(pr.mq.broker_name, pr.pull_from)
        if found is None:
            self._pull_later(pr, 3.0)
            return
        addr, from_slave = found
        commit_offset = (
            offsets.read_memory(pr.mq) if self.message_model is MessageModel.CLUSTERING else -1
        )
        sys_flag = PullSysFlag.SUSPEND | PullSysFlag.SUBSCRIPTION
        # Offsets are committed with pulls to the master only (a slave's are its master's).
        if commit_offset > 0 and not from_slave:
            sys_flag |= PullSysFlag.COMMIT_OFFSET
        header = dict(
            consumer_group=self.group,
            topic=pr.mq.topic,
            queue_id=pr.mq.queue_id,
            queue_offset=pr.next_offset,
            max_msg_nums=self.pull_batch_size,
            sys_flag=sys_flag,
            commit_offset=max(commit_offset, 0),
            suspend_timeout_millis=15000,
            subscription=sub.expression,
            sub_version=sub.version,
            expression_type=sub.type,
        )

        def done(resp: RemotingResponse | None, err: BaseException | None) -> None:
            try:
                self._on_pull(pr, sub, resp, err)
            except Exception:
                log.exception("handling a pull of %s failed", pr.mq)
                self._pull_later(pr, 3.0)

        inst.remoting.invoke_async(addr, RequestCode.PULL_MESSAGE, header, None, 30_000, done)

    def _on_pull(
        self,
        pr: PullRequest,
        sub: Subscription,
        resp: RemotingResponse | None,
        err: BaseException | None,
    ) -> None:
        if not self._running or pr.pq.dropped:
            return
        if resp is None:
            log.warning("pull of %s failed: %s", pr.mq, err)
            self._pull_later(pr, 3.0)
            return
        code = resp.code
        next_begin, broker_max, suggested, msgs = resp.pull_result(pr.mq.broker_name)
        if suggested is not None:
            pr.pull_from = suggested
        next_offset = pr.next_offset if next_begin is None else next_begin
        if broker_max is not None:
            pr.broker_max = broker_max
        if msgs is not None:
            if sub.tags:  # per-message work only when there is something to do
                msgs = [m for m in msgs if sub.matches(m)]
            pr.next_offset = next_offset
            if msgs:
                if pr.mq.topic == retry_topic(self.group):
                    # Listeners see retried messages under their original topic.
                    msgs = [
                        m.replace(topic=m.get_property(P.RETRY_TOPIC))
                        if m.get_property(P.RETRY_TOPIC)
                        else m
                        for m in msgs
                    ]
                pr.pq.put(msgs)
                self._deliver(pr, msgs)
            else:
                self._correct_offset(pr)
            self._pull(pr)
        elif code in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY):
            pr.next_offset = next_offset
            self._correct_offset(pr)
            self._pull(pr)
        elif code == ResponseCode.PULL_OFFSET_MOVED:
            log.warning(
                "offset %d of %s is illegal; moving to %d", pr.next_offset, pr.mq, next_offset
            )
            pr.pq.dropped = True

            def reset() -> None:
                assert self._offsets is not None
                self._offsets.update(pr.mq, next_offset, increase_only=False)
                self._offsets.persist(pr.mq)
                with self._lock:
                    if self._table.get(pr.mq) is pr:
                        del self._table[pr.mq]
                if self._instance is not None:
                    self._instance.rebalance_now()

            if self._scheduler is not None:
                self._scheduler.call_later(
                    1.0, lambda: threading.Thread(target=reset, daemon=True).start()
                )
        else:
            log.warning("pull of %s answered %s: %s", pr.mq, code, resp.remark)
            self._pull_later(pr, 3.0)

    def reset_offsets(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """Moves this member to ``offsets`` (a broker's RESET_CONSUMER_CLIENT_OFFSET, sent by
        mqadmin resetOffsetByTime): the queues of ``topic`` held now are dropped (messages
        pulled but not consumed are not delivered, and their offsets are not committed), the
        new offsets are committed, and a rebalance takes the queues up again from there."""
        if self._offsets is None or not self._running:
            return
        with self._lock:
            held = {mq: pr for mq, pr in self._table.items() if mq.topic == topic}
        for pr in held.values():
            pr.pq.dropped = True
        for mq, offset in offsets.items():
            if mq.topic != topic:
                continue
            self._offsets.update(mq, offset, increase_only=False)
            if mq in held:
                self._offsets.persist(mq)
        with self._lock:
            for mq, pr in held.items():
                if self._table.get(mq) is pr:
                    del self._table[mq]
        for mq, pr in held.items():
            self._on_queue_removed(mq, pr)
        if self._instance is not None:
            self._instance.rebalance_now()

    def _correct_offset(self, pr: PullRequest) -> None:
        """Nothing in flight: the consumed position is where the next pull starts."""
        if pr.pq.count == 0 and self._offsets is not None:
            self._offsets.update(pr.mq, pr.next_offset)

    @abc.abstractmethod
    def _deliver(self, pr: PullRequest, msgs: list[MessageExt]) -> None:
        """Hands freshly pulled messages (already in ``pr.pq``) to consumption."""
