"""TLS on the listeners (RocketMQ's ``tls.*`` keys): a name server and a broker in enforcing
mode, reached by rocketpy's clients with ``tls=True`` and a CA file and by Python's own TLS
(OpenSSL) with a frame written by hand; plain clients and clients trusting another CA are
refused; permissive mode serves both; client certificates when required. Certificates are
made at run time (tests/tls_certs.py)."""

from __future__ import annotations

import json
import socket
import ssl
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import Cluster, tls_client_settings, tls_server_settings
from tls_certs import Certs, make_certs

from helpers import Collector, fast_config, wait_until
from rocketpy import ConsumeFromWhere, Message, Producer, PushConsumer, TlsOptions
from rocketpy._native import Broker, NameServer
from rocketpy.admin import Admin
from rocketpy.errors import RocketpyError
from rocketpy.mqadmin import main as mqadmin


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def server_keys(certs: Certs, mode: str, **more: str) -> dict[str, str]:
    return tls_server_settings(mode, certs.server_cert, certs.server_key, **more)


def start_cluster(certs: Certs, home: Path, mode: str, **more: str) -> Cluster:
    """A name server and a broker serving TLS in ``mode``, as processes."""
    server = server_keys(certs, mode, **more)
    # The broker's own connections (its registrations) use TLS and check the name server's
    # certificate; a name server that requires client certificates gets the broker's.
    own = (certs.client_cert, certs.client_key) if "tls.server.need.client.auth" in more else ()
    return Cluster(
        home / "store", {**server, **tls_client_settings(certs.ca, *own)}, namesrv_settings=server
    )


