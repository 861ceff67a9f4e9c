"""What 2.x's producers and consumers share: settings given by setters between construction
and ``start()`` (rocketpy takes them when the real client is made, so a setter after the
start raises instead of changing nothing), and the setters both kinds have."""

from __future__ import annotations

import abc
from typing import Any

from rocketpy.credentials import SessionCredentials
from rocketpy.errors import ClientError


def text(value: str | bytes) -> str:
    """2.x takes ``str`` or UTF-8 ``bytes`` wherever it takes a name."""
    return value.decode("utf-8") if isinstance(value, bytes) else value


class ClientSettings(abc.ABC):
    """The settings of one 2.x client until its ``start()``."""

    #: The rocketpy class doing the work, named in refusals.
    NATIVE = "rocketpy.Producer"

    def __init__(self, group: str | bytes) -> None:
        self._group = text(group)
        self._namesrv = ""
        self._options: dict[str, Any] = {}

    @abc.abstractmethod
    def _is_started(self) -> bool:
        """Whether ``start()`` made the rocketpy client."""

    def _set(self, what: str, **options: Any) -> None:
        if self._is_started():
            raise ClientError(f"{what} after start(): call it before start()")
        self._options.update(options)

    def set_name_server_address(self, addr: str | bytes) -> None:
        """Sets the name servers (``host:port``, several separated by ``;``)."""
        self._set("set_name_server_address")
        self._namesrv = text(addr)

    def set_name_server_domain(self, domain: str | bytes) -> None:
        """2.x's name-server address service: rocketpy has none."""
        raise NotImplementedError(
            "rocketpy does not look name servers up from an address service: give them with "
            f"set_name_server_address ({self.NATIVE}(group, namesrv_addr))"
        )

    def set_session_credentials(
        self, access_key: str | bytes, access_secret: str | bytes, channel: str | bytes
    ) -> None:
        """Signs requests with an ACL account (rocketpy's ``credentials=``). ``channel`` is
        not sent: Apache RocketMQ's ACL has no channels (its Java client does not send one
        either)."""
        account = SessionCredentials(text(access_key), text(access_secret))
        self._set("set_session_credentials", credentials=account)

    def set_instance_name(self, name: str | bytes) -> None:
        """Sets the client instance name (rocketpy's ``instance_name``)."""
        self._set("set_instance_name", instance_name=text(name))

    def set_message_trace(self, message_trace: bool) -> None:
        """2.x's message traces: rocketpy sends none (``False`` is accepted)."""
        if message_trace:
            raise NotImplementedError(
                "rocketpy does not send message traces; it exports client metrics instead "
                "(rocketpy.metrics, RocketMQ 5.x metric names)"
            )
        self._set("set_message_trace")
