"""The producer's one retry policy: which failures a send tries again on another broker, how
many attempts it gets, and how its final failure reads — the same for synchronous sends,
asynchronous sends, and the messages of a failed auto-batched request."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from rocketpy._future import SendFuture
from rocketpy.errors import (
    BrokerResponseError,
    ClientError,
    RemotingError,
    RemotingTimeoutError,
    RocketpyError,
)
from rocketpy.message import SendResult
from rocketpy.producer._selectors import SendCallback
from rocketpy.protocol import ResponseCode

log = logging.getLogger("rocketpy.producer")

#: Broker answers after which a send is retried (RocketMQ's ``retryResponseCodes``).
RETRY_CODES = frozenset(
    {
        ResponseCode.TOPIC_NOT_EXIST,
        ResponseCode.SERVICE_NOT_AVAILABLE,
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.SYSTEM_BUSY,
        ResponseCode.NO_PERMISSION,
    }
)


@dataclass(frozen=True)
class RetryPolicy:
    """A send gets ``attempts`` tries (RocketMQ's ``retryTimesWhenSendFailed`` + 1, or the
    async setting + 1), each on another broker when there is one, all within the send's
    timeout. What must stay true: an answer the broker gave for a reason a retry cannot fix
    (a refused message, a permission) is never retried — the caller gets it as it is."""

    attempts: int

    @staticmethod
    def of(retries: int) -> RetryPolicy:
        """The policy of ``retries`` extra attempts (negative: none)."""
        return RetryPolicy(1 + max(0, retries))

    @staticmethod
    def retryable(error: BaseException) -> bool:
        """Whether another broker may succeed where ``error`` happened: the broker answers in
        :data:`RETRY_CODES`, and failures to reach a broker or get its answer."""
        if isinstance(error, BrokerResponseError):
            return error.code in RETRY_CODES
        return isinstance(error, (RemotingError, ClientError))

    def more_after(self, attempt: int) -> bool:
        """Whether attempt number ``attempt`` (from 0) may be followed by another."""
        return attempt + 1 < self.attempts

    def note(self, mq: object, attempt: int, error: BaseException) -> None:
        """Logs the failed attempt number ``attempt`` (from 0) to ``mq``."""
        log.warning("send to %s failed (attempt %d/%d): %s", mq, attempt + 1, self.attempts, error)

    @staticmethod
    def gave_up(topic: str, errors: list[BaseException]) -> RocketpyError:
        """The error of a send that used its attempts or its time: of the class of the last
        attempt's error (a :class:`BrokerResponseError` keeps that answer's ``code``,
        ``remark`` and ``addr``), its message naming every attempt's error, ``errors`` the
        attempts' errors in order and ``__cause__`` the last one. No attempt at all (the time
        was used up first) is a :class:`RemotingTimeoutError`."""
        if not errors:
            return RemotingTimeoutError(f"send to topic {topic!r} timed out before an attempt")
        last = errors[-1]
        what = f"send to topic {topic!r} failed after {len(errors)} attempt(s): " + "; ".join(
            f"[{i + 1}] {e}" for i, e in enumerate(errors)
        )
        error: RocketpyError
        if isinstance(last, BrokerResponseError):
            error = BrokerResponseError(last.code, last.remark, last.addr, message=what)
        elif isinstance(last, RocketpyError):
            error = type(last)(what)
        else:
            error = ClientError(what)
        # Native exception classes take no extra constructor arguments: the attribute is set.
        setattr(error, "errors", list(errors))  # noqa: B010
        error.__cause__ = last
        return error


def complete(
    future: SendFuture[SendResult],
    callback: SendCallback | None,
    result: SendResult | None,
    error: BaseException | None,
) -> None:
    """Ends one asynchronous send: the future, then the callback (on the callback thread).
    A future the caller cancelled stays cancelled; the callback still learns the outcome."""
    future._finish(result, error)
    if callback is not None:
        try:
            callback(result, error)
        except Exception:
            log.exception("a send callback raised")
