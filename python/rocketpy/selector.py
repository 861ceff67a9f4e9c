"""What a consumer subscribes to in a topic: tags or an SQL92 filter on message properties
(RocketMQ's ``MessageSelector``).

>>> from rocketpy import MessageSelector
>>> MessageSelector.by_tag("TagA || TagB")
MessageSelector(expression='TagA || TagB', type='TAG')
>>> MessageSelector.by_sql("region = 'eu' AND amount > 100").type
'SQL92'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rocketpy import _native
from rocketpy.errors import ClientError
from rocketpy.validate import check_tag_expression

#: RocketMQ's expression types (``ExpressionType``).
TAG: Literal["TAG"] = "TAG"
SQL92: Literal["SQL92"] = "SQL92"


@dataclass(frozen=True)
class MessageSelector:
    """A subscription's expression and its type; build one with :meth:`by_tag` or
    :meth:`by_sql` (they check the expression), and pass it to a consumer's ``subscribe``.

    An SQL92 filter is evaluated by the broker on each message's user properties and its
    tags (``TAGS``); a property the message lacks makes a comparison false. Brokers filter
    by SQL92 only with ``enablePropertyFilter=true`` (RocketMQ's key); others refuse such
    subscriptions, and the consumer logs the broker's answer.
    """

    expression: str
    type: Literal["TAG", "SQL92"] = TAG

    @staticmethod
    def by_tag(expression: str = "*") -> MessageSelector:
        """``*`` (every message) or tags separated by ``||``.

        Raises:
            ClientError: ``expression`` cannot be tags (``a > 5``, ``TagA && TagB``); the
                message points to :meth:`by_sql`.
        """
        check_tag_expression(expression)
        return MessageSelector(expression.strip() or "*", TAG)

    @staticmethod
    def by_sql(expression: str) -> MessageSelector:
        """An SQL92 filter (RocketMQ's grammar): comparisons, ``BETWEEN``, ``IN``,
        ``IS [NOT] NULL``, ``CONTAINS`` / ``STARTSWITH`` / ``ENDSWITH``, ``AND``, ``OR``,
        ``NOT``, e.g. ``"region = 'eu' AND amount > 100"``.

        Raises:
            ClientError: ``expression`` does not compile (the message says where).
        """
        check_sql_filter(expression)
        return MessageSelector(expression.strip(), SQL92)


def check_sql_filter(expression: str) -> None:
    """Raises :class:`ClientError` unless ``expression`` is an SQL92 filter the broker
    compiles (the broker's own grammar, run here)."""
    if not expression.strip():
        raise ClientError("an SQL92 filter cannot be empty; subscribe with '*' for everything")
    try:
        _native.validate_sql_filter(expression)
    except _native.InvalidArgumentError as e:
        raise ClientError(
            f"{expression!r} is not an SQL92 filter: {str(e).removeprefix('invalid argument: ')}"
        ) from None


def selector_of(expression: str | MessageSelector | None) -> MessageSelector:
    """A subscribe argument as a selector: a string is a tag expression (checked).

    Raises:
        TypeError: anything else — a callable (the 2.x client's ``subscribe(topic, callback)``)
            names ``register_listener``.
    """
    if callable(expression):
        raise TypeError(
            "subscribe(topic, expression) takes a tag expression or a MessageSelector, not a "
            "callback: register the callback with register_listener(callback) (the 2.x "
            "client's subscribe(topic, callback, expression) is two calls here)"
        )
    if expression is not None and not isinstance(expression, (str, MessageSelector)):
        raise TypeError(
            f"a subscription expression is a str or a MessageSelector, not {type(expression).__name__}"
        )
    if isinstance(expression, MessageSelector):
        if expression.type == SQL92:
            check_sql_filter(expression.expression)
            return expression
        return MessageSelector.by_tag(expression.expression)
    return MessageSelector.by_tag(expression or "*")
