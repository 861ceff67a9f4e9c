"""``TransactionProducer``: RocketMQ's transactional messages. A message is sent as a half
message (stored, invisible to consumers), the local transaction runs, and its outcome commits
the message (consumers then see it once) or rolls it back. When the outcome is unknown, or
lost with a crashed producer, the broker later asks a producer of the same group
(:meth:`TransactionListener.check_local_transaction`) and applies the answer.

Example (a set stands for the application's database)::

    from rocketpy import LocalTransactionState, Message, TransactionProducer

    class Orders:
        def __init__(self):
            self.paid = set()

        def execute_local_transaction(self, msg, order_id):
            self.paid.add(order_id)  # the local transaction
            return LocalTransactionState.COMMIT_MESSAGE

        def check_local_transaction(self, msg):
            found = msg.keys in self.paid
            return LocalTransactionState.COMMIT_MESSAGE if found else LocalTransactionState.UNKNOW

    with TransactionProducer("orders-tx", listener=Orders()) as producer:
        msg = Message("Orders", b"paid", keys="order-42")
        print(producer.send_message_in_transaction(msg, "order-42").local_transaction_state)
"""

from __future__ import annotations

import enum
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from rocketpy._native import Header, MessageExt
from rocketpy.errors import ClientError
from rocketpy.message import Message, SendResult, SendStatus
from rocketpy.producer import Producer
from rocketpy.protocol import AUTO_CREATE_TOPIC_KEY, MessageSysFlag, Property, RequestCode

log = logging.getLogger("rocketpy.transaction")

__all__ = [
    "HalfMessage",
    "LocalTransactionState",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
]


class LocalTransactionState(enum.Enum):
    """The outcome of a local transaction (RocketMQ's spelling, ``UNKNOW`` included)."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"


#: END_TRANSACTION's ``commitOrRollback`` for each state (``MessageSysFlag`` values).
_OUTCOME = {
    LocalTransactionState.COMMIT_MESSAGE: MessageSysFlag.TRANSACTION_COMMIT_TYPE,
    LocalTransactionState.ROLLBACK_MESSAGE: MessageSysFlag.TRANSACTION_ROLLBACK_TYPE,
    LocalTransactionState.UNKNOW: MessageSysFlag.TRANSACTION_NOT_TYPE,
}


class TransactionListener(Protocol):
    """Runs and checks the local transactions of a :class:`TransactionProducer`."""

    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        """Runs the local transaction of ``msg`` (its half message is stored). Raising, or
        returning ``UNKNOW``, leaves the outcome to :meth:`check_local_transaction`."""
        ...

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        """The broker asks for the outcome of ``msg``'s transaction (it had none after the
        broker's ``transactionTimeOut``): answer from the application's own records, which
        must survive a crash of this process. ``UNKNOW`` means ask again later."""
        ...


@dataclass(frozen=True, slots=True)
class HalfMessage:
    """A stored half message, to end with :meth:`TransactionProducer.end_transaction`
    (picklable: it may travel to the process that decides)."""

    broker_addr: str
    queue_offset: int
    offset_msg_id: str
    msg_id: str


@dataclass(frozen=True, slots=True)
class TransactionSendResult(SendResult):
    """A :class:`SendResult` of the half message, with the local transaction's outcome."""

    local_transaction_state: LocalTransactionState = LocalTransactionState.UNKNOW

    @staticmethod
    def of(result: SendResult, state: LocalTransactionState) -> TransactionSendResult:
        """``result`` of a half message, with its transaction's outcome."""
        return TransactionSendResult(
            status=result.status,
            msg_id=result.msg_id,
            offset_msg_id=result.offset_msg_id,
            message_queue=result.message_queue,
            queue_offset=result.queue_offset,
            region_id=result.region_id,
            transaction_id=result.msg_id,
            local_transaction_state=state,
        )


def _state(value: object, what: str) -> LocalTransactionState:
    if isinstance(value, LocalTransactionState):
        return value
    log.error("%s returned %r, not a LocalTransactionState; treated as UNKNOW", what, value)
    return LocalTransactionState.UNKNOW


