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
    """

    def __init__(self, code: int, remark: str | None, addr: str = "") -> None:
        super().__init__(f"CODE: {code} DESC: {remark or ''} BROKER: {addr}")
        self.code = code
        self.remark = remark
        self.addr = addr
