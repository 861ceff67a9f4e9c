"""The console's changes to the cluster. Each is an :class:`Action`: the page posts its form,
the console shows :meth:`Action.describe` and asks for confirmation, and only a confirmed post
runs :meth:`Action.perform`. Reads never go through here."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rocketpy._util import now_millis
from rocketpy.admin import Admin
from rocketpy.console import queries
from rocketpy.errors import ClientError
from rocketpy.message import Message
from rocketpy.producer import Producer
from rocketpy.protocol import Property

Form = Mapping[str, str]

#: Properties the broker or the client set on the way to a dead-letter queue; a resent
#: message starts without them (it gets a new unique id and delivery count).
_DELIVERY_PROPERTIES = frozenset(
    {
        Property.RETRY_TOPIC,
        Property.REAL_TOPIC,
        Property.REAL_QUEUE_ID,
        Property.UNIQ_KEY,
        Property.RECONSUME_TIME,
        Property.MAX_RECONSUME_TIMES,
        Property.CONSUME_START_TIMESTAMP,
        Property.DELAY_TIME_LEVEL,
        Property.WAIT_STORE_MSG_OK,
        Property.PRODUCER_GROUP,
        "ORIGIN_MESSAGE_ID",
        "MIN_OFFSET",
        "MAX_OFFSET",
        "CLUSTER",
    }
)


def field(form: Form, name: str) -> str:
    """A required, non-blank form field."""
    value = (form.get(name) or "").strip()
    if not value:
        raise ClientError(f"{name} is required")
    return value


def parse_time(text: str) -> int:
    """``now``, milliseconds since the epoch, or a local ``YYYY-MM-DDTHH:MM[:SS]`` (what an
    HTML ``datetime-local`` input sends)."""
    text = text.strip()
    if text == "now":
        return now_millis()
    if text.isdigit():
        return int(text)
    try:
        return int(dt.datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError:
        raise ClientError(f"bad time {text!r}: use now, milliseconds or YYYY-MM-DDTHH:MM") from None


@dataclass(frozen=True)
class Context:
    """What actions act through."""

    admin: Admin
    producer: Callable[[], Producer]


@dataclass(frozen=True)
class Action:
    """One change: its title, the sentence the confirmation shows, and the work."""

    title: str
    describe: Callable[[Form], str]
    perform: Callable[[Context, Form], str]
    #: Where the page goes afterwards, from the form.
    back: Callable[[Form], str]


def _queues(form: Form) -> int:
    text = (form.get("queues") or "8").strip()
    if not text.isdigit() or not 1 <= int(text) <= 1024:
        raise ClientError("queues must be a number from 1 to 1024")
    return int(text)


def _create_topic(ctx: Context, form: Form) -> str:
    name, queues = field(form, "topic"), _queues(form)
    ctx.admin.create_topic(name, queues=queues)
    return f"Topic {name} created with {queues} queues on every master."


def _send_test(ctx: Context, form: Form) -> str:
    topic = field(form, "topic")
    msg = Message(
        topic,
        form.get("body") or "",
        tags=(form.get("tags") or "").strip() or None,
        keys=(form.get("keys") or "").strip() or None,
    )
    result = ctx.producer().send(msg)
    return f"Sent to {result.message_queue}: {result.status.name}, message id {result.msg_id}."


def _reset_offset(ctx: Context, form: Form) -> str:
    group, topic = field(form, "group"), field(form, "topic")
    when = parse_time(field(form, "time"))
    offsets = ctx.admin.reset_offset_by_time(group, topic, when, True)
    return f"Group {group} moved on {topic} in {len(offsets)} queue(s)."


def _resend_dlq(ctx: Context, form: Form) -> str:
    group = field(form, "group")
    msg = queries.dlq_message(
        ctx.admin,
        group,
        field(form, "broker"),
        int(field(form, "queue")),
        int(field(form, "offset")),
    )
    original = msg.get_property(Property.RETRY_TOPIC) or msg.topic
    properties = {k: v for k, v in msg.properties.items() if k not in _DELIVERY_PROPERTIES}
    result = ctx.producer().send(Message(original, msg.body, properties=properties))
    return f"Resent to {original} as {result.msg_id} ({result.status.name})."


ACTIONS: dict[str, Action] = {
    "create-topic": Action(
        "Create topic",
        lambda f: (
            f"Create topic {field(f, 'topic')!r} with {_queues(f)} read and write queues "
            "on every master broker."
        ),
        _create_topic,
        lambda f: f"/topics/{field(f, 'topic')}",
    ),
    "send-test": Action(
        "Send a test message",
        lambda f: (
            f"Send one message to topic {field(f, 'topic')!r}: "
            f"body {len((f.get('body') or '').encode())} bytes, tags {f.get('tags') or '-'}, "
            f"keys {f.get('keys') or '-'}."
        ),
        _send_test,
        lambda f: f"/topics/{field(f, 'topic')}",
    ),
    "reset-offset": Action(
        "Reset consumer offset",
        lambda f: (
            f"Move group {field(f, 'group')!r} on topic {field(f, 'topic')!r} to the first "
            f"message stored at or after {field(f, 'time')} (messages may be consumed again or "
            "skipped)."
        ),
        _reset_offset,
        lambda f: f"/groups/{field(f, 'group')}",
    ),
    "resend-dlq": Action(
        "Resend a dead-letter message",
        lambda f: (
            f"Send the dead-letter message at offset {field(f, 'offset')} of queue "
            f"{field(f, 'queue')} ({field(f, 'broker')}) of group {field(f, 'group')!r} to its "
            "original topic again."
        ),
        _resend_dlq,
        lambda f: f"/dlq?group={field(f, 'group')}",
    ),
}
