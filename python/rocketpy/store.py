"""An embedded message store: rocketpy's Rust store (RocketMQ's CommitLog, ConsumeQueue and
IndexFile formats) used in-process, with no server.

Example::

    from rocketpy.store import MessageStore

    with MessageStore("my-store", flush_disk_type="SYNC_FLUSH") as store:
        r = store.put("Orders", b"order #1", tags="new", keys=["order-1"])
        got = store.get("Orders", queue_id=0, offset=0)
        print(got.messages[0].body)
        print(store.query_by_key("Orders", "order-1"))
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rocketpy._native import EmbeddedStore, MessageExt, encode_properties
from rocketpy._util import now_millis, unique_ids
from rocketpy.message import Message
from rocketpy.protocol import Property

__all__ = ["GetResult", "MessageStore", "PutResult"]


@dataclass(frozen=True, slots=True)
class PutResult:
    """Where a message was stored.

    Attributes:
        status: ``"PUT_OK"``, or ``"FLUSH_DISK_TIMEOUT"`` when a SYNC_FLUSH wait timed out
            (the message is stored all the same).
        msg_id: the client-style unique id (UNIQ_KEY) of the message.
        offset_msg_id: the store's id: store address + CommitLog offset.
        queue_id: the queue (-1 for a delayed message, which waits in the schedule topic).
        queue_offset: the offset in that queue.
        commit_log_offset: the record's position in the CommitLog.
        store_timestamp: when it was stored (ms).
    """

    status: str
    msg_id: str
    offset_msg_id: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    store_timestamp: int


@dataclass(frozen=True, slots=True)
class GetResult:
    """A read from one queue.

    Attributes:
        status: RocketMQ's GetMessageStatus name (``FOUND``, ``OFFSET_OVERFLOW_ONE``, ...).
        next_begin_offset: where the next read should start.
        min_offset: the queue's first readable offset (it moves up as retention deletes files).
        max_offset: one past the queue's last offset.
        messages: the messages read; ``body`` copies a body, ``body_view()`` does not.
    """

    status: str
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt]


_CAMEL = re.compile(r"_([a-z])")
#: snake_case names whose RocketMQ key is not their plain camelCase form.
_ALIASES = {
    "mapped_file_size_commit_log": "mapedFileSizeCommitLog",
    "mapped_file_size_consume_queue": "mapedFileSizeConsumeQueue",
}


def _config_key(name: str) -> str:
    if name in _ALIASES:
        return _ALIASES[name]
    return _CAMEL.sub(lambda m: m.group(1).upper(), name)


def _properties(
    tags: str | None,
    keys: str | Iterable[str] | None,
    properties: Mapping[str, str] | None,
    delay_level: int,
) -> tuple[str, str]:
    props = dict(properties or {})
    if tags:
        props[Property.TAGS] = tags
    if keys:
        props[Property.KEYS] = keys if isinstance(keys, str) else " ".join(keys)
    if delay_level > 0:
        props[Property.DELAY_TIME_LEVEL] = str(delay_level)
    uniq = props.setdefault(Property.UNIQ_KEY, unique_ids.next())
    return encode_properties(list(props.items())), uniq


class MessageStore:
    """A message store in a directory, used in-process.

    Args:
        path: the store root (created if missing). The directory is locked while open: a
            second store (or a broker) on it fails with ``StoreLockedError``.
        store_host: the ``ip:port`` written as store and born host (part of offset ids).
        **config: store settings by RocketMQ key (``flushDiskType="SYNC_FLUSH"``) or in snake
            case (``flush_disk_type="SYNC_FLUSH"``, ``mapped_file_size_commit_log=...``).
    """

    def __init__(
        self, path: str | os.PathLike[str], *, store_host: str = "127.0.0.1:10911", **config: object
    ) -> None:
        settings = {
            _config_key(k): str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in config.items()
        }
        self._native = EmbeddedStore(os.fspath(path), settings, store_host)
        self.path = os.fspath(path)

    def put(
        self,
        topic: str,
        body: bytes | bytearray | memoryview | str,
        queue_id: int = 0,
        *,
        tags: str | None = None,
        keys: str | Iterable[str] | None = None,
        properties: Mapping[str, str] | None = None,
        flag: int = 0,
        delay_level: int = 0,
    ) -> PutResult:
        """Stores one message; under SYNC_FLUSH, returns once it is on disk."""
        data = body.encode() if isinstance(body, str) else bytes(body)
        props, uniq = _properties(tags, keys, properties, delay_level)
        (r,) = self._native.put_batch([(topic, queue_id, data, props, flag, now_millis())])
        return PutResult(r[0], uniq, r[1], r[2], r[3], r[4], r[5])

    def put_batch(self, messages: Iterable[Message], queue_id: int = 0) -> list[PutResult]:
        """Stores messages contiguously, in order, under one lock (all validated first)."""
        items = []
        uniqs = []
        born = now_millis()
        for m in messages:
            props, uniq = _properties(None, None, m.properties, 0)
            items.append((m.topic, queue_id, m.body, props, m.flag, born))
            uniqs.append(uniq)
        results = self._native.put_batch(items)
        return [
            PutResult(r[0], u, r[1], r[2], r[3], r[4], r[5])
            for r, u in zip(results, uniqs, strict=True)
        ]

    def get(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_nums: int = 32,
        *,
        tags: Iterable[str] | None = None,
    ) -> GetResult:
        """Up to ``max_nums`` messages of a queue from ``offset`` (only those with one of
        ``tags`` when given). Reads stop early at the store's transfer limits (32 messages or
        256 KiB by default); continue from ``next_begin_offset``."""
        status, nxt, lo, hi, msgs = self._native.get(
            topic, queue_id, offset, max_nums, list(tags) if tags else None
        )
        return GetResult(status, nxt, lo, hi, msgs)

    def min_offset(self, topic: str, queue_id: int) -> int:
        """The first readable offset of a queue."""
        return self._native.min_offset(topic, queue_id)

    def max_offset(self, topic: str, queue_id: int) -> int:
        """One past the last offset of a queue."""
        return self._native.max_offset(topic, queue_id)

    def offset_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """The first offset whose message was stored at or after ``timestamp_ms``
        (``max_offset`` if none was)."""
        return self._native.offset_by_time(topic, queue_id, timestamp_ms)

    def earliest_time(self, topic: str, queue_id: int) -> int | None:
        """Store time (ms) of the first readable message of a queue."""
        return self._native.earliest_time(topic, queue_id)

    def query_by_key(
        self, topic: str, key: str, max_num: int = 32, begin_ms: int = 0, end_ms: int | None = None
    ) -> list[MessageExt]:
        """Messages of ``topic`` whose id (UNIQ_KEY) or one of whose keys is ``key``, stored in
        ``[begin_ms, end_ms]``, newest first."""
        end = end_ms if end_ms is not None else 2**63 - 1
        return self._native.query_by_key(topic, key, max_num, begin_ms, end)

    def view_by_offset_msg_id(self, offset_msg_id: str) -> MessageExt | None:
        """The message named by an offset id (``PutResult.offset_msg_id``)."""
        return self._native.view_by_offset_msg_id(offset_msg_id)

    def topic_queues(self) -> list[tuple[str, int]]:
        """Every (topic, queue id) with messages."""
        return self._native.topic_queues()

    def flush(self) -> None:
        """Writes everything to disk."""
        self._native.flush()

    def close(self) -> None:
        """Flushes and releases the directory."""
        self._native.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran."""
        return self._native.closed

    def __enter__(self) -> MessageStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
