"""TLS with clients this project did not write: rocketmq-client-rust (``use_tls``, checking
the servers' certificates against a CA file) sends and consumes through a name server and a
broker that accept TLS only (``tls.server.mode=enforcing``), and the official 5.x Python
client (gRPC's own TLS) does through the broker's gRPC endpoint. The C++ client of PyPI
``rocketmq`` 0.4.4 has no TLS. Certificates are made at run time (tests/tls_certs.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import Cluster, tls_client_settings, tls_server_settings
from tls_certs import Certs, make_certs

from peerlib import Peer, compat_cluster, py5, rust
from rocketpy import Message, Producer
from rocketpy.admin import Admin


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("peer-certs"))


@pytest.fixture(scope="module")
def tls_cluster(certs: Certs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    server = tls_server_settings("enforcing", certs.server_cert, certs.server_key)
    c = compat_cluster(
        tmp_path_factory.mktemp("peer-tls") / "store",
        # The broker's registrations go over TLS too, checking the name server.
        {**server, **tls_client_settings(certs.ca)},
        grpc=True,
        namesrv_settings=server,
    )
    with Admin(c.namesrv, tls=True, tls_ca_file=str(certs.ca)) as admin:
        for topic in ("PeerTls-rust", "PeerTls-py5"):
            admin.create_topic(topic, queues=2, broker_addrs=[c.broker])
    yield c
    c.stop()


@pytest.mark.features("TLS (enforcing): client checks the server's certificate", clients=["rust"])
def test_rust_client_sends_and_consumes_over_tls(
    tls_cluster: Cluster, certs: Certs, peers: list[Peer], tmp_path: Path
):
    tls = dict(namesrv=tls_cluster.namesrv, tls_ca=str(certs.ca))
    c = rust(
        peers, tmp_path, action="consume", group="peer-tls-rust", topic="PeerTls-rust",
        from_where="first", timeout=120, **tls,
    )  # fmt: skip
    assert c.wait_for("ready")
    p = rust(
        peers, tmp_path, action="produce", topic="PeerTls-rust", count=5, prefix="rust",
        mode="sync", **tls,
    )  # fmt: skip
    assert len([e for e in p.finish() if e["event"] == "sent"]) == 5
    received = c.wait_for("received", 5, timeout=90)
    c.finish()
    assert sorted(e["body"] for e in received) == [f"rust-{i}" for i in range(5)]


@pytest.mark.features("TLS (enforcing): client checks the server's certificate", clients=["py5"])
def test_5x_client_sends_and_receives_over_tls(
    tls_cluster: Cluster, certs: Certs, peers: list[Peer], tmp_path: Path
):
    tls = dict(endpoint=tls_cluster.grpc, tls_ca=str(certs.ca))
    p = py5(peers, tmp_path, action="produce", topic="PeerTls-py5", count=3, prefix="five", **tls)
    assert len([e for e in p.finish() if e["event"] == "sent"]) == 3
    with Producer("to-py5-tls", tls_cluster.namesrv, tls=True, tls_ca_file=str(certs.ca)) as prod:
        prod.send(Message("PeerTls-py5", b"from-rocketpy"))
    c = py5(
        peers, tmp_path, action="simple_consume", group="py5-tls", topic="PeerTls-py5",
        count=4, timeout=90, **tls,
    )  # fmt: skip
    acked = [e["body"] for e in c.finish() if e["event"] == "acked"]
    assert sorted(acked) == sorted(["five-0", "five-1", "five-2", "from-rocketpy"])
