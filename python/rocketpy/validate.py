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


def check_body(body: bytes, max_size: int = MAX_MESSAGE_SIZE) -> None:
    """Raises :class:`ClientError` for an empty or oversized body."""
    if not body:
        raise ClientError("the message body is empty")
    if len(body) > max_size:
        raise ClientError(f"the message body size {len(body)} is over the limit {max_size}")
