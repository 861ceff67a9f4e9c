"""Topic commands: updateTopic, deleteTopic, topicList, topicRoute, topicStatus."""

from __future__ import annotations

import argparse
import json

from rocketpy.admin import Admin
from rocketpy.errors import ClientError
from rocketpy.mqadmin.command import Command, cut, no_master, perm_text
from rocketpy.mqadmin.output import dump_json, human_time, row
from rocketpy.protocol import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX


def _update_topic_args(p: argparse.ArgumentParser) -> None:
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("-b", "--brokerAddr", help="create the topic on this broker")
    target.add_argument("-c", "--clusterName", help="create the topic on every master of it")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-r", "--readQueueNums", type=int, default=8)
    p.add_argument("-w", "--writeQueueNums", type=int, default=8)
    p.add_argument("-p", "--perm", type=int, default=6, help="4 read, 2 write, 6 both")
    p.add_argument("-o", "--order", default="false", help="true for an ordered topic")
    p.add_argument(
        "-a",
        "--attributes",
        help="RocketMQ 5 attribute changes, e.g. +message.type=FIFO (or -message.type)",
    )


def _update_topic(admin: Admin, a: argparse.Namespace) -> None:
    if a.readQueueNums != a.writeQueueNums:
        # Admin.create_topic takes one count; a different read count is RocketMQ's way of
        # shrinking a topic, which rocketpy does not do.
        raise ClientError("readQueueNums must equal writeQueueNums")
    targets = [a.brokerAddr] if a.brokerAddr else admin.master_addrs(a.clusterName)
    if not targets:
        raise no_master(admin, a.clusterName)
    order = str(a.order).lower() == "true"
    for addr in targets:
        admin.create_topic(
            a.topic, a.writeQueueNums, a.perm, broker_addrs=[addr], order=order,
            attributes=a.attributes,
        )  # fmt: skip
        row("create topic to %s success.", addr)
    row(
        "TopicConfig [topicName=%s, readQueueNums=%d, writeQueueNums=%d, perm=%s, "
        "topicFilterType=SINGLE_TAG, topicSysFlag=0, order=%s]",
        a.topic,
        a.readQueueNums,
        a.writeQueueNums,
        perm_text(a.perm),
        str(order).lower(),
    )


def _delete_topic_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-c", "--clusterName", required=True)


def _delete_topic(admin: Admin, a: argparse.Namespace) -> None:
    admin.delete_topic(a.topic, a.clusterName)
    row("delete topic [%s] from cluster [%s] success.", a.topic, a.clusterName)
    row("delete topic [%s] from NameServer success.", a.topic)


def _topic_list_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-c", "--clusterModel", action="store_true", help="with clusters and consumer groups"
    )
    p.add_argument("--json", action="store_true", help="JSON output")


def _cluster_of(topic: str, admin: Admin, info: dict) -> str:  # type: ignore[type-arg]
    route = admin.topic_route(topic)
    names = {b.broker_name for b in route.broker_datas} if route else set()
    for cluster, brokers in sorted((info.get("clusterAddrTable") or {}).items()):
        if names & set(brokers):
            return str(cluster)
    return ""


def _topic_list(admin: Admin, a: argparse.Namespace) -> None:
    topics = admin.topic_list()
    if not a.clusterModel:
        if a.json:
            dump_json(topics)
            return
        for t in topics:
            print(t)
        return
    info = admin.cluster_info()
    rows = []
    for topic in topics:
        if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
            continue
        cluster = _cluster_of(topic, admin, info)
        try:
            groups = admin.groups_of_topic(topic) or [""]
        except ClientError:
            groups = [""]
        rows += [(cluster, topic, g) for g in groups]
    if a.json:
        dump_json([dict(cluster=c, topic=t, consumerGroup=g) for c, t, g in rows])
        return
    row("%-20s  %-48s  %-48s", "#Cluster Name", "#Topic", "#Consumer Group")
    for c, t, g in rows:
        row("%-20s  %-64s  %-64s", cut(c, 20), cut(t, 64), cut(g, 64))


def _topic_route_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True)


def _topic_route(admin: Admin, a: argparse.Namespace) -> None:
    route = admin.topic_route_json(a.topic)
    if route is None:
        raise ClientError(f"No topic route info in name server for the topic: {a.topic}")
    print(json.dumps(route, indent=2, sort_keys=True))


def _topic_status_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("--json", action="store_true", help="JSON output")


def _topic_status(admin: Admin, a: argparse.Namespace) -> None:
    stats = admin.topic_stats(a.topic)
    queues = sorted(stats, key=lambda mq: (mq.broker_name, mq.queue_id))
    if a.json:
        dump_json(
            [
                dict(
                    brokerName=mq.broker_name,
                    queueId=mq.queue_id,
                    minOffset=stats[mq].min_offset,
                    maxOffset=stats[mq].max_offset,
                    lastUpdateTimestamp=stats[mq].last_update_timestamp,
                )
                for mq in queues
            ]
        )
        return
    row(
        "%-32s  %-4s  %-20s  %-20s    %s",
        "#Broker Name",
        "#QID",
        "#Min Offset",
        "#Max Offset",
        "#Last Updated",
    )
    for mq in queues:
        o = stats[mq]
        last = human_time(o.last_update_timestamp) if o.last_update_timestamp > 0 else ""
        row(
            "%-32s  %-4d  %-20d  %-20d    %s",
            cut(mq.broker_name, 32),
            mq.queue_id,
            o.min_offset,
            o.max_offset,
            last,
        )


COMMANDS = [
    Command("updateTopic", "Update or create topic", _update_topic_args, _update_topic),
    Command(
        "deleteTopic", "Delete topic from broker and NameServer.", _delete_topic_args, _delete_topic
    ),
    Command("topicList", "Fetch all topic list from name server", _topic_list_args, _topic_list),
    Command("topicRoute", "Examine topic route info", _topic_route_args, _topic_route),
    Command("topicStatus", "Examine topic Status info", _topic_status_args, _topic_status),
]
