"""Message commands: queryMsgById, queryMsgByKey, queryMsgByUniqueKey, queryMsgByOffset."""

from __future__ import annotations

import argparse
import base64
import tempfile
from pathlib import Path

from rocketpy._native import MessageExt
from rocketpy.admin import Admin
from rocketpy.errors import ClientError
from rocketpy.message import MessageQueue
from rocketpy.mqadmin.command import Command
from rocketpy.mqadmin.output import dump_json, human_time, row


def _body_file(msg: MessageExt) -> str:
    """Writes the body where mqadmin does (``<tmp>/rocketmq/msgbodys/<id>``)."""
    folder = Path(tempfile.gettempdir()) / "rocketmq" / "msgbodys"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / msg.msg_id
    path.write_bytes(msg.body)
    return str(path)


def _tracks(admin: Admin, msg: MessageExt) -> list[str]:
    """mqadmin's ``MessageTrack`` lines: per group consuming the topic, whether it consumed
    the message (its committed offset is past it), is offline, or consumes by broadcasting."""
    try:
        groups = admin.groups_of_topic(msg.topic)
    except ClientError:
        return []
    out = []
    for group in groups:
        conn = admin.consumer_connection(group)
        if conn is None:
            kind = "NOT_ONLINE"
        elif conn.message_model == "BROADCASTING":
            kind = "CONSUME_BROADCASTING"
        else:
            mq = MessageQueue(msg.topic, msg.broker_name or "", msg.queue_id)
            committed = admin.consume_stats(group, msg.topic).offsets.get(mq)
            done = committed is not None and committed.consumer_offset > msg.queue_offset
            kind = "CONSUMED" if done else "NOT_CONSUME_YET"
        out.append(f"MessageTrack [consumerGroup={group}, trackType={kind}, exceptionDesc=null]")
    return out


def print_msg(
    admin: Admin, msg: MessageExt | None, as_json: bool = False, offset_id: bool = True
) -> None:
    """mqadmin's ``printMsg``: one field per line (queryMsgByUniqueKey's starts at Topic,
    without ``OffsetID``), the body in a file, then the tracks."""
    if msg is None:
        raise ClientError("Message not found!")
    props = msg.properties
    if as_json:
        dump_json(
            dict(
                offsetMsgId=msg.offset_msg_id,
                msgId=msg.msg_id,
                topic=msg.topic,
                tags=msg.tags,
                keys=msg.keys,
                queueId=msg.queue_id,
                queueOffset=msg.queue_offset,
                commitLogOffset=msg.commit_log_offset,
                reconsumeTimes=msg.reconsume_times,
                bornTimestamp=msg.born_timestamp,
                storeTimestamp=msg.store_timestamp,
                bornHost=msg.born_host,
                storeHost=msg.store_host,
                sysFlag=msg.sys_flag,
                properties=props,
                body=msg.body.decode("utf-8", "replace"),
                bodyBase64=base64.b64encode(msg.body).decode(),
            )
        )
        return
    if offset_id:
        row("%-20s %s", "OffsetID:", msg.offset_msg_id)
    row("%-20s %s", "Topic:", msg.topic)
    row("%-20s %s", "Tags:", f"[{msg.tags}]")
    row("%-20s %s", "Keys:", f"[{msg.keys}]")
    row("%-20s %d", "Queue ID:", msg.queue_id)
    row("%-20s %d", "Queue Offset:", msg.queue_offset)
    row("%-20s %d", "CommitLog Offset:", msg.commit_log_offset)
    row("%-20s %d", "Reconsume Times:", msg.reconsume_times)
    row("%-20s %s", "Born Timestamp:", human_time(msg.born_timestamp))
    row("%-20s %s", "Store Timestamp:", human_time(msg.store_timestamp))
    row("%-20s %s", "Born Host:", msg.born_host)
    row("%-20s %s", "Store Host:", msg.store_host)
    row("%-20s %d", "System Flag:", msg.sys_flag)
    row(
        "%-20s %s",
        "Properties:",
        "{" + ", ".join(f"{k}={v}" for k, v in sorted(props.items())) + "}",
    )
    row("%-20s %s", "Message Body Path:", _body_file(msg))
    tracks = _tracks(admin, msg)
    print()
    if not tracks:
        print("\nWARN: No Consumer")
    for t in tracks:
        print(t)


def _by_unique_key(admin: Admin, topic: str, msg_id: str) -> MessageExt | None:
    found = [m for m in admin.query_message(topic, msg_id) if m.msg_id == msg_id]
    return found[0] if found else None


def _by_id_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-i",
        "--msgId",
        required=True,
        help="message id(s), comma separated: the id a producer returned or the offset id",
    )
    p.add_argument(
        "-t", "--topic", help="the topic of a producer's id (default: every topic is searched)"
    )
    p.add_argument("--json", action="store_true", help="JSON output")


def _by_id(admin: Admin, a: argparse.Namespace) -> None:
    for msg_id in (i.strip() for i in a.msgId.split(",") if i.strip()):
        print_msg(admin, admin.view_message(msg_id, topic=a.topic), a.json)


def _by_key_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-k", "--msgKey", required=True)
    p.add_argument("-b", "--beginTimestamp", type=int, default=0)
    p.add_argument("-e", "--endTimestamp", type=int, default=2**62)
    p.add_argument("-c", "--maxNum", type=int, default=64)
    p.add_argument("--json", action="store_true", help="JSON output")


def _by_key(admin: Admin, a: argparse.Namespace) -> None:
    msgs = admin.query_message(a.topic, a.msgKey, a.maxNum, a.beginTimestamp, a.endTimestamp)
    keyed = [m for m in msgs if a.msgKey in (m.keys or "").split(" ") or m.msg_id == a.msgKey]
    if a.json:
        dump_json(
            [
                dict(
                    msgId=m.msg_id,
                    offsetMsgId=m.offset_msg_id,
                    queueId=m.queue_id,
                    queueOffset=m.queue_offset,
                )
                for m in keyed
            ]
        )
        return
    row("%-50s %4s %40s", "#Message ID", "#QID", "#Offset")
    for m in keyed:
        row("%-50s %4d %40d", m.msg_id, m.queue_id, m.queue_offset)


def _by_unique_key_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-i", "--msgId", required=True, help="the message id a producer returned")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("--json", action="store_true", help="JSON output")


def _by_unique(admin: Admin, a: argparse.Namespace) -> None:
    print_msg(admin, _by_unique_key(admin, a.topic, a.msgId.strip()), a.json, offset_id=False)


def _by_offset_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-b", "--brokerName", required=True)
    p.add_argument("-i", "--queueId", type=int, required=True)
    p.add_argument("-o", "--offset", type=int, required=True)
    p.add_argument("--json", action="store_true", help="JSON output")


def _by_offset(admin: Admin, a: argparse.Namespace) -> None:
    mq = MessageQueue(a.topic, a.brokerName, a.queueId)
    print_msg(admin, admin.pull_one(mq, a.offset), a.json)


COMMANDS = [
    Command("queryMsgById", "Query Message by Id", _by_id_args, _by_id),
    Command("queryMsgByKey", "Query Message by Key", _by_key_args, _by_key),
    Command("queryMsgByUniqueKey", "Query Message by Unique key", _by_unique_key_args, _by_unique),
    Command("queryMsgByOffset", "Query Message by offset", _by_offset_args, _by_offset),
]
