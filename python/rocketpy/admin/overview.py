"""Cluster-wide summaries built from :class:`~rocketpy.admin.Admin` requests, shared by the
``rocketpy admin`` commands (clusterList, consumerProgress without ``-g``) and the web console:
the brokers with their runtime figures, and every consumer group with its members and lag."""

from __future__ import annotations

from typing import Any

from rocketpy._util import now_millis
from rocketpy.admin.client import Admin
from rocketpy.admin.cluster_table import broker_entries
from rocketpy.admin.types import version_desc
from rocketpy.protocol import RETRY_GROUP_TOPIC_PREFIX

__all__ = ["broker_rows", "brokers", "first_figure", "group_names", "group_rows"]


def first_figure(text: str) -> float:
    """The first figure of ``"x y z"`` (``putTps``: per second over 10 s, 1 min, 10 min)."""
    try:
        return float(text.split()[0])
    except (IndexError, ValueError):
        return 0.0


def brokers(admin: Admin, cluster: str | None = None) -> list[tuple[str, str, int, str]]:
    """``(cluster, broker name, broker id, address)`` of every broker, sorted."""
    return [tuple(e) for e in broker_entries(admin.cluster_info(), cluster)]  # type: ignore[misc]


def broker_rows(admin: Admin, cluster: str | None = None) -> list[dict[str, Any]]:
    """clusterList's figures per broker: version, in/out TPS, hours of messages kept, disk
    use, and the whole runtime table (``kv``). An unreachable broker gets empty figures."""
    now_ms = now_millis()
    rows: list[dict[str, Any]] = []
    for c, name, bid, addr in brokers(admin, cluster):
        try:
            kv = admin.broker_runtime_info(addr)
        except Exception:
            kv = {}
        earliest = int(kv.get("earliestMessageTimeStamp") or 0)
        rows.append(
            dict(
                cluster=c,
                brokerName=name,
                brokerId=bid,
                addr=addr,
                version=kv.get("brokerVersionDesc", ""),
                inTps=first_figure(kv.get("putTps", "")),
                outTps=first_figure(kv.get("getTransferedTps", kv.get("getTransferredTps", ""))),
                pageCacheLockTimeMills=kv.get("pageCacheLockTimeMills", ""),
                hour=(now_ms - earliest) / 3_600_000 if earliest > 0 else 0.0,
                space=float(kv.get("commitLogDiskRatio") or 0.0),
                kv=kv,
            )
        )
    return rows


def group_names(admin: Admin) -> list[str]:
    """Every consumer group that has consumed (each has a retry topic), sorted; one request."""
    prefix = RETRY_GROUP_TOPIC_PREFIX
    return sorted(t[len(prefix) :] for t in admin.topic_list() if t.startswith(prefix))


def group_rows(admin: Admin) -> list[dict[str, Any]]:
    """consumerProgress's group table: every group with a retry topic, its online members,
    their oldest version, consume type and model, TPS and total lag; most members first,
    then most lag (mqadmin's order)."""
    infos: list[dict[str, Any]] = []
    for group in group_names(admin):
        try:
            stats = admin.consume_stats(group)
            tps, diff = int(stats.consume_tps), stats.diff_total
        except Exception:  # a group a broker cannot describe is listed with zeros
            tps, diff = 0, 0
        conn = admin.consumer_connection(group)
        count = len(conn.connections) if conn else 0
        online = conn is not None and count > 0
        infos.append(
            dict(
                group=group,
                count=count,
                version=version_desc(min(c.version for c in conn.connections))
                if conn and online
                else "OFFLINE",
                type=("PULL" if conn.consume_type == "CONSUME_ACTIVELY" else "PUSH")
                if conn and online
                else "",
                model=conn.message_model if conn and online else "",
                tps=tps,
                diffTotal=diff,
            )
        )
    infos.sort(key=lambda i: (-i["count"], -i["diffTotal"]))
    return infos