@pytest.fixture(scope="module")
def enforcing(certs: Certs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = start_cluster(certs, tmp_path_factory.mktemp("enforcing"), "enforcing")
    try:
        with Admin(cluster.namesrv, tls=True, tls_ca_file=str(certs.ca)) as admin:
            assert wait_until(lambda: admin.master_addrs(), timeout=10), "never registered"
            admin.create_topic("TlsTopic", queues=2)
        yield cluster
    finally:
        cluster.stop()


def test_clients_send_and_consume_over_tls(enforcing: Cluster, certs: Certs):
    with Producer("tls-producer", enforcing.namesrv, tls=True, tls_ca_file=str(certs.ca)) as p:
        for i in range(20):
            p.send(Message("TlsTopic", f"secret-{i}".encode()))
        # Auto-batched asynchronous sends take the same connections.
        futures = [p.send_async(Message("TlsTopic", f"async-{i}".encode())) for i in range(50)]
        assert all(f.result(timeout=10).msg_id for f in futures)
    got = Collector()
    c = PushConsumer(
        "tls-readers",
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        client_config=fast_config(enforcing.namesrv),
        tls=TlsOptions(ca_file=str(certs.ca)),
    )
    c.subscribe("TlsTopic")
    c.register_listener(got)
    c.start()
    try:
        assert len(got.wait_for(70, timeout=30)) >= 70
    finally:
        c.shutdown()


def test_plain_and_untrusting_clients_are_refused(enforcing: Cluster, certs: Certs):
    with Admin(enforcing.namesrv, timeout_ms=2000) as plain, pytest.raises(RocketpyError):
        plain.master_addrs()
    with (
        Admin(enforcing.namesrv, tls=True, tls_ca_file=str(certs.other_ca)) as wrong,
        pytest.raises(RocketpyError, match="certificate"),
    ):
        wrong.master_addrs()
    # Not checking the certificate (RocketMQ clients' default) still encrypts.
    with Admin(enforcing.namesrv, tls=TlsOptions(verify=False)) as unchecked:
        assert unchecked.master_addrs()
    # The servers went on serving.
    with Admin(enforcing.namesrv, tls=True, tls_ca_file=str(certs.ca)) as admin:
        assert admin.topic_stats("TlsTopic")


def test_mqadmin_over_tls(
    enforcing: Cluster, certs: Certs, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    mqadmin(
        ["topicStatus", "-n", enforcing.namesrv, "-t", "TlsTopic", "--tlsCaFile", str(certs.ca)]
    )
    assert "#Broker Name" in capsys.readouterr().out


def raw_request(sock: socket.socket, code: int, fields: dict[str, str]) -> dict[str, object]:
    """A JSON-header RocketMQ request written by hand, and the response header."""
    header = json.dumps(
        {"code": code, "language": "PYTHON", "version": 401, "opaque": 7, "flag": 0,
         "extFields": fields}
    ).encode()  # fmt: skip
    sock.sendall(struct.pack(">II", 4 + len(header), len(header)) + header)
    length, header_len = struct.unpack(">II", _read(sock, 8))
    response = _read(sock, length - 4)
    return json.loads(response[: header_len & 0xFFFFFF])  # type: ignore[no-any-return]


def _read(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        assert chunk, "closed"
        out += chunk
    return out


def test_openssl_clients_speak_rocketmq_over_tls(enforcing: Cluster, certs: Certs):
    host, port = enforcing.namesrv.rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(certs.ca))
    with (
        socket.create_connection((host, int(port)), timeout=10) as tcp,
        context.wrap_socket(tcp, server_hostname=host) as tls,
    ):
        assert tls.version() in ("TLSv1.2", "TLSv1.3")
        resp = raw_request(tls, 105, {"topic": "TlsTopic"})  # GET_ROUTEINFO_BY_TOPIC
        assert resp["code"] == 0, resp
    host, port = enforcing.broker.rsplit(":", 1)
    with (
        socket.create_connection((host, int(port)), timeout=10) as tcp,
        context.wrap_socket(tcp, server_hostname=host) as tls,
    ):
        resp = raw_request(tls, 28, {})  # GET_BROKER_RUNTIME_INFO
        assert resp["code"] == 0, resp
    # A plain connection to an enforcing server is closed without an answer.
    with (
        socket.create_connection((host, int(port)), timeout=10) as tcp,
        pytest.raises((AssertionError, ConnectionError)),
    ):
        raw_request(tcp, 28, {})


def test_permissive_serves_tls_and_plain(certs: Certs, tmp_path: Path):
    cluster = start_cluster(certs, tmp_path, "permissive")
    try:
        with Admin(cluster.namesrv, tls=True, tls_ca_file=str(certs.ca)) as admin:
            assert wait_until(lambda: admin.master_addrs(), timeout=10)
            admin.create_topic("Mixed", queues=1)
        with Producer("plain-producer", cluster.namesrv) as p:
            p.send(Message("Mixed", b"plain"))
        with Producer("tls-producer", cluster.namesrv, tls=True, tls_ca_file=str(certs.ca)) as p:
            p.send(Message("Mixed", b"tls"))
        with Admin(cluster.namesrv) as admin:
            mq = next(iter(admin.topic_stats("Mixed")))
            assert {m.body for m in admin.pull_messages(mq, 0, 32)} == {b"plain", b"tls"}
    finally:
        cluster.stop()


def test_client_certificates_when_required(certs: Certs, tmp_path: Path):
    more = {"tls.server.need.client.auth": "require", "tls.server.trustCertPath": str(certs.ca)}
    cluster = start_cluster(certs, tmp_path, "enforcing", **more)
    try:
        with_cert = TlsOptions(
            ca_file=str(certs.ca), cert_file=str(certs.client_cert), key_file=str(certs.client_key)
        )
        with Admin(cluster.namesrv, tls=with_cert) as admin:
            assert wait_until(lambda: admin.master_addrs(), timeout=10), "the broker's own cert"
        with (
            Admin(cluster.namesrv, timeout_ms=2000, tls=True, tls_ca_file=str(certs.ca)) as admin,
            pytest.raises(RocketpyError),
        ):
            admin.master_addrs()
    finally:
        cluster.stop()


def test_bad_tls_settings_stop_the_start_with_a_reason(certs: Certs, tmp_path: Path):
    with pytest.raises(RocketpyError, match=r"tls\.server\.certPath and tls\.server\.keyPath"):
        NameServer.start("127.0.0.1", 0, config={"tls.server.mode": "enforcing"})
    with pytest.raises(RocketpyError, match="disabled, permissive or enforcing"):
        NameServer.start("127.0.0.1", 0, config={"tls.server.mode": "on"})
    keys = server_keys(certs, "enforcing")
    keys["tls.server.keyPath"] = str(certs.server_cert)
    with pytest.raises(RocketpyError, match="private key"):
        Broker.start(None, {**keys, "storePathRootDir": str(tmp_path), "listenPort": "0"})
    with pytest.raises(ValueError, match="tls_ca_file needs tls=True"):
        Admin("127.0.0.1:1", tls_ca_file=str(certs.ca))


@pytest.mark.spark
def test_spark_reads_and_writes_over_tls(enforcing: Cluster, certs: Certs, spark):
    with Producer("tls-spark-feed", enforcing.namesrv, tls=True, tls_ca_file=str(certs.ca)) as p:
        for i in range(5):
            p.send(Message("TlsSpark", f"spark-{i}".encode()))
    tls = {"tls": "true", "tlsCaFile": str(certs.ca)}

    def read(**options: str) -> list[bytes]:
        reader = spark.read.format("rocketmq").options(
            namesrv=enforcing.namesrv, topic="TlsSpark", **options
        )
        return [r.body for r in reader.load().select("body").collect()]

    assert {f"spark-{i}".encode() for i in range(5)} <= set(read(**tls))
    with pytest.raises(Exception, match="tls=true"):
        read(tlsCaFile=str(certs.ca))
    # A plain connection to an enforcing name server is closed.
    with pytest.raises(Exception, match="no name server answered"):
        read()
    (
        spark.createDataFrame([(b"from-spark",)], "body binary")
        .write.format("rocketmq")
        .options(namesrv=enforcing.namesrv, topic="TlsSpark", **tls)
        .mode("append")
        .save()
    )
    assert b"from-spark" in read(**tls)
