"""What the console's pages show, read through :class:`~rocketpy.admin.Admin`: plain values
for the templates, no HTML. Every function is a read; changes live in
:mod:`rocketpy.console.actions`."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rocketpy._native import MessageExt
from rocketpy.admin import Admin
from rocketpy.admin.controller import ReplicaIdentity, ReplicasInfo
from rocketpy.admin.overview import broker_rows, group_rows
from rocketpy.errors import ClientError, RocketpyError
from rocketpy.message import MessageQueue
from rocketpy.protocol import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

#: The most messages one search shows.
SEARCH_LIMIT = 64


def cluster(admin: Admin) -> list[dict[str, Any]]:
    """The brokers with version, TPS, disk use and message totals."""
    rows = broker_rows(admin)
    for r in rows:
        kv = r.pop("kv")
        r["putToday"] = int(kv.get("msgPutTotalTodayNow", 0)) - int(
            kv.get("msgPutTotalTodayMorning", 0)
        )
        r["getToday"] = int(kv.get("msgGetTotalTodayNow", 0)) - int(
            kv.get("msgGetTotalTodayMorning", 0)
        )
    return rows


def controller(admin: Admin, addr: str, groups: list[str]) -> dict[str, Any]:
    """Controller mode's view of the broker groups ``groups``, from controller ``addr``: its
    leader (CONTROLLER_GET_METADATA_INFO) and, from one CONTROLLER_GET_SYNC_STATE_DATA to the
    leader for every group at once, each group's master, epochs and replicas. A controller that
    cannot be reached is an ``error`` (a line on the page), not an exception."""
    out: dict[str, Any] = {"addr": addr, "leader": None, "leaderId": None, "groups": []}
    ctl = admin.controller()
    try:
        meta = ctl.metadata(addr)
        out["leader"], out["leaderId"] = meta.leader_address, meta.leader_id
        infos = ctl.sync_state_data(addr, groups)
    except RocketpyError as e:
        out["error"] = str(e)
        return out
    out["groups"] = [_replication(name, infos.get(name)) for name in groups]
    return out


def _replication(name: str, info: ReplicasInfo | None) -> dict[str, Any]:
    """One group's master, epochs and replicas (in-sync ones first, each by broker id);
    ``known`` is False for a group the controller leader does not manage."""
    if info is None:
        return {"name": name, "known": False, "replicas": []}

    def row(r: ReplicaIdentity, in_sync: bool) -> dict[str, Any]:
        return {
            "id": r.broker_id,
            "addr": r.broker_address,
            "alive": r.alive,
            "inSync": in_sync,
            "master": r.broker_id is not None and r.broker_id == info.master_broker_id,
        }

    def by_id(r: ReplicaIdentity) -> int:
        return r.broker_id if r.broker_id is not None else -1

    return {
        "name": name,
        "known": True,
        "masterId": info.master_broker_id,
        "masterAddr": info.master_address,
        "masterEpoch": info.master_epoch,
        "syncStateSetEpoch": info.sync_state_set_epoch,
        "replicas": [row(r, True) for r in sorted(info.in_sync, key=by_id)]
        + [row(r, False) for r in sorted(info.not_in_sync, key=by_id)],
    }


def totals(admin: Admin) -> dict[str, Any]:
    """Messages put and got so far by all brokers, for the live TPS chart (the page takes
    differences between polls)."""
    put = got = 0
    for r in broker_rows(admin):
        put += int(r["kv"].get("msgPutTotalTodayNow", 0))
        got += int(r["kv"].get("msgGetTotalTodayNow", 0))
    return {"time": time.time(), "put": put, "get": got}


def topics(admin: Admin) -> list[dict[str, Any]]:
    """Topics by kind (normal, retry, DLQ, system-looking ones last)."""
    out = []
    for name in sorted(admin.topic_list()):
        kind = (
            "retry"
            if name.startswith(RETRY_GROUP_TOPIC_PREFIX)
            else "dlq"
            if name.startswith(DLQ_GROUP_TOPIC_PREFIX)
            else "normal"
        )
        out.append({"name": name, "kind": kind})
    return out


def topic(admin: Admin, name: str) -> dict[str, Any]:
    """A topic's queues (offsets, last store time), route and consuming groups."""
    route = admin.topic_route_json(name)
    if route is None:
        raise ClientError(f"topic {name!r} does not exist")
    stats = admin.topic_stats(name)
    queues: list[dict[str, Any]] = [
        {
            "broker": mq.broker_name,
            "queue": mq.queue_id,
            "min": o.min_offset,
            "max": o.max_offset,
            "last": o.last_update_timestamp,
        }
        for mq, o in sorted(stats.items(), key=lambda kv: (kv[0].broker_name, kv[0].queue_id))
    ]
    try:
        groups = sorted(admin.groups_of_topic(name))
    except ClientError:
        groups = []
    return {
        "name": name,
        "queues": queues,
        "messages": sum(q["max"] - q["min"] for q in queues),
        "route": route,
        "groups": groups,
    }