class TransactionProducer(Producer):
    """A producer whose messages commit or roll back with a local transaction.

    Args:
        group: the producer group. Every producer of the group must be able to answer
            checks for the group's transactions (the broker asks any live one).
        namesrv_addr: name servers, ``host:port`` separated by ``;``. Default: ``$NAMESRV_ADDR``.
        listener: runs and checks local transactions (:class:`TransactionListener`).
        check_thread_pool_max: threads answering the broker's checks.
        check_request_hold_max: checks queued at most; more are dropped (the broker asks
            again at its next round).
        **kwargs: the options of :class:`rocketpy.Producer`.
    """

    def __init__(
        self,
        group: str,
        namesrv_addr: str = "",
        listener: TransactionListener | None = None,
        *,
        check_thread_pool_max: int = 1,
        check_request_hold_max: int = 2000,
        **kwargs: Any,
    ) -> None:
        super().__init__(group, namesrv_addr, **kwargs)
        if listener is None:
            raise ClientError("a TransactionProducer needs a TransactionListener")
        self.listener = listener
        self.check_request_hold_max = check_request_hold_max
        self._check_threads = max(1, check_thread_pool_max)
        self._checks: ThreadPoolExecutor | None = None
        self._queued = 0
        self._queued_lock = threading.Lock()

    def start(self) -> None:
        """Connects to the name servers and starts answering checks."""
        self._checks = ThreadPoolExecutor(self._check_threads, f"rocketpy-tx-check-{self.group}")
        super().start()

    def shutdown(self) -> None:
        """Stops answering checks (queued ones are dropped: the broker asks again), then
        shuts the producer down."""
        super().shutdown()
        pool, self._checks = self._checks, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> TransactionProducer:
        self.start()
        return self

    def topics(self) -> set[str]:
        """The topics sent to, and the auto-creation template: its route names the brokers
        to send heartbeats to, so a producer that has sent nothing yet can answer the
        brokers' checks for its group (RocketMQ's producers do the same)."""
        return super().topics() | {AUTO_CREATE_TOPIC_KEY}

    # -- sending -----------------------------------------------------------------------------

    def send_message_in_transaction(self, msg: Message, arg: Any = None) -> TransactionSendResult:
        """Sends ``msg`` as a half message, runs the listener's
        :meth:`~TransactionListener.execute_local_transaction` with ``arg``, and tells the
        broker its outcome. A failed send rolls back without running the local transaction.

        Raises:
            ClientError: invalid message, no route, or every send attempt failed (nothing
                was stored then, and the local transaction did not run).
        """
        half, result = self._prepare_half(msg)
        if result.status == SendStatus.SEND_OK:
            try:
                state = _state(
                    self.listener.execute_local_transaction(msg, arg), "execute_local_transaction"
                )
            except Exception:
                log.exception("local transaction of %s failed; its check decides", result.msg_id)
                state = LocalTransactionState.UNKNOW
        else:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        if half is not None:
            self.end_transaction(half, state)
        else:
            log.warning("no address of %s: the broker's check decides", result.message_queue)
        return TransactionSendResult.of(result, state)

    def prepare(self, msg: Message) -> HalfMessage:
        """Two-phase use, for a coordinator that decides later (e.g. a Spark job's driver):
        stores ``msg`` as a half message and returns its handle for
        :meth:`end_transaction`. The listener's ``execute_local_transaction`` is not called;
        checks still go to ``check_local_transaction``.

        Raises:
            ClientError: as :meth:`send_message_in_transaction`, or the broker's flush wait
                timed out (the half message may be stored; its check decides).
        """
        half, result = self._prepare_half(msg)
        if half is None or result.status != SendStatus.SEND_OK:
            raise ClientError(f"half message {result.msg_id} not stored surely: {result.status}")
        return half

    def _prepare_half(self, msg: Message) -> tuple[HalfMessage | None, SendResult]:
        # As RocketMQ's producer: a transactional message is never delayed.
        half = Message(msg.topic, msg.body, properties=msg.properties, flag=msg.flag)
        half.delay_level = 0
        half.properties[Property.TRANSACTION_PREPARED] = "true"
        half.properties[Property.PRODUCER_GROUP] = self.group
        prepared = self._prepare(half)
        prepared.header["sys_flag"] = (
            int(prepared.header["sys_flag"]) | MessageSysFlag.TRANSACTION_PREPARED_TYPE  # type: ignore[call-overload]
        )
        result = self._send_sync(prepared, None, None)
        addr = self._client().master_addr(result.message_queue.broker_name)
        if addr is None:
            return None, result
        handle = HalfMessage(addr, result.queue_offset, result.offset_msg_id, result.msg_id)
        return handle, result

    def end_transaction(
        self, half: HalfMessage, state: LocalTransactionState, from_check: bool = False
    ) -> None:
        """Tells the broker the outcome of ``half`` (END_TRANSACTION, oneway as RocketMQ's
        producers send it: a lost one is settled by the broker's check)."""
        header = dict(
            producer_group=self.group,
            tran_state_table_offset=half.queue_offset,
            # The offset message id ends with the half message's CommitLog offset.
            commit_log_offset=int(half.offset_msg_id[-16:], 16),
            commit_or_rollback=_OUTCOME[state],
            from_transaction_check=from_check,
            msg_id=half.msg_id,
            transaction_id=half.msg_id,
        )
        try:
            self._client().remoting.invoke_oneway(
                half.broker_addr, RequestCode.END_TRANSACTION, header
            )
        except Exception as e:
            log.warning("END_TRANSACTION of %s to %s failed: %s", half.msg_id, half.broker_addr, e)

    # -- checks --------------------------------------------------------------------------------

    def check_transaction_state(self, addr: str, header: Header, msg: MessageExt) -> None:
        """Called by the client instance when broker ``addr`` asks about ``msg``'s
        transaction: answered on the check pool."""
        pool = self._checks
        if pool is None:
            return
        with self._queued_lock:
            if self._queued >= self.check_request_hold_max:
                log.warning("%d checks queued; dropping one (the broker asks again)", self._queued)
                return
            self._queued += 1
        try:
            pool.submit(self._answer, addr, header, msg)
        except RuntimeError:  # shut down meanwhile
            with self._queued_lock:
                self._queued -= 1

    def _answer(self, addr: str, header: Header, msg: MessageExt) -> None:
        with self._queued_lock:
            self._queued -= 1
        try:
            state = _state(self.listener.check_local_transaction(msg), "check_local_transaction")
        except Exception:
            log.exception("check_local_transaction of %s failed; asked again later", msg.msg_id)
            state = LocalTransactionState.UNKNOW
        uniq = msg.get_property(Property.UNIQ_KEY) or header.msg_id or ""
        queue_offset = header.tran_state_table_offset
        commit_log_offset = header.commit_log_offset
        if queue_offset is None or commit_log_offset is None:
            log.warning("check without offsets from %s ignored", addr)
            return
        half = HalfMessage(addr, queue_offset, f"{commit_log_offset:016X}", uniq)
        self.end_transaction(half, state, from_check=True)
