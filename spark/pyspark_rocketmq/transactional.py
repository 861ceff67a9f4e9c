"""The transactional sink (``option("transactional", "true")``): a batch write, or each
streaming micro-batch, becomes visible all at once, exactly once.

How:
- every task stores its rows as half messages (invisible to consumers) with a producer of the
  sink's group, and returns their handles and its own attempt id in its commit message;
- the driver's commit first records the decision in the broker — a message on
  ``rocketpy_spark_transactions`` keyed by the write's id, naming the task attempts that
  succeeded — then ends every half message of those attempts with COMMIT; an abort records
  a rollback and ends the handles it has with ROLLBACK;
- half messages nobody ended (a task attempt that failed, an END_TRANSACTION lost, a driver
  that crashed after deciding) are settled by the broker's transaction check, which asks a
  live producer of the group: every task and driver of the sink answers from the recorded
  decision — COMMIT only for a half message of a committed attempt, ROLLBACK for any other
  once a decision exists, UNKNOW (ask again later) before;
- a streaming micro-batch's write id is ``queryId:batchId``; when a restarted query replays a
  batch whose commit was recorded, its tasks send nothing and its commit adds nothing.

Limits: half messages are sent one by one (a few thousand rows a second per task); the
driver holds every handle of a write until it commits; a write decided COMMIT whose driver
crashed before ending its half messages becomes visible when some process of the group is
alive to answer the broker's checks (the next write, or the restarted query) — if none is
within the broker's ``transactionCheckMax`` checks, those half messages are kept aside on
``TRANS_CHECK_MAX_TIME_TOPIC`` instead.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from pyspark.sql.datasource import WriterCommitMessage

from pyspark_rocketmq.access import PLAIN, Access
from rocketpy import (
    LocalTransactionState,
    Message,
    MessageExt,
    Producer,
    TransactionProducer,
)
from rocketpy.admin import Admin
from rocketpy.transaction import HalfMessage

log = logging.getLogger("pyspark_rocketmq.transactional")

#: Where decisions are recorded, one message per write keyed by its id.
DECISIONS_TOPIC = "rocketpy_spark_transactions"
#: Property of every half message: ``writeId attemptId``.
WRITE_PROPERTY = "rocketpy.spark.write"

COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOW = LocalTransactionState.UNKNOW


@dataclass
class HalfMessages(WriterCommitMessage):
    """What one task attempt stored: its half messages, not yet visible."""

    write_id: str
    attempt: str
    halves: list[HalfMessage] = field(default_factory=list)
    #: The write was committed before (a replayed micro-batch): nothing was sent.
    replayed: bool = False


class Decisions:
    """The recorded decisions, read from the broker (cached once found: they never change)."""

    def __init__(self, namesrv: str, access: Access = PLAIN) -> None:
        self.namesrv = namesrv
        self.access = access
        self._found: dict[str, dict[str, object]] = {}
        self._lock = threading.Lock()
        self._admin: Admin | None = None

    def find(self, write_id: str) -> dict[str, object] | None:
        """The decision of ``write_id``: ``{"outcome": "commit"|"rollback", "attempts": [...]}``."""
        with self._lock:
            if write_id in self._found:
                return self._found[write_id]
            if self._admin is None:
                self._admin = Admin(self.namesrv, **self.access.client_kwargs())
            try:
                msgs = self._admin.query_message(DECISIONS_TOPIC, write_id)
            except Exception as e:
                log.debug("decision of %s not readable now: %s", write_id, e)
                return None
        # The first decision recorded wins (a driver records one per write).
        for m in sorted(msgs, key=lambda m: m.store_timestamp):
            if m.keys == write_id:
                decision: dict[str, object] = json.loads(m.body)
                with self._lock:
                    self._found[write_id] = decision
                return decision
        return None

    def close(self) -> None:
        with self._lock:
            if self._admin is not None:
                self._admin.close()
                self._admin = None


class DecisionListener:
    """Answers the broker's checks of the sink's half messages from the recorded decisions."""

    def __init__(self, decisions: Decisions) -> None:
        self.decisions = decisions

    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        return UNKNOW  # never called: the sink only prepares

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        write = (msg.get_property(WRITE_PROPERTY) or "").split(" ")
        if len(write) != 2:
            return UNKNOW
        write_id, attempt = write
        decision = self.decisions.find(write_id)
        if decision is None:
            return UNKNOW
        attempts = decision.get("attempts") or []
        if decision.get("outcome") == "commit" and attempt in attempts:  # type: ignore[operator]
            return COMMIT
        return ROLLBACK


def _producer(group: str, namesrv: str, decisions: Decisions) -> TransactionProducer:
    return TransactionProducer(
        group, namesrv, DecisionListener(decisions), **decisions.access.client_kwargs()
    )


def send_halves(
    group: str,
    namesrv: str,
    write_id: str,
    messages: Iterator[Message],
    access: Access = PLAIN,
) -> HalfMessages:
    """A task: stores every message as a half message; nothing when ``write_id`` was
    committed already (a replayed micro-batch)."""
    decisions = Decisions(namesrv, access)
    attempt = uuid.uuid4().hex
    try:
        previous = decisions.find(write_id)
        if previous is not None and previous.get("outcome") == "commit":
            for _ in messages:
                pass
            return HalfMessages(write_id, attempt, replayed=True)
        out = HalfMessages(write_id, attempt)
        with _producer(group, namesrv, decisions) as producer:
            for m in messages:
                m.properties[WRITE_PROPERTY] = f"{write_id} {attempt}"
                out.halves.append(producer.prepare(m))
        return out
    finally:
        decisions.close()


def decide(
    group: str,
    namesrv: str,
    write_id: str,
    sent: list[HalfMessages],
    outcome: str,
    access: Access = PLAIN,
) -> None:
    """The driver: records the decision, then ends the half messages it knows of."""
    decisions = Decisions(namesrv, access)
    try:
        previous = decisions.find(write_id)
        if previous is not None:
            log.info("write %s was decided before (%s); nothing to do", write_id, previous)
            return
        attempts = sorted({s.attempt for s in sent if not s.replayed})
        record = json.dumps({"outcome": outcome, "attempts": attempts, "at": int(time.time())})
        with Producer(f"{group}-decisions", namesrv, **access.client_kwargs()) as p:
            p.send(Message(DECISIONS_TOPIC, record.encode(), keys=write_id))
        state = COMMIT if outcome == "commit" else ROLLBACK
        with _producer(group, namesrv, decisions) as producer:
            for s in sent:
                for half in s.halves:
                    producer.end_transaction(half, state)
    finally:
        decisions.close()
