"""Checks applied before anything is sent (RocketMQ's ``Validators``)."""

from __future__ import annotations

from rocketpy import _native
from rocketpy.errors import ClientError
from rocketpy.protocol import retry_topic

#: Largest body accepted by default (RocketMQ's ``maxMessageSize``).
MAX_MESSAGE_SIZE = 4 * 1024 * 1024


def check_topic(topic: str) -> None:
    """Raises :class:`ClientError` unless ``topic`` is a valid topic name. The rule is the
    broker's own (``rocketpy_protocol::topic``): 1 to 127 characters of letters, digits, ``%``,
    ``|``, ``_`` and ``-``."""
    try:
        _native.validate_topic(topic)
    except _native.InvalidArgumentError as e:
        raise ClientError(str(e).removeprefix("invalid argument: ")) from None


def check_group(group: str) -> None:
    """Raises :class:`ClientError` unless ``group`` is a valid group name: its retry topic
    (``%RETRY%`` + group) must be a valid topic, as the broker requires."""
    try:
        _native.validate_topic(retry_topic(group))
    except _native.InvalidArgumentError:
        raise ClientError(
            f"the specified group {group!r} is invalid: at most 120 characters of letters, "
            "digits, %, |, _ and -"
        ) from None


#: Words of SQL92 filters (RocketMQ's selector grammar): a tag expression of several words
#: with one of them is a filter written for SQL92, not tags.
_SQL_WORDS = frozenset(
    {"AND", "OR", "NOT", "IN", "BETWEEN", "IS", "NULL", "TRUE", "FALSE", "CONTAINS",
     "STARTSWITH", "ENDSWITH"}
)  # fmt: skip
#: Characters of SQL92 comparisons, never in a tag expression.
_SQL_CHARS = frozenset("=<>()'")


def check_tag_expression(expression: str) -> None:
    """Raises :class:`ClientError` unless ``expression`` can be a tag expression: ``*``, or
    tags separated by ``||``. A filter written for SQL92 (``a > 5``, ``TagA && TagB``,
    ``region IN ('eu')``) would be read as a tag that no message has; it is refused instead,
    saying so."""
    expr = expression.strip()
    if expr in ("", "*"):
        return
    why = None
    if "&&" in expr:
        why = "'&&' is not a tag operator"
    elif "|" in expr.replace("||", ""):
        why = "tags are separated by '||', not '|'"
    elif any(not t.strip() for t in expr.split("||")):
        why = "an empty tag between '||'"
    elif any(c in _SQL_CHARS for c in expr):
        why = "comparisons are SQL92, not tags"
    else:
        for tag in expr.split("||"):
            words = tag.split()
            if len(words) > 1 and any(w.upper() in _SQL_WORDS for w in words):
                why = f"{tag.strip()!r} reads as SQL92, not as a tag"
                break
    if why is not None:
        raise ClientError(
            f"{expression!r} is not a tag expression ({why}): write '*' or tags separated by "
            "'||', e.g. 'TagA || TagB', or subscribe with MessageSelector.by_sql(...) for an "
            "SQL92 filter on message properties"
        )


def check_body(body: bytes, max_size: int = MAX_MESSAGE_SIZE) -> None:
    """Raises :class:`ClientError` for an empty or oversized body."""
    if not body:
        raise ClientError("the message body is empty")
    if len(body) > max_size:
        raise ClientError(f"the message body size {len(body)} is over the limit {max_size}")
