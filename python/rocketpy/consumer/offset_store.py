"""Consumer offsets kept by the broker (clustering): cached here, committed every few seconds
and at shutdown. Offsets only move forward unless explicitly reset."""

from __future__ import annotations

import logging
import threading

from rocketpy.client.instance import ClientInstance, check
from rocketpy.errors import BrokerResponseError
from rocketpy.message import MessageQueue
from rocketpy.protocol import RequestCode, ResponseCode

log = logging.getLogger("rocketpy.consumer")

#: ``read`` result: the broker has no offset for the queue.
NOT_FOUND = -1
#: ``read`` result: the broker could not be asked.
UNKNOWN = -2


class RemoteOffsetStore:
    """Offsets of one consumer group, stored on the brokers."""

    def __init__(self, instance: ClientInstance, group: str) -> None:
        self._instance = instance
        self._group = group
        self._lock = threading.Lock()
        self._table: dict[MessageQueue, int] = {}

    def update(self, mq: MessageQueue, offset: int, increase_only: bool = True) -> None:
        """Records a new offset to commit."""
        with self._lock:
            old = self._table.get(mq, -1)
            if not increase_only or offset > old:
                self._table[mq] = offset

    def read_memory(self, mq: MessageQueue) -> int:
        """The cached offset, or :data:`NOT_FOUND`."""
        with self._lock:
            return self._table.get(mq, NOT_FOUND)

    def read_store(self, mq: MessageQueue) -> int:
        """The broker's committed offset (cached on success), :data:`NOT_FOUND` or
        :data:`UNKNOWN`."""
        addr = self._addr(mq)
        if addr is None:
            return UNKNOWN
        fields = {"consumerGroup": self._group, "topic": mq.topic, "queueId": str(mq.queue_id)}
        try:
            resp = self._instance.remoting.invoke(
                addr, RequestCode.QUERY_CONSUMER_OFFSET, fields, None, 5000
            )
        except Exception as e:
            log.warning("QUERY_CONSUMER_OFFSET of %s failed: %s", mq, e)
            return UNKNOWN
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return NOT_FOUND
        if resp.code != ResponseCode.SUCCESS:
            log.warning("QUERY_CONSUMER_OFFSET of %s: code %s %s", mq, resp.code, resp.remark)
            return UNKNOWN
        offset = int(resp.field("offset", "-1") or -1)
        self.update(mq, offset, increase_only=False)
        return offset

    def _addr(self, mq: MessageQueue) -> str | None:
        addr = self._instance.master_addr(mq.broker_name)
        if addr is None:
            self._instance.update_route(mq.topic)
            addr = self._instance.master_addr(mq.broker_name)
        return addr

    def persist(self, mq: MessageQueue, oneway: bool = False) -> None:
        """Commits one queue's cached offset to its broker."""
        offset = self.read_memory(mq)
        if offset < 0:
            return
        addr = self._addr(mq)
        if addr is None:
            log.warning("cannot commit offset of %s: broker %s unknown", mq, mq.broker_name)
            return
        fields = {
            "consumerGroup": self._group,
            "topic": mq.topic,
            "queueId": str(mq.queue_id),
            "commitOffset": str(offset),
        }
        try:
            if oneway:
                self._instance.remoting.invoke_oneway(
                    addr, RequestCode.UPDATE_CONSUMER_OFFSET, fields
                )
            else:
                resp = self._instance.remoting.invoke(
                    addr, RequestCode.UPDATE_CONSUMER_OFFSET, fields, None, 5000
                )
                check(resp, addr)
        except (BrokerResponseError, Exception) as e:
            log.warning("commit of offset %d for %s failed: %s", offset, mq, e)

    def persist_all(self, mqs: set[MessageQueue], oneway: bool = True) -> None:
        """Commits the offsets of ``mqs``; forgets cached offsets of other queues."""
        with self._lock:
            for mq in [m for m in self._table if m not in mqs]:
                del self._table[mq]
        for mq in sorted(mqs):
            self.persist(mq, oneway)

    def remove(self, mq: MessageQueue) -> None:
        """Forgets a queue's cached offset."""
        with self._lock:
            self._table.pop(mq, None)
