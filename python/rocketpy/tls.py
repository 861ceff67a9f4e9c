"""TLS from clients to name servers and brokers whose listeners run with
``tls.server.mode=permissive`` or ``enforcing`` (RocketMQ's keys)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TlsOptions:
    """How a client opens its connections with TLS.

    Args:
        ca_file: the CAs that sign the servers' certificates (PEM); ``None``: the system's.
        verify: check each server's certificate against them, for the address connected to
            (a host name or IP address the certificate must carry). ``False`` only encrypts,
            as RocketMQ's own clients do by default (``tls.client.authServer=false``): it
            does not prove whom the client talks to.
        cert_file: a client certificate (PEM) for servers that ask for one
            (``tls.server.need.client.auth``).
        key_file: its private key (PEM, unencrypted).
    """

    ca_file: str | None = None
    verify: bool = True
    cert_file: str | None = None
    key_file: str | None = None

    def __post_init__(self) -> None:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")

    def native(self) -> tuple[str | None, bool, str | None, str | None]:
        """The form the native client takes."""
        return self.ca_file, self.verify, self.cert_file, self.key_file


def tls_of(tls: bool | TlsOptions | None, tls_ca_file: str | None = None) -> TlsOptions | None:
    """The options meant by a client's ``tls`` / ``tls_ca_file`` arguments: ``tls=True``
    (with ``tls_ca_file``, or the system's CAs), a :class:`TlsOptions`, or neither."""
    if isinstance(tls, TlsOptions):
        if tls_ca_file is not None:
            raise ValueError("give tls_ca_file inside TlsOptions, not beside it")
        return tls
    if tls:
        return TlsOptions(ca_file=tls_ca_file)
    if tls_ca_file is not None:
        raise ValueError("tls_ca_file needs tls=True")
    return None