def groups(admin: Admin) -> list[dict[str, Any]]:
    """Every consumer group with members, model and total lag."""
    return group_rows(admin)


def group(admin: Admin, name: str) -> dict[str, Any]:
    """A group's lag per queue, its connections and subscriptions."""
    stats = admin.consume_stats(name)
    queues: list[dict[str, Any]] = [
        {
            "topic": mq.topic,
            "broker": mq.broker_name,
            "queue": mq.queue_id,
            "brokerOffset": o.broker_offset,
            "consumerOffset": o.consumer_offset,
            "diff": o.broker_offset - o.consumer_offset,
            "last": o.last_timestamp,
        }
        for mq, o in sorted(
            stats.offsets.items(), key=lambda kv: (kv[0].topic, kv[0].broker_name, kv[0].queue_id)
        )
    ]
    conn = admin.consumer_connection(name)
    return {
        "name": name,
        "queues": queues,
        "diffTotal": sum(q["diff"] for q in queues),
        "tps": stats.consume_tps,
        "topics": sorted({q["topic"] for q in queues if not q["topic"].startswith("%")}),
        "connections": conn.connections if conn else [],
        # An SQL92 subscription is shown as such; tags as they are.
        "subscriptions": {
            t: e if conn.expression_types.get(t, "TAG") == "TAG" else f"SQL92: {e}"
            for t, e in conn.subscriptions.items()
        }
        if conn
        else {},
        "model": conn.message_model if conn else "",
    }


def lag(admin: Admin, name: str) -> dict[str, Any]:
    """A group's total lag now, for the live lag chart."""
    try:
        diff = admin.consume_stats(name).diff_total
    except ClientError:
        diff = 0
    return {"time": time.time(), "diff": diff}


@dataclass
class Found:
    """A message as a search shows it."""

    msg: MessageExt
    #: The body as text when it decodes as UTF-8, else None (shown as hex).
    text: str | None

    @staticmethod
    def of(msg: MessageExt) -> Found:
        try:
            text: str | None = msg.body.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        return Found(msg, text)


def by_key(admin: Admin, topic: str, key: str) -> list[Found]:
    """Messages of ``topic`` with key (or unique id) ``key``."""
    return [Found.of(m) for m in admin.query_message(topic, key, max_num=SEARCH_LIMIT)]


def by_id(admin: Admin, msg_id: str, topic: str | None = None) -> list[Found]:
    """The message with id ``msg_id``: a producer's (looked up in ``topic``, or every topic)
    or an offset id."""
    msg = admin.view_message(msg_id.strip(), topic=topic or None)
    return [Found.of(msg)] if msg is not None else []


def by_time(admin: Admin, topic: str, begin_ms: int, end_ms: int) -> list[Found]:
    """Messages of ``topic`` stored between ``begin_ms`` and ``end_ms``, oldest first, at most
    :data:`SEARCH_LIMIT` (each queue from the first message at or after ``begin_ms``)."""
    found: list[MessageExt] = []
    for mq in sorted(admin.topic_stats(topic), key=lambda q: (q.broker_name, q.queue_id)):
        offset = admin.search_offset(mq, begin_ms)
        while len(found) < SEARCH_LIMIT:
            batch = admin.pull_messages(mq, offset, 32)
            inside = [m for m in batch if begin_ms <= m.store_timestamp <= end_ms]
            found.extend(inside)
            if len(batch) < 32 or len(inside) < len(batch):
                break
            offset = batch[-1].queue_offset + 1
    found.sort(key=lambda m: m.store_timestamp)
    return [Found.of(m) for m in found[:SEARCH_LIMIT]]


def dlq(admin: Admin, group: str) -> list[dict[str, Any]]:
    """The dead-letter messages of ``group`` (its ``%DLQ%`` topic), at most
    :data:`SEARCH_LIMIT`, each with the queue and offset to resend it by."""
    topic_name = DLQ_GROUP_TOPIC_PREFIX + group
    if admin.topic_route(topic_name) is None:
        return []
    out: list[dict[str, Any]] = []
    for mq, o in sorted(admin.topic_stats(topic_name).items(), key=lambda kv: kv[0].queue_id):
        offset = o.min_offset
        while offset < o.max_offset and len(out) < SEARCH_LIMIT:
            batch = admin.pull_messages(mq, offset, 32)
            if not batch:
                break
            for m in batch:
                out.append({"mq": mq, "found": Found.of(m)})
            offset = batch[-1].queue_offset + 1
    return out[:SEARCH_LIMIT]


def dlq_message(admin: Admin, group: str, broker: str, queue: int, offset: int) -> MessageExt:
    """One dead-letter message of ``group``."""
    mq = MessageQueue(DLQ_GROUP_TOPIC_PREFIX + group, broker, queue)
    msg = admin.pull_one(mq, offset)
    if msg is None:
        raise ClientError(f"no dead-letter message at {mq} offset {offset}")
    return msg
