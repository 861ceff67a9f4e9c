"""How the source and sink reach the servers: the ACL account their requests are signed with
(``accessKey`` / ``secretKey``) and TLS (``tls``, ``tlsCaFile``, ``tlsVerify``,
``tlsCertFile`` / ``tlsKeyFile``), the same for every client they make (admin, pulls,
producers, transactional decisions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rocketpy.credentials import SessionCredentials
from rocketpy.tls import TlsOptions


@dataclass(frozen=True)
class Access:
    """The account and TLS settings of one read or write (both optional; parsed by
    :func:`pyspark_rocketmq.options.access_of`)."""

    credentials: SessionCredentials | None = None
    tls: TlsOptions | None = None

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``Producer``, ``TransactionProducer`` and ``Admin``."""
        return {"credentials": self.credentials, "tls": self.tls or False}

    def native_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the native ``RemotingClient``."""
        c, t = self.credentials, self.tls
        return {"credentials": c.native() if c else None, "tls": t.native() if t else None}


#: Neither an account nor TLS: the default of every read and write.
PLAIN = Access()
