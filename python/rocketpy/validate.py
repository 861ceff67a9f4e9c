"""Checks applied before anything is sent (RocketMQ's ``Validators``)."""

from __future__ import annotations

import re

from rocketpy.errors import ClientError

TOPIC_MAX_LENGTH = 127
_TOPIC = re.compile(r"^[%|a-zA-Z0-9_-]+$")
#: Largest body accepted by default (RocketMQ's ``maxMessageSize``).
MAX_MESSAGE_SIZE = 4 * 1024 * 1024


def check_topic(topic: str) -> None:
    """Raises :class:`ClientError` unless ``topic`` is a valid topic name."""
    if not topic or not topic.strip():
        raise ClientError("the specified topic is blank")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise ClientError(f"the specified topic is longer than {TOPIC_MAX_LENGTH} characters")
    if not _TOPIC.match(topic):
        raise ClientError(
            f"the specified topic {topic!r} contains illegal characters; "
            "allowed: letters, digits, %, |, _ and -"
        )


def check_group(group: str) -> None:
    """Raises :class:`ClientError` unless ``group`` is a valid group name."""
    if not group or len(group) > 255 or not _TOPIC.match(group):
        raise ClientError(f"the specified group {group!r} is invalid (letters, digits, %, |, _, -)")


def check_body(body: bytes, max_size: int = MAX_MESSAGE_SIZE) -> None:
    """Raises :class:`ClientError` for an empty or oversized body."""
    if not body:
        raise ClientError("the message body is empty")
    if len(body) > max_size:
        raise ClientError(f"the message body size {len(body)} is over the limit {max_size}")
