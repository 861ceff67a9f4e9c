"""Test helpers: collecting consumers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rocketpy import (
    ClientConfig,
    ConsumeFromWhere,
    ConsumeStatus,
    MessageExt,
    MessageSelector,
    PushConsumer,
)

if TYPE_CHECKING:
    from rocketpy.admin.controller import ReplicasInfo


class Collector:
    """A listener that records every message it sees."""

    def __init__(self) -> None:
        self.messages: list[MessageExt] = []
        self._cond = threading.Condition()

    def __call__(self, msgs: list[MessageExt]) -> ConsumeStatus:
        with self._cond:
            self.messages.extend(msgs)
            self._cond.notify_all()
        return ConsumeStatus.CONSUME_SUCCESS

    def wait_for(self, n: int, timeout: float = 60) -> list[MessageExt]:
        """Waits until at least ``n`` messages arrived; returns them all."""
        with self._cond:
            self._cond.wait_for(lambda: len(self.messages) >= n, timeout)
            return list(self.messages)


def start_consumer(
    group: str,
    namesrv: str,
    topic: str,
    listener: Callable[[list[MessageExt]], ConsumeStatus],
    expression: str | MessageSelector = "*",
    from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
    **kwargs: object,
) -> PushConsumer:
    """A started consumer."""
    c = PushConsumer(group, namesrv, consume_from_where=from_where, **kwargs)  # type: ignore[arg-type]
    c.subscribe(topic, expression)
    c.register_listener(listener)
    c.start()
    return c


def dlq_size(namesrv: str, group: str) -> int:
    """Messages in ``group``'s dead-letter queue on broker-a (0 while it does not exist)."""
    from rocketpy.admin import Admin
    from rocketpy.message import MessageQueue

    with Admin(namesrv) as admin:
        try:
            return admin.max_offset(MessageQueue(f"%DLQ%{group}", "broker-a", 0))
        except Exception:
            return 0


def wait_until(cond: Callable[[], bool], timeout: float = 30, interval: float = 0.05) -> bool:
    """Polls ``cond`` until true or the timeout passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(interval)
    return cond()


def fast_config(namesrv: str, name: str | None = None) -> ClientConfig:
    """Client settings with short intervals, so rebalances and commits happen within a test;
    a unique instance name keeps test clients from sharing an instance."""
    import uuid

    return ClientConfig(
        namesrv,
        instance_name=name or f"t-{uuid.uuid4().hex[:8]}",
        poll_name_server_interval_ms=1000,
        heartbeat_broker_interval_ms=1000,
        persist_consumer_offset_interval_ms=300,
        rebalance_interval_ms=1000,
    )


def pull_header(group: str, topic: str, queue_id: int, offset: int) -> dict[str, object]:
    """A PULL_MESSAGE header reading up to 32 messages of every tag, without waiting."""
    from rocketpy.protocol import PullSysFlag

    return dict(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=PullSysFlag.SUBSCRIPTION,
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
    )


def pull_bodies(addr: str, topic: str, queues: int) -> set[bytes]:
    """Every message body in queues ``0..queues`` of ``topic`` on the broker at ``addr``, pulled
    over the wire with a bare RemotingClient (no consumer, no name server): what that one broker
    serves, e.g. a slave whose master is gone."""
    from rocketpy._native import RemotingClient
    from rocketpy.protocol import RequestCode, ResponseCode

    client = RemotingClient()
    out: set[bytes] = set()
    try:
        for q in range(queues):
            offset = 0
            while True:
                header = pull_header("ha-check", topic, q, offset)
                resp = client.invoke(addr, RequestCode.PULL_MESSAGE, header, None, 5000)
                if resp.code != ResponseCode.SUCCESS:
                    break
                out.update(m.body for m in resp.decode_messages())
                offset = int(resp.header.next_begin_offset)
    finally:
        client.shutdown()
    return out


def controller_replicas(controller: str, group: str) -> ReplicasInfo | None:
    """``group``'s master and SyncStateSet as the controller at ``controller`` knows them (None:
    not yet, or the controller cannot answer now)."""
    from rocketpy._native import RemotingClient
    from rocketpy.admin.controller import ControllerAdmin
    from rocketpy.errors import RocketpyError

    client = RemotingClient()
    try:
        return ControllerAdmin(client).sync_state_data(controller, [group]).get(group)
    except RocketpyError:
        return None
    finally:
        client.shutdown()
