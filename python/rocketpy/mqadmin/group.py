"""Group commands: consumerProgress, consumerConnection, producerConnection, updateSubGroup,
deleteSubGroup, resetOffsetByTime."""

from __future__ import annotations

import argparse
import datetime as dt

from rocketpy._util import now_millis
from rocketpy.admin import Admin
from rocketpy.admin.overview import brokers, group_rows
from rocketpy.admin.types import version_desc
from rocketpy.errors import ClientError
from rocketpy.mqadmin.command import Command, cut, no_master
from rocketpy.mqadmin.output import dump_json, row


def _date(ms: int) -> str:
    """``UtilAll.YYYY_MM_DD_HH_MM_SS`` in local time."""
    return dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def _progress_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--groupName", help="one group, queue by queue")
    p.add_argument("-t", "--topicName", help="only this topic (with -g)")
    p.add_argument("--json", action="store_true", help="JSON output")


def _progress_of_group(admin: Admin, a: argparse.Namespace) -> None:
    stats = admin.consume_stats(a.groupName, a.topicName)
    queues = sorted(stats.offsets, key=lambda mq: (mq.topic, mq.broker_name, mq.queue_id))
    if a.json:
        dump_json(
            dict(
                consumeTps=stats.consume_tps,
                diffTotal=stats.diff_total,
                queues=[
                    dict(
                        topic=mq.topic,
                        brokerName=mq.broker_name,
                        queueId=mq.queue_id,
                        brokerOffset=stats.offsets[mq].broker_offset,
                        consumerOffset=stats.offsets[mq].consumer_offset,
                        diff=stats.offsets[mq].diff,
                        lastTimestamp=stats.offsets[mq].last_timestamp,
                    )
                    for mq in queues
                ],
            )
        )
        return
    row(
        "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s  %s",
        "#Topic",
        "#Broker Name",
        "#QID",
        "#Broker Offset",
        "#Consumer Offset",
        "#Diff",
        "#LastTime",
    )
    total = 0
    for mq in queues:
        o = stats.offsets[mq]
        diff = o.broker_offset - o.consumer_offset
        total += diff
        last = _date(o.last_timestamp) if o.last_timestamp else "N/A"
        row(
            "%-64s  %-32s  %-4d  %-20d  %-20d  %-20d  %s",
            cut(mq.topic, 64),
            cut(mq.broker_name, 32),
            mq.queue_id,
            o.broker_offset,
            o.consumer_offset,
            diff,
            last,
        )
    print()
    row("Consume TPS: %.2f", stats.consume_tps)
    row("Diff Total: %d", total)


def _progress_of_all(admin: Admin, a: argparse.Namespace) -> None:
    infos = group_rows(admin)
    if a.json:
        dump_json(infos)
        return
    row(
        "%-64s  %-6s  %-24s %-5s  %-14s  %-7s  %s",
        "#Group",
        "#Count",
        "#Version",
        "#Type",
        "#Model",
        "#TPS",
        "#Diff Total",
    )
    for i in infos:
        row(
            "%-64s  %-6d  %-24s %-5s  %-14s  %-7d  %d",
            cut(i["group"], 64),
            i["count"],
            i["version"],
            i["type"],
            i["model"],
            i["tps"],
            i["diffTotal"],
        )


def _progress(admin: Admin, a: argparse.Namespace) -> None:
    if a.groupName:
        _progress_of_group(admin, a)
    else:
        _progress_of_all(admin, a)


def _consumer_connection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--consumerGroup", required=True)
    p.add_argument("-b", "--brokerAddr", help="ask this broker only")
    p.add_argument("--json", action="store_true", help="JSON output")


def _consumer_connection(admin: Admin, a: argparse.Namespace) -> None:
    cc = admin.consumer_connection(a.consumerGroup, a.brokerAddr)
    if cc is None:
        raise ClientError(f"the consumer group[{a.consumerGroup}] not online")
    if a.json:
        dump_json(
            dict(
                connections=[c.__dict__ for c in cc.connections],
                subscriptions=cc.subscriptions,
                consumeType=cc.consume_type,
                messageModel=cc.message_model,
                consumeFromWhere=cc.consume_from_where,
            )
        )
        return
    row("%-36s %-22s %-10s %s", "#ClientId", "#ClientAddr", "#Language", "#Version")
    for c in cc.connections:
        row("%-36s %-22s %-10s %s", c.client_id, c.client_addr, c.language, version_desc(c.version))
    print("\nBelow is subscription:")
    row("%-20s %s", "#Topic", "#SubExpression")
    for topic, expression in sorted(cc.subscriptions.items()):
        row("%-20s %s", topic, expression)
    print()
    row("ConsumeType: %s", cc.consume_type)
    row("MessageModel: %s", cc.message_model)
    row("ConsumeFromWhere: %s", cc.consume_from_where)


def _producer_connection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--producerGroup", required=True)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("--json", action="store_true", help="JSON output")


def _producer_connection(admin: Admin, a: argparse.Namespace) -> None:
    conns = admin.producer_connections(a.producerGroup, a.topic)
    if not conns:
        raise ClientError(f"the producer group[{a.producerGroup}] not exist")
    if a.json:
        dump_json([c.__dict__ for c in conns])
        return
    for i, c in enumerate(conns, 1):
        row(
            "%04d  %-32s %-22s %-8s %s",
            i,
            c.client_id,
            c.client_addr,
            c.language,
            version_desc(c.version),
        )


