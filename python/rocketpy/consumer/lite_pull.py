"""``LitePullConsumer``: the application asks for messages with :meth:`poll`.

Queues come from a subscription (shared with the group by rebalance) or from :meth:`assign`.
Background pulls (long polling) fill a buffer; ``poll`` hands out one pulled batch at a time.
A message counts as consumed once ``poll`` returned it; consumed offsets are committed
automatically every ``auto_commit_interval_ms`` (and at shutdown) or by :meth:`commit`.
"""

from __future__ import annotations

import collections
import datetime as dt
import logging
import threading
import time
from collections.abc import Iterable
from typing import Any

from rocketpy._native import MessageExt
from rocketpy.consumer.base import ConsumerBase, PullRequest
from rocketpy.consumer.model import MessageModel, Subscription
from rocketpy.consumer.process_queue import ProcessQueue
from rocketpy.errors import ClientError, RocketpyError
from rocketpy.message import MessageQueue
from rocketpy.protocol import retry_topic
from rocketpy.selector import MessageSelector

log = logging.getLogger("rocketpy.consumer")


class LitePullConsumer(ConsumerBase):
    """A consumer the application polls.

    Args:
        group: the consumer group.
        namesrv_addr: name servers, ``host:port`` separated by ``;``. Default: ``$NAMESRV_ADDR``.
        auto_commit: commit consumed offsets periodically.
        auto_commit_interval_ms: the period.
        pull_threshold_for_all: background pulls pause while this many messages are buffered.
        **kwargs: see :class:`rocketpy.consumer.base.ConsumerBase` (``message_model``,
            ``consume_from_where``, ``pull_batch_size``, ``allocate_strategy``, ...).

    :meth:`subscribe` and :meth:`assign` may come before or after :meth:`start` (as in
    RocketMQ's ``DefaultLitePullConsumer``, whose own example starts, then fetches the queues
    and assigns them), so ``with LitePullConsumer(...) as consumer:`` — which starts it — can
    subscribe inside; :meth:`poll` with neither is refused.

    Example (the name servers from ``$NAMESRV_ADDR``)::

        with LitePullConsumer("my-group") as consumer:
            consumer.subscribe("TopicTest", "*")
            for msg in consumer.poll(timeout_ms=3000):
                print(msg.topic, msg.queue_offset, msg.body)
    """

    consume_type = "CONSUME_ACTIVELY"

    def __init__(
        self,
        group: str,
        namesrv_addr: str = "",
        *,
        auto_commit: bool = True,
        auto_commit_interval_ms: int = 5000,
        pull_threshold_for_all: int = 10_000,
        **kwargs: Any,
    ) -> None:
        super().__init__(group, namesrv_addr, **kwargs)
        self.auto_commit = auto_commit
        self.auto_commit_interval_ms = auto_commit_interval_ms
        self.pull_threshold_for_all = pull_threshold_for_all
        self._ready: collections.deque[tuple[PullRequest, list[MessageExt]]] = collections.deque()
        self._buffered = 0
        self._cond = threading.Condition()
        self._consumed: dict[MessageQueue, int] = {}
        self._paused: set[MessageQueue] = set()
        self._assigned: list[MessageQueue] | None = None
        self._last_commit = time.monotonic()

    # -- assignment ----------------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        """See :meth:`ConsumerBase.subscribe`; before or after :meth:`start`."""
        super().subscribe(topic, expression)
        inst = self._instance
        if not self._running or inst is None:
            return
        topics = [topic]
        if self.message_model is MessageModel.CLUSTERING:
            # Subscribed before start, the group's retry topic joins at start; a consumer
            # started with nothing subscribed gets it with its first topic, so the order of
            # start and subscribe changes nothing.
            retry = retry_topic(self.group)
            with self._lock:
                if retry not in self._subscriptions:
                    self._subscriptions[retry] = Subscription.parse(retry, "*")
                    topics.append(retry)
        inst.send_heartbeat()  # the broker makes the group's retry topic on it
        # The retry topic's route, now that the broker made it (the base hands `topic`'s
        # route over once the subscription is kept): else its queues wait for the next
        # route refresh (30 s).
        for name in topics[1:]:
            try:
                inst.update_route(name)
            except RocketpyError as e:
                log.warning("route of %s not available yet: %s", name, e)
        inst.rebalance_now()

    def assign(self, mqs: Iterable[MessageQueue]) -> None:
        """Consumes exactly ``mqs`` (no rebalance); replaces any subscription. Before or after
        :meth:`start` (RocketMQ's order: ``start``, :meth:`fetch_message_queues`, ``assign``)."""
        mqs = sorted(set(mqs))
        with self._lock:
            self._assigned = mqs
            self._subscriptions.clear()
        if self._running:
            self._apply_assignment()

    def _apply_assignment(self) -> None:
        assert self._assigned is not None
        by_topic: dict[str, set[MessageQueue]] = {}
        for mq in self._assigned:
            by_topic.setdefault(mq.topic, set()).add(mq)
        for topic in {mq.topic for mq in self.assigned_queues()} - set(by_topic):
            self._update_queues(topic, set())
        for topic, mine in by_topic.items():
            self._update_queues(topic, mine)

    def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of ``topic`` (from its route)."""
        inst = self._instance
        if inst is None:
            raise ClientError("consumer not started")
        inst.update_route(topic)
        from rocketpy.client.route import subscribe_queues

        route = inst.route(topic)
        if route is None:
            raise ClientError(f"topic {topic!r} has no route")
        return sorted(subscribe_queues(topic, route))

    def do_rebalance(self) -> None:
        """Rebalances subscriptions; assigned queues are left alone."""
        if self._assigned is None:
            super().do_rebalance()

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Joins the cluster and starts pulling the subscribed or assigned queues; with none
        yet, pulling starts at the first :meth:`subscribe` or :meth:`assign`."""
        self._start_base()
        if self._assigned is not None:
            self._apply_assignment()

    def shutdown(self) -> None:
        """Stops pulling, commits what ``poll`` returned, and leaves the group."""
        if not self._running or self._forget_if_forked():
            return
        table = self._stop_pulling()
        if self.auto_commit:
            self.commit()
        with self._cond:
            self._ready.clear()
            self._buffered = 0
            self._cond.notify_all()
        self._leave(table)

    def __enter__(self) -> LitePullConsumer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # -- hooks of the base -----------------------------------------------------------------------

    def _can_pull(self, pr: PullRequest) -> float:
        if pr.mq in self._paused:
            return 0.1
        if self._buffered > self.pull_threshold_for_all:
            return 0.05
        return super()._can_pull(pr)

    def _deliver(self, pr: PullRequest, msgs: list[MessageExt]) -> None:
        with self._cond:
            self._ready.append((pr, msgs))
            self._buffered += len(msgs)
            self._cond.notify()

    def _on_queue_removed(self, mq: MessageQueue, pr: PullRequest) -> None:
        with self._cond:
            self._ready = collections.deque(b for b in self._ready if b[0] is not pr)
            self._buffered = sum(len(m) for _, m in self._ready)
        self._consumed.pop(mq, None)

    # -- polling --------------------------------------------------------------------------------

    def poll(self, timeout_ms: int = 5000) -> list[MessageExt]:
        """The next batch of messages (empty after ``timeout_ms`` with none); they count as
        consumed from now on."""
        if not self._running:
            raise ClientError(
                "consumer not started: start() it, or use `with LitePullConsumer(...)`"
            )
        self._check_process()
        if not self._subscriptions and self._assigned is None:
            # Waiting would return nothing however long: say what is missing instead.
            raise ClientError("nothing to poll: subscribe(topic) or assign(queues) first")
        deadline = time.monotonic() + timeout_ms / 1000
        with self._cond:
            while True:
                batch = self._next_batch()
                if batch is not None:
                    break
                left = deadline - time.monotonic()
                if left <= 0 or not self._running:
                    return []
                self._cond.wait(left)
        pr, msgs = batch
        offset = pr.pq.remove(msgs)
        if offset >= 0:
            self._consumed[pr.mq] = offset
        self._gate.wake()  # room in the buffer: held pulls go now, not after their back-off
        if (
            self.auto_commit
            and (time.monotonic() - self._last_commit) * 1000 >= self.auto_commit_interval_ms
        ):
            self.commit()
        return msgs

    def _next_batch(self) -> tuple[PullRequest, list[MessageExt]] | None:
        """Called with the condition held: the first batch of a live, unpaused queue."""
        for i, (pr, msgs) in enumerate(self._ready):
            if pr.pq.dropped:
                continue
            if pr.mq in self._paused:
                continue
            del self._ready[i]
            self._buffered -= len(msgs)
            return pr, msgs
        # Forget batches of dropped queues (seek, rebalance).
        self._ready = collections.deque(b for b in self._ready if not b[0].pq.dropped)
        return None

    # -- offsets --------------------------------------------------------------------------------

    def commit(self, offsets: dict[MessageQueue, int] | None = None) -> None:
        """Commits ``offsets`` (default: what ``poll`` returned so far) to the offset store."""
        store = self._offsets
        if store is None:
            return
        todo = dict(offsets) if offsets is not None else dict(self._consumed)
        for mq, offset in todo.items():
            store.update(mq, offset, increase_only=offsets is None)
        store.persist_all(set(self.assigned_queues()) | set(todo), oneway=False)
        self._last_commit = time.monotonic()

    def committed(self, mq: MessageQueue) -> int:
        """The offset stored for ``mq`` (-1 if none)."""
        if self._offsets is None:
            raise ClientError("consumer not started")
        return self._offsets.read_store(mq)

    def _reset(self, mq: MessageQueue, offset: int) -> None:
        with self._lock:
            old = self._table.get(mq)
        if old is None:
            raise ClientError(f"{mq} is not assigned to this consumer")
        old.pq.dropped = True
        self._on_queue_removed(mq, old)
        assert self._offsets is not None
        self._offsets.update(mq, offset, increase_only=False)
        pr = PullRequest(mq, ProcessQueue(), offset)
        with self._lock:
            self._table[mq] = pr
        self._pull(pr)

    def seek(self, mq: MessageQueue, offset: int) -> None:
        """The next messages of ``mq`` start at ``offset``."""
        lo, hi = self.min_offset(mq), self.max_offset(mq)
        if not lo <= offset <= hi:
            raise ClientError(f"offset {offset} of {mq} outside [{lo}, {hi}]")
        self._reset(mq, offset)

    def seek_to_begin(self, mq: MessageQueue) -> None:
        """Reads ``mq`` from its first message."""
        self._reset(mq, self.min_offset(mq))

    def seek_to_end(self, mq: MessageQueue) -> None:
        """Reads only messages of ``mq`` stored from now on."""
        self._reset(mq, self.max_offset(mq))

    def offset_for_timestamp(self, mq: MessageQueue, timestamp: dt.datetime | int) -> int:
        """The first offset of ``mq`` stored at or after ``timestamp``."""
        return self.search_offset(mq, timestamp)

    def seek_to_timestamp(self, mq: MessageQueue, timestamp: dt.datetime | int) -> None:
        """Reads ``mq`` from the first message stored at or after ``timestamp``."""
        self._reset(mq, self.search_offset(mq, timestamp))

    def pause(self, mqs: Iterable[MessageQueue]) -> None:
        """Stops pulling (and returning) messages of ``mqs``."""
        self._paused |= set(mqs)

    def resume(self, mqs: Iterable[MessageQueue]) -> None:
        """Undoes :meth:`pause`."""
        self._paused -= set(mqs)
        with self._cond:
            self._cond.notify_all()
        self._gate.wake()
