"""An account of RocketMQ's ACL (``aclEnable=true`` on the servers): every request a client
makes is signed with it, as RocketMQ's ``AclClientRPCHook`` signs them, so the same accounts
work against rocketpy and Apache RocketMQ brokers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


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


def read_tools_yml(path: str | Path) -> SessionCredentials | None:
    """The account in RocketMQ's ``conf/tools.yml`` (``accessKey:`` and ``secretKey:`` lines),
    which RocketMQ's mqadmin signs with; ``None`` when the file is absent or names no account.

    The file is flat ``key: value`` YAML; values may be quoted. A file naming one key without
    the other raises ``ValueError`` (signing with half an account can only be refused)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.split(" #", 1)[0].strip()
        if line.startswith("#") or ":" not in line:
            continue
        key, value = (part.strip() for part in line.split(":", 1))
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key] = value
    access_key, secret_key = values.get("accessKey"), values.get("secretKey")
    if not access_key and not secret_key:
        return None
    if not access_key or not secret_key:
        raise ValueError(f"{path}: accessKey and secretKey go together")
    return SessionCredentials(access_key, secret_key)