def _group_targets(admin: Admin, a: argparse.Namespace) -> list[str]:
    if a.brokerAddr:
        return [a.brokerAddr]
    addrs = [addr for _, _, bid, addr in brokers(admin, a.clusterName) if bid == 0]
    if not addrs:
        raise no_master(admin, a.clusterName)
    return addrs


def _bool(text: str) -> bool:
    return text.strip().lower() == "true"


def _update_group_args(p: argparse.ArgumentParser) -> None:
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("-b", "--brokerAddr")
    target.add_argument("-c", "--clusterName")
    p.add_argument("-g", "--groupName", required=True)
    p.add_argument("-s", "--consumeEnable", default="true")
    p.add_argument("-m", "--consumeFromMinEnable", default="false")
    p.add_argument("-d", "--consumeBroadcastEnable", default="false")
    p.add_argument("-o", "--consumeMessageOrderly", default="false", help="5.x FIFO consumption")
    p.add_argument("-q", "--retryQueueNums", type=int, default=1)
    p.add_argument("-r", "--retryMaxTimes", type=int, default=16)
    p.add_argument("-i", "--brokerId", type=int, default=0)
    p.add_argument("-w", "--whichBrokerWhenConsumeSlowly", type=int, default=1)
    p.add_argument("-a", "--notifyConsumerIdsChanged", default="true")


def _update_group(admin: Admin, a: argparse.Namespace) -> None:
    config = dict(
        groupName=a.groupName,
        consumeEnable=_bool(a.consumeEnable),
        consumeFromMinEnable=_bool(a.consumeFromMinEnable),
        consumeBroadcastEnable=_bool(a.consumeBroadcastEnable),
        consumeMessageOrderly=_bool(a.consumeMessageOrderly),
        retryQueueNums=a.retryQueueNums,
        retryMaxTimes=a.retryMaxTimes,
        brokerId=a.brokerId,
        whichBrokerWhenConsumeSlowly=a.whichBrokerWhenConsumeSlowly,
        notifyConsumerIdsChangedEnable=_bool(a.notifyConsumerIdsChanged),
    )
    for addr in _group_targets(admin, a):
        admin.update_subscription_group(addr, config)
        row("create subscription group to %s success.", addr)
    row(
        "SubscriptionGroupConfig [%s]",
        ", ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in config.items()),
    )


def _delete_group_args(p: argparse.ArgumentParser) -> None:
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("-b", "--brokerAddr")
    target.add_argument("-c", "--clusterName")
    p.add_argument("-g", "--groupName", required=True)
    p.add_argument("-r", "--removeOffset", default="false", help="true: forget its offsets too")


def _delete_group(admin: Admin, a: argparse.Namespace) -> None:
    clean = _bool(a.removeOffset)
    for addr in _group_targets(admin, a):
        admin.delete_subscription_group(addr, a.groupName, clean)
        if a.clusterName:
            row(
                "delete subscription group [%s] from broker [%s] in cluster [%s] success.",
                a.groupName,
                addr,
                a.clusterName,
            )
        else:
            row("delete subscription group [%s] from broker [%s] success.", a.groupName, addr)


def _parse_timestamp(text: str) -> int:
    """mqadmin's ``-s``: ``now``, milliseconds, or ``yyyy-MM-dd#HH:mm:ss:SSS`` (local time)."""
    text = text.strip()
    if text == "now":
        return now_millis()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        t = dt.datetime.strptime(text, "%Y-%m-%d#%H:%M:%S:%f")
    except ValueError:
        raise ClientError(
            f"bad timestamp {text!r}: use now, milliseconds or yyyy-MM-dd#HH:mm:ss:SSS"
        ) from None
    return int(t.timestamp() * 1000)


def _reset_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--group", required=True)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-s", "--timestamp", required=True, help="now, ms, or yyyy-MM-dd#HH:mm:ss:SSS")
    p.add_argument("-f", "--force", default="true", help="false: never move an offset forward")
    p.add_argument("--json", action="store_true", help="JSON output")


def _reset(admin: Admin, a: argparse.Namespace) -> None:
    ts = _parse_timestamp(a.timestamp)
    force = _bool(a.force)
    offsets = admin.reset_offset_by_time(a.group, a.topic, ts, force)
    queues = sorted(offsets, key=lambda mq: (mq.broker_name, mq.queue_id))
    if a.json:
        dump_json(
            [
                dict(brokerName=mq.broker_name, queueId=mq.queue_id, offset=offsets[mq])
                for mq in queues
            ]
        )
        return
    row(
        "rollback consumer offset by specified group[%s], topic[%s], force[%s], timestamp(string)[%s], timestamp(long)[%s]",
        a.group,
        a.topic,
        str(force).lower(),
        a.timestamp,
        ts,
    )
    row("%-40s  %-40s  %-40s", "#brokerName", "#queueId", "#offset")
    for mq in queues:
        row("%-40s  %-40d  %-40d", mq.broker_name, mq.queue_id, offsets[mq])


COMMANDS = [
    Command("consumerProgress", "Query consumers's progress, speed", _progress_args, _progress),
    Command(
        "consumerConnection",
        "Query consumer's socket connection, client version and subscription",
        _consumer_connection_args,
        _consumer_connection,
    ),
    Command(
        "producerConnection",
        "Query producer's socket connection and client version",
        _producer_connection_args,
        _producer_connection,
    ),
    Command(
        "updateSubGroup", "Update or create subscription group", _update_group_args, _update_group
    ),
    Command(
        "deleteSubGroup",
        "Delete subscription group from broker.",
        _delete_group_args,
        _delete_group,
    ),
    Command(
        "resetOffsetByTime",
        "Reset consumer offset by timestamp(without client restart).",
        _reset_args,
        _reset,
    ),
]
