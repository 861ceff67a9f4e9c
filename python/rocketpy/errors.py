"""The exception hierarchy: every rocketpy error is a :class:`RocketpyError`.

``RocketpyError``
  - ``RemotingError`` (``RemotingTimeoutError``, ``RemotingConnectError``): the network.
  - ``StoreError`` (``StoreLockedError``, ``StoreFullError``, ``CorruptDataError``): the
    message store.
  - ``ConfigError``: invalid settings.
  - ``DataLossError``: messages asked for were deleted by retention.
  - ``ForkedProcessError``: a client, server or store created before ``os.fork()`` was used in
    the child process.
  - ``ClientError``: the client refused or could not complete an operation.
  - ``BrokerResponseError``: a broker or name server answered with an error code.

A send that failed after all its attempts (``retry_times_when_send_failed``) raises the class
of its last attempt's error — a ``BrokerResponseError`` with that answer's ``code``, a
``RemotingConnectError``, a ``RemotingTimeoutError`` — whose ``errors`` attribute lists every
attempt's error in order (each broker answer with its ``code``) and whose ``__cause__`` is the
last one. A failure to reach a server is a ``RemotingError`` subclass with the network error
as its ``__cause__``.
"""

from __future__ import annotations

from rocketpy._native import (
    ConfigError,
    CorruptDataError,
    DataLossError,
    ForkedProcessError,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
    RocketpyError,
    StoreError,
    StoreFullError,
    StoreLockedError,
)

__all__ = [
    "BrokerResponseError",
    "ClientError",
    "ConfigError",
    "CorruptDataError",
    "DataLossError",
    "ForkedProcessError",
    "RemotingConnectError",
    "RemotingError",
    "RemotingTimeoutError",
    "RocketpyError",
    "StoreError",
    "StoreFullError",
    "StoreLockedError",
]


class ClientError(RocketpyError):
    """The client refused an operation (bad argument, wrong state) or could not complete it
    (no route, every retry failed)."""


class BrokerResponseError(RocketpyError):
    """A server answered with an error code.

    Attributes:
        code: the RocketMQ response code (see :class:`rocketpy.protocol.ResponseCode`).
        remark: the server's explanation.
        addr: the server that answered.
        errors: (a send that failed after several attempts) every attempt's error.
    """

    def __init__(
        self, code: int, remark: str | None, addr: str = "", *, message: str | None = None
    ) -> None:
        # RocketMQ's MQBrokerException text, unless the caller tells more (a send's attempts).
        super().__init__(message or f"CODE: {code} DESC: {remark or ''} BROKER: {addr}")
        self.code = code
        self.remark = remark
        self.addr = addr
