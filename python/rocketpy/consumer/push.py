"""``PushConsumer``: messages are pulled in the background and handed to a listener.

Two consume services, as in RocketMQ:

- concurrent (default): batches go to a thread pool; a failed batch is sent back to the
  broker (retry topic, then DLQ) or, if that fails, consumed again locally; the committed
  offset is the smallest one still in flight;
- orderly (``register_listener(fn, orderly=True)``): each queue is locked on the broker and
  consumed by one thread at a time, in offset order; a failure suspends the queue for a
  moment and retries locally, up to ``max_reconsume_times`` before the DLQ.
"""

from __future__ import annotations

import contextlib
import enum
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from rocketpy._native import MessageExt, RocketpyError
from rocketpy._util import json_body
from rocketpy.consumer.base import ConsumerBase, MessageModel, PullRequest
from rocketpy.consumer.workers import WorkerPool
from rocketpy.errors import ClientError
from rocketpy.message import MessageQueue
from rocketpy.metrics import METRICS
from rocketpy.protocol import RequestCode, ResponseCode

log = logging.getLogger("rocketpy.consumer")


class ConsumeStatus(enum.Enum):
    """What a concurrent listener returns (RocketMQ's ``ConsumeConcurrentlyStatus``)."""

    #: The messages are done; their offsets may be committed.
    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    #: Deliver the messages again later (through the retry topic).
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(enum.Enum):
    """What an orderly listener returns (RocketMQ's ``ConsumeOrderlyStatus``)."""

    SUCCESS = "SUCCESS"
    #: Stop this queue for ``suspend_current_queue_time_ms`` and give the same messages again.
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


#: ``listener(messages) -> status``; ``None`` counts as success and an exception as failure.
#: Anything else that is not a status (``True``, ``"OK"``, a number) counts as failure, as
#: RocketMQ's clients count an unknown status, and is logged as a warning once per listener.
MessageListener = Callable[[list[MessageExt]], Any]

#: How often orderly consumers renew their queue locks (RocketMQ: 20 s).
LOCK_RENEW_INTERVAL_S = 20.0

# Read once per listener call: module constants, not attribute lookups.
_CONSUME_SUCCESS = ConsumeStatus.CONSUME_SUCCESS
_RECONSUME_LATER = ConsumeStatus.RECONSUME_LATER
_monotonic = time.monotonic
#: A listener call this long hands the rest of its pulled batch back to the pool's threads.
SLOW_CALL_S = 0.001


def _call(listener: MessageListener, msgs: list[MessageExt], pr: PullRequest) -> object:
    """The listener's status for ``msgs``; an exception is logged and counts as a failure."""
    try:
        return listener(msgs)
    except Exception:
        log.exception("listener failed on %d message(s) of %s", len(msgs), pr.mq)
        return _RECONSUME_LATER


