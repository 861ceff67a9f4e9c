"""Certificates for TLS tests, made at run time by the ``openssl`` command: a CA, a server
certificate it signed for 127.0.0.1 and localhost, a client certificate it signed, and a
second CA that signed nothing used here."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Certs:
    """PEM files."""

    ca: Path
    other_ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def _ca(dir: Path, name: str) -> tuple[Path, Path]:
    cert, key = dir / f"{name}.pem", dir / f"{name}.key"
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={name}",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    return cert, key


def _leaf(dir: Path, name: str, ca: tuple[Path, Path], ext: str) -> tuple[Path, Path]:
    cert, key, csr, extfile = (dir / f"{name}{s}" for s in (".pem", ".key", ".csr", ".ext"))
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", csr, "-subj", f"/CN={name}",
    )  # fmt: skip
    extfile.write_text(ext)
    _openssl(
        "x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
        "-out", cert, "-days", "2", "-extfile", extfile,
    )  # fmt: skip
    return cert, key


def make_certs(dir: Path) -> Certs:
    """Writes the certificates under ``dir``."""
    ca = _ca(dir, "ca")
    other = _ca(dir, "other-ca")
    server = _leaf(
        dir,
        "server",
        ca,
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
    )
    client = _leaf(dir, "client", ca, "extendedKeyUsage=clientAuth\n")
    return Certs(ca[0], other[0], server[0], server[1], client[0], client[1])
