"""Cluster and broker commands: clusterList, brokerStatus, getBrokerConfig,
updateBrokerConfig, wipeWritePerm, addWritePerm, statsAll."""

from __future__ import annotations

import argparse
from typing import Any

from rocketpy.admin import Admin, BrokerStats
from rocketpy.admin.overview import broker_rows, brokers
from rocketpy.errors import ClientError
from rocketpy.mqadmin.command import Command, cut
from rocketpy.mqadmin.output import dump_json, row
from rocketpy.protocol import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX


def _load(tps: float, kv: dict[str, str], pool: str) -> str:
    """clusterList's ``TPS(queue size,head wait ms)`` cell."""
    size = kv.get(f"{pool}ThreadPoolQueueSize", "")
    wait = kv.get(f"{pool}ThreadPoolQueueHeadWaitTimeMills", "")
    return f"{tps:9.2f}({size},{wait}ms)"


def _cluster_list_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-c", "--clusterName", help="only this cluster")
    p.add_argument("-m", "--moreStats", action="store_true", help="message totals")
    p.add_argument("--json", action="store_true", help="JSON output")


def _cluster_list(admin: Admin, a: argparse.Namespace) -> None:
    rows = broker_rows(admin, a.clusterName)
    if a.json:
        dump_json([{k: v for k, v in r.items() if k != "kv"} for r in rows])
        return
    if a.moreStats:
        row(
            "%-16s  %-32s %14s %14s %14s %14s",
            "#Cluster Name",
            "#Broker Name",
            "#InTotalYest",
            "#OutTotalYest",
            "#InTotalToday",
            "#OutTotalToday",
        )
        for r in rows:
            kv = r["kv"]
            yest_in = int(kv.get("msgPutTotalTodayMorning", 0)) - int(
                kv.get("msgPutTotalYesterdayMorning", 0)
            )
            yest_out = int(kv.get("msgGetTotalTodayMorning", 0)) - int(
                kv.get("msgGetTotalYesterdayMorning", 0)
            )
            today_in = int(kv.get("msgPutTotalTodayNow", 0)) - int(
                kv.get("msgPutTotalTodayMorning", 0)
            )
            today_out = int(kv.get("msgGetTotalTodayNow", 0)) - int(
                kv.get("msgGetTotalTodayMorning", 0)
            )
            row(
                "%-16s  %-32s %14d %14d %14d %14d",
                r["cluster"],
                r["brokerName"],
                yest_in,
                yest_out,
                today_in,
                today_out,
            )
        return
    row(
        "%-16s  %-22s  %-4s  %-22s %-16s %19s %19s %10s %5s %6s",
        "#Cluster Name",
        "#Broker Name",
        "#BID",
        "#Addr",
        "#Version",
        "#InTPS(LOAD)",
        "#OutTPS(LOAD)",
        "#PCWait(ms)",
        "#Hour",
        "#SPACE",
    )
    for r in rows:
        kv = r["kv"]
        load_in = _load(r["inTps"], kv, "send")
        load_out = _load(r["outTps"], kv, "pull")
        row(
            "%-16s  %-22s  %-4s  %-22s %-16s %19s %19s %10s %5s %-6s",
            r["cluster"],
            r["brokerName"],
            r["brokerId"],
            r["addr"],
            r["version"],
            load_in,
            load_out,
            r["pageCacheLockTimeMills"],
            f"{r['hour']:2.2f}",
            f"{r['space']:.4f}",
        )


def _target_args(p: argparse.ArgumentParser, what: str) -> None:
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("-b", "--brokerAddr", help=f"{what} of this broker")
    target.add_argument("-c", "--clusterName", help=f"{what} of every broker of this cluster")


def _targets(admin: Admin, a: argparse.Namespace) -> list[str]:
    if a.brokerAddr:
        return [a.brokerAddr]
    addrs = [addr for _, _, _, addr in brokers(admin, a.clusterName)]
    if not addrs:
        raise ClientError(f"cluster {a.clusterName!r} has no broker")
    return addrs


def _broker_status_args(p: argparse.ArgumentParser) -> None:
    _target_args(p, "runtime figures")
    p.add_argument("--json", action="store_true", help="JSON output")


def _broker_status(admin: Admin, a: argparse.Namespace) -> None:
    targets = _targets(admin, a)
    tables = {addr: admin.broker_runtime_info(addr) for addr in targets}
    if a.json:
        dump_json(tables)
        return
    for addr, kv in tables.items():
        for key in sorted(kv):
            if a.brokerAddr:
                row("%-32s: %s", key, kv[key])
            else:
                row("%-24s %-32s: %s", addr, key, kv[key])


def _get_config_args(p: argparse.ArgumentParser) -> None:
    _target_args(p, "configuration")


def _get_config(admin: Admin, a: argparse.Namespace) -> None:
    if a.brokerAddr:
        heads = [(a.brokerAddr, f"============{a.brokerAddr}============")]
    else:
        heads = []
        listed = brokers(admin, a.clusterName)
        if not listed:
            raise ClientError(f"cluster {a.clusterName!r} has no broker")
        masters = {name: addr for _, name, bid, addr in listed if bid == 0}
        for _, name, bid, addr in listed:
            if bid == 0:
                heads.append((addr, f"============Master: {addr}============"))
            else:
                master = masters.get(name, "")
                heads.append(
                    (addr, f"============My Master: {master}=====Slave: {addr}============")
                )
    for addr, head in heads:
        print(head)
        for key, value in sorted(admin.broker_config(addr).items()):
            row("%-50s=  %s", key, value)
        print()