class PushConsumer(ConsumerBase):
    """A consumer driven by a listener.

    Args:
        group: the consumer group.
        namesrv_addr: name servers, ``host:port`` separated by ``;``. Default: ``$NAMESRV_ADDR``.
        message_model: ``CLUSTERING`` (share queues, offsets on brokers) or ``BROADCASTING``
            (every member gets everything, offsets in a local file).
        consume_from_where: where a group with no committed offset starts.
        consume_timestamp: the start (ms or datetime) for ``CONSUME_FROM_TIMESTAMP``.
        consume_thread_max: listener threads at most. Calls that wait (I/O) spread over
            all of them; while calls are short (under 50 µs: they hold the GIL, which more
            threads cannot share) one thread runs them, a pulled batch at a time.
        consume_message_batch_max_size: most messages per listener call.
        pull_batch_size: most messages asked per pull.
        pull_threshold_for_queue: pulls of a queue pause while this many messages wait...
        pull_threshold_size_for_queue_mib: ... or this many MiB of bodies ...
        consume_concurrently_max_span: ... or the offsets in flight span more than this.
        max_reconsume_times: deliveries before the DLQ (-1: 16 concurrent, unlimited orderly).
        suspend_current_queue_time_ms: pause of an orderly queue after a failure.
        allocate_strategy: how queues are shared (see ``rocketpy.consumer.allocate``).
        offset_store_dir: where broadcasting consumers keep offsets.
        instance_name, client_config: client instance settings.
        tls: connect with TLS (``True``: checking servers against ``tls_ca_file``, else the
            system's CAs; or a :class:`rocketpy.TlsOptions`).
        credentials: the ACL account requests are signed with (``aclEnable`` servers); or
            ``access_key`` / ``secret_key``.

    Example (the name servers from ``$NAMESRV_ADDR``)::

        consumer = PushConsumer("my-group")
        consumer.subscribe("TopicTest", "*")
        consumer.register_listener(lambda msgs: ConsumeStatus.CONSUME_SUCCESS)
        consumer.start()
    """

    def __init__(
        self,
        group: str,
        namesrv_addr: str = "",
        *,
        consume_thread_max: int = 20,
        consume_message_batch_max_size: int = 1,
        consume_concurrently_max_span: int = 2000,
        max_reconsume_times: int = -1,
        suspend_current_queue_time_ms: int = 1000,
        **kwargs: Any,
    ) -> None:
        super().__init__(group, namesrv_addr, **kwargs)
        self.consume_message_batch_max_size = max(1, consume_message_batch_max_size)
        self.consume_concurrently_max_span = consume_concurrently_max_span
        self.max_reconsume_times = max_reconsume_times
        self.suspend_current_queue_time_ms = suspend_current_queue_time_ms
        self._consume_threads = consume_thread_max
        self._listener: MessageListener | None = None
        self._orderly = False
        self._warned_status = False
        self._pool: WorkerPool | None = None

    def register_listener(self, listener: MessageListener, orderly: bool = False) -> None:
        """Sets the function called with each batch of messages; ``orderly=True`` makes it an
        orderly listener (returns :class:`ConsumeOrderlyStatus`). A listener returns a status
        or ``None`` (success); any other value counts as a failure and is logged as a warning
        once per listener."""
        self._listener = listener
        self._orderly = orderly
        self._warned_status = False

    def _check_status(self, listener: MessageListener, status: object) -> None:
        """Warns (once per listener) when ``status`` is not one a listener may return."""
        if status is None or self._warned_status:
            return
        # Either kind: orderly listeners may return ConsumeStatus.CONSUME_SUCCESS too.
        if isinstance(status, (ConsumeStatus, ConsumeOrderlyStatus)):
            return
        self._warned_status = True
        kind = "ConsumeOrderlyStatus" if self._orderly else "ConsumeStatus"
        log.warning(
            "listener %s returned %r, which is not a %s: the messages count as failed and are "
            "consumed again; return %s.%s (or None) for success",
            getattr(listener, "__qualname__", listener),
            status,
            kind,
            kind,
            "SUCCESS" if self._orderly else "CONSUME_SUCCESS",
        )

    @property
    def orderly(self) -> bool:
        """Whether the listener is orderly."""
        return self._orderly

    def _max_reconsume(self) -> int:
        if self.max_reconsume_times >= 0:
            return self.max_reconsume_times
        return 2**31 - 1 if self._orderly else 16

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Joins the group and starts consuming."""
        if self._listener is None:
            raise ClientError("register a listener before start()")
        if not self._subscriptions:
            raise ClientError("subscribe to at least one topic before start()")
        self._pool = WorkerPool(self._consume_threads, f"rocketpy-consume-{self.group}")
        self._start_base()
        if (
            self._orderly
            and self.message_model is MessageModel.CLUSTERING
            and self._scheduler is not None
        ):
            self._scheduler.every(1.0, LOCK_RENEW_INTERVAL_S, self._renew_locks_async)

    def shutdown(self) -> None:
        """Stops pulling, lets running listeners finish, commits offsets and leaves the group."""
        if not self._running or self._forget_if_forked():
            return
        table = self._stop_pulling()
        if self._pool:
            self._pool.shutdown()
        self._leave(table)

    def __enter__(self) -> PushConsumer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # -- hooks of the base -----------------------------------------------------------------------

    def _can_pull(self, pr: PullRequest) -> float:
        wait = super()._can_pull(pr)
        if wait:
            return wait
        if not self._orderly and pr.pq.span() > self.consume_concurrently_max_span:
            return 0.05
        if self._orderly and self.message_model is MessageModel.CLUSTERING and not pr.pq.locked:
            return 3.0
        return 0.0

    def _accept_queue(self, mq: MessageQueue) -> bool:
        if self._orderly and self.message_model is MessageModel.CLUSTERING:
            return mq in self._lock_queues([mq])
        return True

    def _prepare_queue(self, pr: PullRequest) -> None:
        if self._orderly:
            pr.pq.locked = True
            pr.pq.last_lock = time.monotonic()

    def _on_queue_removed(self, mq: MessageQueue, pr: PullRequest) -> None:
        if self._orderly and self.message_model is MessageModel.CLUSTERING:
            # Wait for the listener on this queue (if any) before letting another member lock it.
            with pr.pq.consume_lock:
                pr.pq.locked = False
            self._unlock_queues([mq])

    def _deliver(self, pr: PullRequest, msgs: list[MessageExt]) -> None:
        pool = self._pool
        if pool is None:
            return
        try:
            if self._orderly:
                pool.submit(self._consume_orderly, pr)
            else:
                n = self.consume_message_batch_max_size
                slices = [msgs[i : i + n] for i in range(0, len(msgs), n)]
                if pool.fast and len(slices) > 1:
                    # Short listener calls run on one thread anyway: the pulled batch goes
                    # as one task, its bookkeeping done once (see _consume_run).
                    pool.submit(self._consume_run, slices, pr)
                else:
                    pool.submit_each(self._consume_concurrently, [(m, pr) for m in slices])
        except RuntimeError:
            return  # the pool is shutting down; the messages stay uncommitted

    # -- concurrent consumption ------------------------------------------------------------------

    def _consume_concurrently(self, msgs: list[MessageExt], pr: PullRequest) -> None:
        # Runs once per listener call (per message by default): the success path does only
        # what it must — no status check beyond identity, one offset update.
        pq = pr.pq
        if pq.dropped:
            return
        listener = self._listener
        assert listener is not None
        started = _monotonic()
        status = _call(listener, msgs, pr)
        if status is None or status is _CONSUME_SUCCESS:
            self._note_process(msgs, started, True)
            self._commit(pr, msgs)
            return
        self._failed(listener, msgs, pr, status, started)

    def _consume_run(self, slices: list[list[MessageExt]], pr: PullRequest) -> int:
        """The listener on each slice of one pulled batch, in order, on this thread (the pool
        is in fast mode): messages consumed are removed and their offset recorded once at
        the end. A failed call goes the way of :meth:`_consume_concurrently`'s failures; a
        call slower than :data:`SLOW_CALL_S` hands the slices not yet given to the listener
        back to the pool, one task each, so that other threads can take them while calls
        are slow. Returns the listener calls made (the pool's measure of one call)."""
        pq = pr.pq
        listener = self._listener
        assert listener is not None
        times: list[float] = []
        done: list[MessageExt] = []
        calls = 0
        for msgs in slices:
            if pq.dropped:
                return max(calls, 1)
            started = _monotonic()
            status = _call(listener, msgs, pr)
            calls += 1
            took = _monotonic() - started
            if status is None or status is _CONSUME_SUCCESS:
                done += msgs
                times.append(took)
            else:
                self._failed(listener, msgs, pr, status, started)
            if took > SLOW_CALL_S and calls < len(slices):
                pool = self._pool
                if pool is not None:
                    # RuntimeError: shutting down, the rest stays uncommitted.
                    with contextlib.suppress(RuntimeError):
                        pool.submit_each(
                            self._consume_concurrently, [(m, pr) for m in slices[calls:]]
                        )
                break
        if done:
            if METRICS is not None:
                METRICS.record_processes(
                    done[0].topic, self.group, self.client_id, times, True, len(done)
                )
            self._commit(pr, done)
        return calls

    def _failed(
        self,
        listener: MessageListener,
        msgs: list[MessageExt],
        pr: PullRequest,
        status: object,
        started: float,
    ) -> None:
        """A listener call failed (or returned something that is not a status)."""
        self._check_status(listener, status)
        self._note_process(msgs, started, False)
        done = msgs
        if self.message_model is MessageModel.BROADCASTING:
            log.warning(
                "broadcasting: %d message(s) of %s failed and are dropped", len(msgs), pr.mq
            )
        else:
            # Send each back to the broker (retry topic, or the DLQ after
            # max_reconsume_times); what cannot be sent back is consumed again locally.
            failed = [m for m in msgs if not self._send_back(m, pr.mq, 0)]
            if failed and self._running and self._scheduler is not None:
                self._scheduler.call_later(5.0, lambda: self._resubmit(failed, pr))
            done = [m for m in msgs if all(m is not f for f in failed)]
        self._commit(pr, done)

    def _commit(self, pr: PullRequest, msgs: list[MessageExt]) -> None:
        """``msgs`` are consumed: out of the process queue, and the queue's offset to commit
        (the smallest still in flight) recorded."""
        offset = pr.pq.remove(msgs)
        if offset >= 0 and not pr.pq.dropped and self._offsets is not None:
            self._offsets.update(pr.mq, offset)
        self._gate.wake(pr)  # room in the queue's buffer: its held pull goes now

    def _note_process(self, msgs: list[MessageExt], started: float, ok: bool) -> None:
        """A listener call ended: the client metrics' process time."""
        if METRICS is not None and msgs:
            elapsed = _monotonic() - started
            METRICS.record_process(
                msgs[0].topic, self.group, self.client_id, elapsed, ok, len(msgs)
            )

    def _resubmit(self, msgs: list[MessageExt], pr: PullRequest) -> None:
        pool = self._pool
        if pool is None or not self._running or pr.pq.dropped:
            return
        again = [m.replace(reconsume_times=m.reconsume_times + 1) for m in msgs]
        try:
            pool.submit(self._consume_concurrently, again, pr)
        except RuntimeError:
            return

    def _send_back(self, msg: MessageExt, mq: MessageQueue, delay_level: int) -> bool:
        """CONSUMER_SEND_MSG_BACK (``delay_level`` -1 sends straight to the DLQ)."""
        inst = self._instance
        addr = inst.master_addr(mq.broker_name) if inst is not None else None
        if inst is None or addr is None:
            return False
        header = dict(
            offset=msg.commit_log_offset,
            group=self.group,
            delay_level=delay_level,
            origin_msg_id=msg.msg_id,
            origin_topic=msg.topic,
            unit_mode=False,
            max_reconsume_times=self._max_reconsume(),
        )
        try:
            resp = inst.remoting.invoke(
                addr, RequestCode.CONSUMER_SEND_MSG_BACK, header, None, 5000
            )
        except Exception as e:
            log.warning("sending %s back failed: %s", msg.msg_id, e)
            return False
        if resp.code != ResponseCode.SUCCESS:
            log.debug("sending %s back refused: %s %s", msg.msg_id, resp.code, resp.remark)
            return False
        return True

    # -- orderly consumption -------------------------------------------------------------------

    def _consume_orderly(self, pr: PullRequest) -> None:
        pq = pr.pq
        # One thread per queue: a second request finds the lock taken and leaves the messages
        # to the thread already looping over this queue.
        if not pq.consume_lock.acquire(blocking=False):
            return
        suspended = False
        try:
            listener = self._listener
            assert listener is not None
            clustering = self.message_model is MessageModel.CLUSTERING
            while self._running and not pq.dropped:
                if clustering and (not pq.locked or pq.lock_expired()):
                    suspended = True  # lock renewal will confirm the queue; try again soon
                    break
                msgs = pq.take(self.consume_message_batch_max_size)
                if not msgs:
                    break
                started = time.monotonic()
                try:
                    status = listener(msgs)
                except Exception:
                    log.exception(
                        "orderly listener failed on %d message(s) of %s", len(msgs), pr.mq
                    )
                    status = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                self._check_status(listener, status)
                ok = status in (None, ConsumeOrderlyStatus.SUCCESS, ConsumeStatus.CONSUME_SUCCESS)
                self._note_process(msgs, started, ok)
                if ok:
                    self._commit_orderly(pr)
                    continue
                if self._give_up_orderly(msgs, pr):
                    self._commit_orderly(pr)
                    continue
                pq.consume_again([m.replace(reconsume_times=m.reconsume_times + 1) for m in msgs])
                suspended = True
                break
        finally:
            pq.consume_lock.release()
        if not suspended and pq.pending and self._running and not pq.dropped:
            # Delivered while this thread was leaving: its own request found the lock taken.
            self._resubmit_orderly(pr)
        elif suspended and self._running and not pq.dropped and self._scheduler is not None:
            delay = self.suspend_current_queue_time_ms / 1000
            self._scheduler.call_later(delay, lambda: self._resubmit_orderly(pr))

    def _resubmit_orderly(self, pr: PullRequest) -> None:
        if self._pool is not None and self._running and not pr.pq.dropped:
            try:
                self._pool.submit(self._consume_orderly, pr)
            except RuntimeError:
                return

    def _commit_orderly(self, pr: PullRequest) -> None:
        offset = pr.pq.commit()
        if offset >= 0 and self._offsets is not None:
            self._offsets.update(pr.mq, offset)
        self._gate.wake(pr)

    def _give_up_orderly(self, msgs: list[MessageExt], pr: PullRequest) -> bool:
        """After max_reconsume_times the messages go to the DLQ (if the broker takes them)."""
        if any(m.reconsume_times < self._max_reconsume() for m in msgs):
            return False
        if self.message_model is MessageModel.BROADCASTING:
            log.warning(
                "broadcasting: dropping %d message(s) of %s after their last retry",
                len(msgs),
                pr.mq,
            )
            return True
        return all(self._send_back(m, pr.mq, -1) for m in msgs)

    # -- queue locks ---------------------------------------------------------------------------

    def _lock_request(self, code: int, mqs: list[MessageQueue]) -> dict[str, list[MessageQueue]]:
        """Sends LOCK/UNLOCK_BATCH_MQ per broker; returns the locked queues per broker."""
        inst = self._instance
        out: dict[str, list[MessageQueue]] = {}
        if inst is None:
            return out
        by_broker: dict[str, list[MessageQueue]] = {}
        for mq in mqs:
            by_broker.setdefault(mq.broker_name, []).append(mq)
        for broker, group_mqs in by_broker.items():
            addr = inst.master_addr(broker)
            if addr is None:
                continue
            body = json.dumps(
                {
                    "consumerGroup": self.group,
                    "clientId": inst.client_id,
                    # Written as the Java client writes it; rocketmq-rust's broker needs it.
                    "onlyThisBroker": False,
                    "mqSet": [
                        {"topic": m.topic, "brokerName": m.broker_name, "queueId": m.queue_id}
                        for m in group_mqs
                    ],
                }
            ).encode()
            try:
                resp = inst.remoting.invoke(addr, code, None, body, 3000)
            except Exception as e:
                log.warning("queue lock request to %s failed: %s", addr, e)
                continue
            if resp.code == ResponseCode.SUCCESS and code == RequestCode.LOCK_BATCH_MQ:
                try:
                    ok = json_body(resp.body, "LOCK_BATCH_MQ").get("lockOKMQSet") or []
                    out[broker] = [
                        MessageQueue(m["topic"], m["brokerName"], int(m["queueId"])) for m in ok
                    ]
                except (RocketpyError, KeyError, TypeError, ValueError) as e:
                    log.warning("queue lock answer of %s is unreadable: %s", addr, e)
        return out

    def _lock_queues(self, mqs: list[MessageQueue]) -> set[MessageQueue]:
        return {
            mq
            for locked in self._lock_request(RequestCode.LOCK_BATCH_MQ, mqs).values()
            for mq in locked
        }

    def _unlock_queues(self, mqs: list[MessageQueue]) -> None:
        self._lock_request(RequestCode.UNLOCK_BATCH_MQ, mqs)

    def _renew_locks_async(self) -> None:
        # The scheduler thread must not block on the network.
        if self._pool is not None and self._running:
            try:
                self._pool.submit(self._renew_locks)
            except RuntimeError:
                return

    def _renew_locks(self) -> None:
        with self._lock:
            table = dict(self._table)
        if not table:
            return
        locked = self._lock_queues(list(table))
        now = time.monotonic()
        for mq, pr in table.items():
            if mq in locked:
                pr.pq.locked = True
                pr.pq.last_lock = now
            else:
                log.warning("lost the lock of %s", mq)
                pr.pq.locked = False
