"""An account of RocketMQ's ACL (``aclEnable=true`` on the servers): every request a client
makes is signed with it, as RocketMQ's ``AclClientRPCHook`` signs them, so the same accounts
work against rocketpy and Apache RocketMQ brokers."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SessionCredentials:
    """An access key and its secret key (RocketMQ's ``SessionCredentials``).

    Args:
        access_key: the account, as ``plain_acl.yml`` names it.
        secret_key: its secret: it signs requests and is never sent.
        security_token: an optional token sent along (``SecurityToken``).
    """

    access_key: str
    secret_key: str = field(repr=False)
    security_token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.access_key or not self.secret_key:
            raise ValueError("SessionCredentials need an access key and a secret key")

    def native(self) -> tuple[str, str, str | None]:
        """The form the native client takes."""
        return self.access_key, self.secret_key, self.security_token


def credentials_of(
    credentials: SessionCredentials | None,
    access_key: str | None,
    secret_key: str | None,
) -> SessionCredentials | None:
    """``credentials``, or those made of ``access_key`` / ``secret_key`` (both or neither)."""
    if access_key is None and secret_key is None:
        return credentials
    if credentials is not None:
        raise ValueError("give credentials or access_key/secret_key, not both")
    if not access_key or not secret_key:
        raise ValueError("access_key and secret_key go together")
    return SessionCredentials(access_key, secret_key)
