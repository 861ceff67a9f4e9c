"""Finding a message by the id a user has: the id a producer returned (``SendResult.msg_id``,
the UNIQ_KEY property, what applications log) or the broker's offset id
(``SendResult.offset_msg_id``: the storing broker's address and the CommitLog offset).

Both are 32 hex digits for IPv4, so the text alone cannot tell them apart (RocketMQ's admin
tries the offset id and falls back to the unique key). Here an id is read as an offset id only
when the address it encodes is a broker of this cluster — a producer's id decodes to an
address too (its host, its process id as a "port"), and nothing is sent to an address only
decoded from user input.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

from rocketpy._native import MessageExt
from rocketpy.admin.cluster_table import broker_entries
from rocketpy.errors import ClientError
from rocketpy.protocol import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

if TYPE_CHECKING:
    from rocketpy.admin.client import Admin


def decode_offset_msg_id(msg_id: str) -> tuple[str, int]:
    """The broker address and CommitLog offset an offset message id encodes (RocketMQ's
    ``MessageDecoder.decodeMessageId``: IPv4 or IPv6 address, port, offset, in hex)."""
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError:
        raise ClientError(f"not a message id: {msg_id!r} (ids are hex digits)") from None
    if len(raw) not in (16, 28):
        raise ClientError(f"not an offset message id: {msg_id!r}")
    ip_len = len(raw) - 12
    ip = ipaddress.ip_address(raw[:ip_len])
    port = int.from_bytes(raw[ip_len : ip_len + 4], "big")
    offset = int.from_bytes(raw[ip_len + 4 :], "big")
    host = f"[{ip}]" if ip.version == 6 else str(ip)
    return f"{host}:{port}", offset


def broker_addrs(admin: Admin) -> set[str]:
    """Every address (masters and slaves) of every broker the name servers know."""
    return {e.addr for e in broker_entries(admin.cluster_info())}


def _search_order(topics: list[str]) -> list[str]:
    """Applications' topics first, then retry and dead-letter topics (which hold copies
    with the same unique key)."""
    copies = (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)
    return sorted(topics, key=lambda t: (t.startswith(copies), t))


def find_by_id(admin: Admin, msg_id: str, topic: str | None = None) -> MessageExt | None:
    """The message with id ``msg_id`` (a producer's id or an offset id); a producer's id is
    looked up in ``topic``, or in every topic when none is given. None when nothing has it."""
    msg_id = msg_id.strip()
    try:
        bytes.fromhex(msg_id)
    except ValueError:
        raise ClientError(f"not a message id: {msg_id!r} (ids are hex digits)") from None
    try:
        addr, offset = decode_offset_msg_id(msg_id)
    except (ClientError, ValueError):
        addr, offset = "", -1
    if addr and addr in broker_addrs(admin):
        found = admin.view_message(addr, offset)
        if found is not None:
            return found
    for t in [topic] if topic else _search_order(admin.topic_list()):
        for m in admin.query_message(t, msg_id):
            if m.msg_id == msg_id:
                return m
    return None
