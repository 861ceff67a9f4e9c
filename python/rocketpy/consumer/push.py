"""``PushConsumer``: pulls with long polling, hands messages to a listener on a thread pool,
commits the smallest offset still in flight, and shares queues with the rest of its group.

Threads: the rebalance service (client instance) assigns queues; pulls are asynchronous and
their completions run on the native callback thread; delayed pulls run on this consumer's
scheduler; listeners run on the consume pool.
"""

from __future__ import annotations

import enum
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from rocketpy._native import MessageExt, RemotingResponse, decode_messages, java_string_hash
from rocketpy.client.instance import ClientConfig, ClientInstance, check
from rocketpy.client.scheduler import Scheduler
from rocketpy.consumer.allocate import AllocateStrategy, allocate_averagely
from rocketpy.consumer.offset_store import NOT_FOUND, UNKNOWN, RemoteOffsetStore
from rocketpy.consumer.process_queue import ProcessQueue
from rocketpy.errors import ClientError
from rocketpy.message import MessageQueue
from rocketpy.protocol import Property as P
from rocketpy.protocol import PullSysFlag, RequestCode, ResponseCode, retry_topic
from rocketpy.validate import check_group, check_topic

log = logging.getLogger("rocketpy.consumer")


class ConsumeStatus(enum.Enum):
    """What a listener returns (RocketMQ's ``ConsumeConcurrentlyStatus``)."""

    #: The messages are done; their offsets may be committed.
    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    #: Deliver the messages again later.
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeFromWhere(enum.Enum):
    """Where a group with no committed offset starts (the broker may still answer 0 for a
    young queue whose first message is in memory, as RocketMQ does)."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"


#: ``listener(messages) -> ConsumeStatus`` (``None`` counts as success; an exception as
#: RECONSUME_LATER).
MessageListener = Callable[[list[MessageExt]], "ConsumeStatus | None"]


@dataclass
class _Subscription:
    topic: str
    expression: str
    tags: frozenset[str]
    version: int

    def data(self) -> dict[str, Any]:
        tags = sorted(self.tags)
        return {
            "classFilterMode": False,
            "topic": self.topic,
            "subString": self.expression,
            "tagsSet": tags,
            "codeSet": [java_string_hash(t) for t in tags],
            "subVersion": self.version,
            "expressionType": "TAG",
        }


def _parse_expression(topic: str, expression: str | None) -> _Subscription:
    expr = (expression or "*").strip() or "*"
    tags = (
        frozenset() if expr == "*" else frozenset(t.strip() for t in expr.split("||") if t.strip())
    )
    return _Subscription(topic, expr, tags, time.time_ns() // 1_000_000)


@dataclass
class _PullRequest:
    mq: MessageQueue
    pq: ProcessQueue
    next_offset: int


class PushConsumer:
    """A clustering consumer: the queues of each subscribed topic are shared among the live
    members of the group, and consumed offsets are committed to the brokers.

    Args:
        group: the consumer group.
        namesrv_addr: name servers, ``host:port`` separated by ``;``.
        consume_from_where: where a group with no committed offset starts.
        consume_thread_max: listener threads.
        consume_message_batch_max_size: most messages handed to one listener call.
        pull_batch_size: most messages asked per pull.
        max_reconsume_times: deliveries of a failing message before it goes to the DLQ.
        pull_threshold_for_queue: pulls of a queue pause while this many messages wait.
        pull_threshold_size_for_queue_mib: ... or this many MiB of bodies.
        consume_concurrently_max_span: ... or the offsets in flight span more than this.
        allocate_strategy: how queues are shared (default: averagely).
        instance_name: see :class:`rocketpy.client.instance.ClientConfig`.
        client_config: full client settings (intervals), instead of ``namesrv_addr``.

    Example::

        consumer = PushConsumer("my-group", "127.0.0.1:9876")
        consumer.subscribe("TopicTest", "*")
        consumer.register_listener(lambda msgs: ConsumeStatus.CONSUME_SUCCESS)
        consumer.start()
    """

    def __init__(
        self,
        group: str,
        namesrv_addr: str = "",
        *,
        consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        consume_thread_max: int = 20,
        consume_message_batch_max_size: int = 1,
        pull_batch_size: int = 32,
        max_reconsume_times: int = 16,
        pull_threshold_for_queue: int = 1000,
        pull_threshold_size_for_queue_mib: int = 100,
        consume_concurrently_max_span: int = 2000,
        allocate_strategy: AllocateStrategy = allocate_averagely,
        instance_name: str | None = None,
        client_config: ClientConfig | None = None,
    ) -> None:
        check_group(group)
        self.group = group
        self.consume_from_where = consume_from_where
        self.consume_message_batch_max_size = max(1, consume_message_batch_max_size)
        self.pull_batch_size = pull_batch_size
        self.max_reconsume_times = max_reconsume_times
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.pull_threshold_size_for_queue = pull_threshold_size_for_queue_mib * 1024 * 1024
        self.consume_concurrently_max_span = consume_concurrently_max_span
        self.allocate_strategy = allocate_strategy
        self._consume_threads = consume_thread_max
        self._config = client_config or ClientConfig(namesrv_addr, instance_name=instance_name)
        self._subscriptions: dict[str, _Subscription] = {}
        self._topic_queues: dict[str, list[MessageQueue]] = {}
        self._table: dict[MessageQueue, ProcessQueue] = {}
        self._lock = threading.RLock()
        self._rebalance_lock = threading.Lock()
        self._listener: MessageListener | None = None
        self._instance: ClientInstance | None = None
        self._offsets: RemoteOffsetStore | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._scheduler: Scheduler | None = None
        self._running = False

    # -- configuration ------------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str = "*") -> None:
        """Subscribes to ``topic``; ``expression`` is ``*`` or tags like ``TagA || TagB``."""
        check_topic(topic)
        with self._lock:
            self._subscriptions[topic] = _parse_expression(topic, expression)
        if self._instance is not None:
            self._instance.update_route(topic)
            self._instance.send_heartbeat()
            self._instance.rebalance_now()

    def unsubscribe(self, topic: str) -> None:
        """Stops consuming ``topic``."""
        with self._lock:
            self._subscriptions.pop(topic, None)

    def register_listener(self, listener: MessageListener) -> None:
        """Sets the function called with each batch of messages."""
        self._listener = listener

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Joins the group and starts consuming."""
        if self._running:
            raise ClientError("consumer already started")
        if self._listener is None:
            raise ClientError("register a listener before start()")
        if not self._subscriptions:
            raise ClientError("subscribe to at least one topic before start()")
        retry = retry_topic(self.group)
        with self._lock:
            self._subscriptions.setdefault(retry, _parse_expression(retry, "*"))
        inst = ClientInstance.acquire(self._config, self.group, "consumer")
        self._instance = inst
        self._offsets = RemoteOffsetStore(inst, self.group)
        self._pool = ThreadPoolExecutor(
            self._consume_threads, thread_name_prefix=f"rocketpy-consume-{self.group}"
        )
        self._scheduler = Scheduler(f"rocketpy-pull-{self.group}")
        self._running = True
        try:
            inst.register_consumer(self)
            for topic in self.subscribed_topics():
                try:
                    inst.update_route(topic)
                except Exception as e:
                    log.warning("route of %s not available yet: %s", topic, e)
            inst.send_heartbeat()
        except Exception:
            self._running = False
            inst.release()
            raise
        inst.rebalance_now()

    def shutdown(self) -> None:
        """Stops pulling, lets running listeners finish, commits offsets and leaves the group."""
        if not self._running:
            return
        self._running = False
        inst, offsets = self._instance, self._offsets
        assert inst is not None and offsets is not None
        if self._scheduler:
            self._scheduler.stop()
        if self._pool:
            self._pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            queues = dict(self._table)
            self._table.clear()
        for pq in queues.values():
            pq.dropped = True
        offsets.persist_all(set(queues), oneway=False)
        inst.unregister_consumer(self.group)
        inst.release()
        self._instance = None

    def __enter__(self) -> PushConsumer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

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
            "consumeType": "CONSUME_PASSIVELY",
            "messageModel": "CLUSTERING",
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
        if route is None:
            return []
        for b in route.broker_datas:
            addr = inst.broker_addr(b.broker_name)
            if addr is None:
                continue
            try:
                resp = inst.remoting.invoke(
                    addr,
                    RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                    {"consumerGroup": self.group},
                    None,
                    3000,
                )
                body = check(resp, addr).body
                return sorted(json.loads(body).get("consumerIdList") or [])
            except Exception as e:
                log.debug("consumer list from %s failed: %s", addr, e)
        return []

    def _rebalance_topic(self, topic: str) -> None:
        inst = self._instance
        assert inst is not None
        with self._lock:
            mqs = list(self._topic_queues.get(topic, []))
        if not mqs:
            return
        cids = self._consumer_ids(topic)
        if not cids:
            log.debug("no consumer ids for group %s yet", self.group)
            return
        mine = set(self.allocate_strategy(self.group, inst.client_id, mqs, cids))
        new_requests: list[_PullRequest] = []
        with self._lock:
            current = {mq: pq for mq, pq in self._table.items() if mq.topic == topic}
        for mq, pq in current.items():
            if mq not in mine:
                pq.dropped = True
                self._release_queue(mq)
        for mq in sorted(mine - set(current)):
            offset = self._compute_pull_from_where(mq)
            if offset < 0:
                log.warning("no start offset for %s; will retry at the next rebalance", mq)
                continue
            pq = ProcessQueue()
            with self._lock:
                self._table[mq] = pq
            new_requests.append(_PullRequest(mq, pq, offset))
            log.info("group %s now consumes %s from offset %d", self.group, mq, offset)
        for pr in new_requests:
            self._pull(pr)

    def _release_queue(self, mq: MessageQueue) -> None:
        assert self._offsets is not None
        self._offsets.persist(mq)
        self._offsets.remove(mq)
        with self._lock:
            self._table.pop(mq, None)
        log.info("group %s released %s", self.group, mq)

    def _compute_pull_from_where(self, mq: MessageQueue) -> int:
        assert self._offsets is not None and self._instance is not None
        last = self._offsets.read_store(mq)
        if last >= 0:
            return last
        if last == UNKNOWN:
            return -1
        if self.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
            return 0
        if mq.topic.startswith("%RETRY%"):
            return 0
        return self._max_offset(mq)

    def _max_offset(self, mq: MessageQueue) -> int:
        inst = self._instance
        assert inst is not None
        addr = inst.master_addr(mq.broker_name)
        if addr is None:
            return -1
        resp = inst.remoting.invoke(
            addr,
            RequestCode.GET_MAX_OFFSET,
            {"topic": mq.topic, "queueId": str(mq.queue_id)},
            None,
            3000,
        )
        return int(check(resp, addr).field("offset", "-1") or -1)

    # -- pulling --------------------------------------------------------------------------------

    def _pull_later(self, pr: _PullRequest, delay_s: float) -> None:
        if self._running and self._scheduler is not None:
            self._scheduler.call_later(delay_s, lambda: self._pull(pr))

    def _pull(self, pr: _PullRequest) -> None:
        if not self._running or pr.pq.dropped:
            return
        pq = pr.pq
        pq.last_pull = time.monotonic()
        if pq.count > self.pull_threshold_for_queue or pq.size > self.pull_threshold_size_for_queue:
            self._pull_later(pr, 0.05)
            return
        if pq.span() > self.consume_concurrently_max_span:
            self._pull_later(pr, 0.05)
            return
        with self._lock:
            sub = self._subscriptions.get(pr.mq.topic)
        inst, offsets = self._instance, self._offsets
        if sub is None or inst is None or offsets is None:
            self._pull_later(pr, 3.0)
            return
        addr = inst.master_addr(pr.mq.broker_name)
        if addr is None:
            self._pull_later(pr, 3.0)
            return
        commit_offset = offsets.read_memory(pr.mq)
        sys_flag = PullSysFlag.SUSPEND | PullSysFlag.SUBSCRIPTION
        if commit_offset > 0:
            sys_flag |= PullSysFlag.COMMIT_OFFSET
        fields = {
            "consumerGroup": self.group,
            "topic": pr.mq.topic,
            "queueId": str(pr.mq.queue_id),
            "queueOffset": str(pr.next_offset),
            "maxMsgNums": str(self.pull_batch_size),
            "sysFlag": str(sys_flag),
            "commitOffset": str(max(commit_offset, 0)),
            "suspendTimeoutMillis": "15000",
            "subscription": sub.expression,
            "subVersion": str(sub.version),
            "expressionType": "TAG",
        }

        def done(resp: RemotingResponse | None, err: BaseException | None) -> None:
            self._on_pull(pr, sub, resp, err)

        inst.remoting.invoke_async(addr, RequestCode.PULL_MESSAGE, fields, None, 30_000, done)

    def _on_pull(
        self,
        pr: _PullRequest,
        sub: _Subscription,
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
        next_offset = int(resp.field("nextBeginOffset", str(pr.next_offset)) or pr.next_offset)
        if code == ResponseCode.SUCCESS:
            msgs = decode_messages(resp.body, pr.mq.broker_name)
            if sub.tags:
                msgs = [m for m in msgs if m.tags in sub.tags]
            pr.next_offset = next_offset
            if msgs:
                pr.pq.put(msgs)
                self._submit(msgs, pr)
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
                    self._table.pop(pr.mq, None)
                if self._instance is not None:
                    self._instance.rebalance_now()

            if self._scheduler is not None:
                self._scheduler.call_later(
                    1.0, lambda: threading.Thread(target=reset, daemon=True).start()
                )
        else:
            log.warning("pull of %s answered %s: %s", pr.mq, code, resp.remark)
            self._pull_later(pr, 3.0)

    def _correct_offset(self, pr: _PullRequest) -> None:
        """Nothing in flight: the consumed position is where the next pull starts."""
        if pr.pq.count == 0 and self._offsets is not None:
            self._offsets.update(pr.mq, pr.next_offset)

    # -- consuming ------------------------------------------------------------------------------

    def _submit(self, msgs: Sequence[MessageExt], pr: _PullRequest) -> None:
        pool = self._pool
        if pool is None:
            return
        n = self.consume_message_batch_max_size
        retry = retry_topic(self.group)
        prepared = [
            m.replace(topic=m.get_property(P.RETRY_TOPIC))
            if m.topic == retry and m.get_property(P.RETRY_TOPIC)
            else m
            for m in msgs
        ]
        for i in range(0, len(prepared), n):
            batch = list(prepared[i : i + n])
            try:
                pool.submit(self._consume, batch, pr)
            except RuntimeError:
                return  # the pool is shutting down; the batch stays uncommitted

    def _consume(self, msgs: list[MessageExt], pr: _PullRequest) -> None:
        if pr.pq.dropped:
            return
        listener = self._listener
        assert listener is not None
        try:
            status = listener(msgs)
        except Exception:
            log.exception("listener failed on %d message(s) of %s", len(msgs), pr.mq)
            status = ConsumeStatus.RECONSUME_LATER
        if status is None:
            status = ConsumeStatus.CONSUME_SUCCESS
        done = msgs
        if status is not ConsumeStatus.CONSUME_SUCCESS:
            # RocketMQ's path: send each message back to the broker (it goes to the group's
            # retry topic, or the DLQ after max_reconsume_times); what cannot be sent back is
            # consumed again locally a little later. Either way nothing is lost.
            failed = [m for m in msgs if not self._send_back(m, pr.mq)]
            if failed and self._running and self._scheduler is not None:
                self._scheduler.call_later(5.0, lambda: self._resubmit(failed, pr))
            done = [m for m in msgs if all(m is not f for f in failed)]
        offset = pr.pq.remove(done)
        if offset >= 0 and not pr.pq.dropped and self._offsets is not None:
            self._offsets.update(pr.mq, offset)

    def _send_back(self, msg: MessageExt, mq: MessageQueue) -> bool:
        inst = self._instance
        addr = inst.master_addr(mq.broker_name) if inst is not None else None
        if inst is None or addr is None:
            return False
        fields = {
            "offset": str(msg.commit_log_offset),
            "group": self.group,
            "delayLevel": "0",
            "originMsgId": msg.msg_id,
            "originTopic": msg.topic,
            "unitMode": "false",
            "maxReconsumeTimes": str(self.max_reconsume_times),
        }
        try:
            resp = inst.remoting.invoke(
                addr, RequestCode.CONSUMER_SEND_MSG_BACK, fields, None, 5000
            )
        except Exception as e:
            log.warning("sending %s back failed: %s", msg.msg_id, e)
            return False
        if resp.code != ResponseCode.SUCCESS:
            log.debug("sending %s back refused: %s %s", msg.msg_id, resp.code, resp.remark)
            return False
        return True

    def _resubmit(self, msgs: list[MessageExt], pr: _PullRequest) -> None:
        pool = self._pool
        if pool is None or not self._running or pr.pq.dropped:
            return
        again = [m.replace(reconsume_times=m.reconsume_times + 1) for m in msgs]
        try:
            pool.submit(self._consume, again, pr)
        except RuntimeError:
            return


__all__ = ["NOT_FOUND", "ConsumeFromWhere", "ConsumeStatus", "MessageListener", "PushConsumer"]
