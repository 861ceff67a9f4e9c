"""Consumer offsets: on the brokers for clustering groups ([`RemoteOffsetStore`]), in a local
file for broadcasting consumers ([`LocalFileOffsetStore`]). Both cache offsets in memory,
persist every few seconds and at shutdown, and only move forward unless told otherwise."""

from __future__ import annotations

import abc
import json
import logging
import os
import threading
from pathlib import Path

from rocketpy._util import now_millis
from rocketpy.client.instance import ClientInstance, check
from rocketpy.message import MessageQueue
from rocketpy.protocol import RequestCode, ResponseCode

log = logging.getLogger("rocketpy.consumer")

#: ``read_store`` result: no offset stored for the queue.
NOT_FOUND = -1
#: ``read_store`` result: the store could not be asked.
UNKNOWN = -2


class OffsetStore(abc.ABC):
    """The cache both stores share, and what each adds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._table: dict[MessageQueue, int] = {}

    def update(self, mq: MessageQueue, offset: int, increase_only: bool = True) -> None:
        """Records a new offset to commit."""
        with self._lock:
            if not increase_only or offset > self._table.get(mq, -1):
                self._table[mq] = offset

    def read_memory(self, mq: MessageQueue) -> int:
        """The cached offset, or :data:`NOT_FOUND`."""
        with self._lock:
            return self._table.get(mq, NOT_FOUND)

    def remove(self, mq: MessageQueue) -> None:
        """Forgets a queue."""
        with self._lock:
            self._table.pop(mq, None)

    def snapshot(self) -> dict[MessageQueue, int]:
        with self._lock:
            return dict(self._table)

    @abc.abstractmethod
    def read_store(self, mq: MessageQueue) -> int:
        """The stored offset (cached on success), :data:`NOT_FOUND` or :data:`UNKNOWN`."""

    @abc.abstractmethod
    def persist(self, mq: MessageQueue, oneway: bool = False) -> None:
        """Saves one queue's cached offset."""

    @abc.abstractmethod
    def persist_all(self, mqs: set[MessageQueue], oneway: bool = True, final: bool = False) -> None:
        """Saves the cached offsets of ``mqs``; ``final`` at shutdown: later calls do nothing."""


class RemoteOffsetStore(OffsetStore):
    """Offsets of a clustering group, committed to the brokers."""

    def __init__(self, instance: ClientInstance, group: str) -> None:
        super().__init__()
        self._instance = instance
        self._group = group
        #: Held through a commit round (see persist_all).
        self._persisting = threading.Lock()
        self._closed = False

    def _addr(self, mq: MessageQueue) -> str | None:
        """The master's address, or a slave's while the master is away (RocketMQ's clients
        commit there too; the slave keeps those offsets until the master is back)."""
        found = self._instance.find_broker_in_subscribe(mq.broker_name)
        if found is None:
            self._instance.update_route(mq.topic)
            found = self._instance.find_broker_in_subscribe(mq.broker_name)
        return None if found is None else found[0]

    def read_store(self, mq: MessageQueue) -> int:
        """The broker's committed offset (cached on success), :data:`NOT_FOUND` or
        :data:`UNKNOWN`."""
        addr = self._addr(mq)
        if addr is None:
            return UNKNOWN
        header = dict(consumer_group=self._group, topic=mq.topic, queue_id=mq.queue_id)
        try:
            resp = self._instance.remoting.invoke(
                addr, RequestCode.QUERY_CONSUMER_OFFSET, header, None, 5000
            )
        except Exception as e:
            log.warning("QUERY_CONSUMER_OFFSET of %s failed: %s", mq, e)
            return UNKNOWN
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return NOT_FOUND
        if resp.code != ResponseCode.SUCCESS:
            log.warning("QUERY_CONSUMER_OFFSET of %s: code %s %s", mq, resp.code, resp.remark)
            return UNKNOWN
        answered = resp.header.offset
        offset = -1 if answered is None else int(answered)
        self.update(mq, offset, increase_only=False)
        return offset

    def persist(self, mq: MessageQueue, oneway: bool = False) -> None:
        """Commits one queue's cached offset to its broker."""
        offset = self.read_memory(mq)
        addr = self._addr(mq) if offset >= 0 else None
        if addr is None:
            return
        header = dict(
            consumer_group=self._group, topic=mq.topic, queue_id=mq.queue_id, commit_offset=offset
        )
        try:
            if oneway:
                self._instance.remoting.invoke_oneway(
                    addr, RequestCode.UPDATE_CONSUMER_OFFSET, header
                )
            else:
                check(
                    self._instance.remoting.invoke(
                        addr, RequestCode.UPDATE_CONSUMER_OFFSET, header, None, 5000
                    ),
                    addr,
                )
        except Exception as e:
            log.warning("commit of offset %d for %s failed: %s", offset, mq, e)

    def persist_all(self, mqs: set[MessageQueue], oneway: bool = True, final: bool = False) -> None:
        """Commits the offsets of ``mqs``; forgets cached offsets of other queues.

        One commit round at a time, and none after the ``final`` one (the consumer's
        shutdown): a periodic round that read older offsets must not reach the broker after
        the last commit and move the group's offsets back."""
        with self._persisting:
            if self._closed:
                return
            self._closed = final
            with self._lock:
                for mq in [m for m in self._table if m not in mqs]:
                    del self._table[mq]
            for mq in sorted(mqs):
                self.persist(mq, oneway)