def _update_config_args(p: argparse.ArgumentParser) -> None:
    _target_args(p, "configuration")
    p.add_argument("-k", "--key", required=True)
    p.add_argument("-v", "--value", required=True)


def _update_config(admin: Admin, a: argparse.Namespace) -> None:
    for addr in _targets(admin, a):
        admin.update_broker_config(addr, a.key, a.value)
        row("update broker config success, %s", addr)


def _perm_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerName", required=True)


def _wipe(admin: Admin, a: argparse.Namespace) -> None:
    for ns, count in admin.set_write_perm(a.brokerName, writable=False).items():
        row("wipe write perm of broker[%s] in name server[%s] OK, %d", a.brokerName, ns, count)


def _add(admin: Admin, a: argparse.Namespace) -> None:
    for ns, count in admin.set_write_perm(a.brokerName, writable=True).items():
        row("add write perm of broker[%s] in name server[%s] OK, %d", a.brokerName, ns, count)


def _stats_all_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-a", "--activeTopic", action="store_true", help="only topics with traffic")
    p.add_argument("-t", "--topic", help="only this topic")
    p.add_argument("--json", action="store_true", help="JSON output")


def _sum_24h(s: BrokerStats) -> int:
    """mqadmin's ``compute24HourSum``: the day's sum, else the hour's, else the minute's."""
    return s.day[0] or s.hour[0] or s.minute[0]


def _stats_all(admin: Admin, a: argparse.Namespace) -> None:
    topics = [a.topic] if a.topic else admin.topic_list()
    rows: list[dict[str, Any]] = []
    for topic in topics:
        if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
            continue
        route = admin.topic_route(topic)
        masters = sorted({m for b in route.broker_datas if (m := b.master_addr())}) if route else []
        in_tps = 0.0
        in_24h = 0
        for addr in masters:
            s = admin.broker_stats(addr, "TOPIC_PUT_NUMS", topic)
            if s is not None:
                in_tps += s.minute[1]
                in_24h += _sum_24h(s)
        groups = admin.groups_of_topic(topic) if masters else []
        if not groups:
            if a.activeTopic and in_24h == 0:
                continue
            rows.append(
                dict(
                    topic=topic,
                    group="",
                    accumulation=0,
                    inTps=in_tps,
                    outTps=0.0,
                    inMsg24Hour=in_24h,
                    outMsg24Hour=0,
                )
            )
        for group in groups:
            out_tps, out_24h = 0.0, 0
            for addr in masters:
                s = admin.broker_stats(addr, "GROUP_GET_NUMS", f"{topic}@{group}")
                if s is not None:
                    out_tps += s.minute[1]
                    out_24h += _sum_24h(s)
            try:
                lag = max(admin.consume_stats(group, topic).diff_total, 0)
            except Exception:
                lag = 0
            if a.activeTopic and in_24h == 0 and out_24h == 0:
                continue
            rows.append(
                dict(
                    topic=topic,
                    group=group,
                    accumulation=lag,
                    inTps=in_tps,
                    outTps=out_tps,
                    inMsg24Hour=in_24h,
                    outMsg24Hour=out_24h,
                )
            )
    if a.json:
        dump_json(rows)
        return
    row(
        "%-64s  %-64s %12s %11s %11s %14s %14s",
        "#Topic",
        "#Consumer Group",
        "#Accumulation",
        "#InTPS",
        "#OutTPS",
        "#InMsg24Hour",
        "#OutMsg24Hour",
    )
    for r in rows:
        if not r["group"]:
            row(
                "%-64s  %-64s %12d %11.2f %11s %14d %14s",
                cut(r["topic"], 64),
                "",
                0,
                r["inTps"],
                "",
                r["inMsg24Hour"],
                "NO_CONSUMER",
            )
            continue
        row(
            "%-64s  %-64s %12d %11.2f %11.2f %14d %14d",
            cut(r["topic"], 64),
            cut(r["group"], 64),
            r["accumulation"],
            r["inTps"],
            r["outTps"],
            r["inMsg24Hour"],
            r["outMsg24Hour"],
        )


COMMANDS = [
    Command("clusterList", "List cluster infos", _cluster_list_args, _cluster_list),
    Command(
        "brokerStatus", "Fetch broker runtime status data", _broker_status_args, _broker_status
    ),
    Command(
        "getBrokerConfig",
        "Get broker config by cluster or special broker!",
        _get_config_args,
        _get_config,
    ),
    Command("updateBrokerConfig", "Update broker's config", _update_config_args, _update_config),
    Command("wipeWritePerm", "Wipe write perm of broker in all name server", _perm_args, _wipe),
    Command("addWritePerm", "Add write perm of broker in all name server", _perm_args, _add),
    Command("statsAll", "Topic and Consumer tps stats", _stats_all_args, _stats_all),
]
