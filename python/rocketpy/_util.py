"""Small helpers: local address, RocketMQ-compatible unique message ids, server JSON
bodies."""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
import time
from collections.abc import Callable
from typing import Any

from rocketpy._native import CorruptDataError, RocketpyError, UniqueIds, fastjson_to_json

_local_ip: str | None = None


def local_ip() -> str:
    """The host's primary IPv4 address (the source of a route outward; no packet is sent),
    or 127.0.0.1 when there is no such route."""
    global _local_ip
    if _local_ip is None:
        ip = "127.0.0.1"
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect(("192.0.2.1", 9))
                ip = s.getsockname()[0]
        except OSError:
            pass
        _local_ip = ip
    return _local_ip


def now_millis() -> int:
    """Wall-clock milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


_pid = os.getpid()


def _forked_child() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked_child)


def current_pid() -> int:
    """This process's id, without a system call per look-up (updated in a forked child)."""
    return _pid


def _month_bounds(now_ms: int) -> tuple[int, int]:
    """Start of the local month holding ``now_ms`` and of the next one, in ms."""
    today = _dt.datetime.fromtimestamp(now_ms / 1000)
    start = today.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    month = start.month % 12 + 1
    nxt = start.replace(year=start.year + (start.month == 12), month=month)
    return int(start.timestamp() * 1000), int(nxt.timestamp() * 1000)


class UniqueIdGenerator:
    """Message ids in the layout of RocketMQ's ``MessageClientIDSetter`` (32 hex digits):
    ip (4 bytes) | pid (2) | instance hash (4) | ms since the start of the month (4) |
    counter (2). Made natively (see ``rocketpy._native.UniqueIds``)."""

    def __init__(self) -> None:
        ip = bytes(int(p) for p in local_ip().split("."))
        prefix = (
            ip
            + (os.getpid() & 0xFFFF).to_bytes(2, "big")
            + (id(self) & 0xFFFFFFFF).to_bytes(4, "big")
        )
        #: The native generator (auto-batching takes ids from it directly).
        self.native = UniqueIds(prefix.hex().upper(), _month_bounds)
        #: A new id (the native method itself: no Python frame per id).
        self.next: Callable[[], str] = self.native.next


unique_ids = UniqueIdGenerator()


def json_body(body: bytes, what: str) -> dict[str, Any]:
    """A server's JSON body (standard or fastjson) as a dict; anything else is a
    :class:`~rocketpy.errors.CorruptDataError` naming ``what`` (never a bare ValueError)."""
    try:
        data = json.loads(fastjson_to_json(body))
    except (ValueError, RocketpyError) as e:
        raise CorruptDataError(f"{what}: the body is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise CorruptDataError(f"{what}: expected a JSON object, got {type(data).__name__}")
    return data


def mq_table(table: dict[str, Any] | None, what: str) -> dict[Any, Any]:
    """A map keyed by ``MessageQueue`` from a server's JSON body (``offsetTable`` of
    ``TopicStatsTable``, ``ConsumeStats``, ``ResetOffsetBody``): fastjson writes each key as the
    queue's JSON object, which :func:`json_body` turns into a string holding that object."""
    from rocketpy.message import MessageQueue

    out: dict[Any, Any] = {}
    for key, value in (table or {}).items():
        try:
            q = json.loads(key)
            mq = MessageQueue(str(q["topic"]), str(q["brokerName"]), int(q["queueId"]))
        except (ValueError, KeyError, TypeError):
            raise CorruptDataError(f"{what}: not a message queue key: {key!r}") from None
        out[mq] = value
    return out