def default_local_offset_dir() -> Path:
    """RocketMQ's ``rocketmq.client.localOffsetStoreDir`` default."""
    return Path(
        os.environ.get("ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR", Path.home() / ".rocketmq_offsets")
    )


class LocalFileOffsetStore(OffsetStore):
    """Offsets of a broadcasting consumer, in ``{dir}/{client_id}/{group}/offsets.json``:
    ``{"offsetTable": [{"topic", "brokerName", "queueId", "offset"}, ...]}``, replaced
    atomically on every persist, the previous version kept as ``offsets.json.bak``.

    A file that cannot be read falls back to its ``.bak`` (as RocketMQ's store reads
    ``offsets.json.bak``), and is renamed aside (``offsets.json.damaged-<ms>``) with an error
    in the log, so that no later write replaces the backup with it."""

    def __init__(self, directory: Path, client_id: str, group: str) -> None:
        super().__init__()
        safe = client_id.replace("@", "_").replace(":", "_").replace("/", "_")
        self.path = directory / safe / group / "offsets.json"
        self._loaded: dict[MessageQueue, int] = {}
        backup = self.path.with_name(self.path.name + ".bak")
        for candidate in (self.path, backup):
            try:
                self._loaded = self._read(candidate)
            except FileNotFoundError:
                continue
            except (ValueError, KeyError, TypeError, RecursionError) as e:
                aside = candidate.with_name(f"{candidate.name}.damaged-{now_millis()}")
                candidate.replace(aside)
                log.error("offset file %s is unreadable (%s); kept as %s", candidate, e, aside)
                continue
            if candidate == backup:
                log.error("offsets of %s loaded from its backup %s", self.path, backup)
            break

    @staticmethod
    def _read(path: Path) -> dict[MessageQueue, int]:
        data = json.loads(path.read_text())
        return {
            MessageQueue(e["topic"], e["brokerName"], int(e["queueId"])): int(e["offset"])
            for e in data.get("offsetTable", [])
        }

    def read_store(self, mq: MessageQueue) -> int:
        """The offset saved in the file, or :data:`NOT_FOUND`."""
        offset = self._loaded.get(mq, NOT_FOUND)
        if offset >= 0:
            self.update(mq, offset, increase_only=False)
        return offset

    def persist(self, mq: MessageQueue, oneway: bool = False) -> None:
        self.persist_all(set(self.snapshot()))

    def persist_all(self, mqs: set[MessageQueue], oneway: bool = True, final: bool = False) -> None:
        """Saves every cached offset (of all queues ever assigned: broadcasting keeps them)."""
        table = {**self._loaded, **self.snapshot()}
        self._loaded = table
        entries = [
            {"topic": m.topic, "brokerName": m.broker_name, "queueId": m.queue_id, "offset": o}
            for m, o in sorted(table.items())
        ]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"offsetTable": entries}, indent=1))
        if self.path.exists():
            os.replace(self.path, self.path.with_name(self.path.name + ".bak"))
        os.replace(tmp, self.path)
