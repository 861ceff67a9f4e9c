"""Client-side validation and failures: clear errors, nothing sent, nothing lost."""

from __future__ import annotations

import socket

import pytest
from servers import Cluster

from helpers import wait_until
from rocketpy import (
    ClientError,
    ConfigError,
    Message,
    MessageExt,
    Producer,
    RemotingConnectError,
    RemotingTimeoutError,
)
from rocketpy._native import CorruptDataError, RemotingClient, decode_messages
from rocketpy.admin import Admin


def test_invalid_messages_are_refused_before_sending(dev_server):
    with Producer("validation-producer", dev_server.namesrv) as p:
        for topic in ["", "a/b", "../x", "x" * 128, "a\0b"]:
            with pytest.raises(ClientError):
                p.send(Message(topic, b"x"))
        with pytest.raises(ClientError, match="empty"):
            p.send(Message("Valid", b""))
        with pytest.raises(ClientError, match="over the limit"):
            p.send(Message("Valid", b"x" * (4 * 1024 * 1024 + 1)))
        assert p.send(Message("Valid", b"ok")).queue_offset == 0


def test_unstarted_producer_and_dead_name_server():
    p = Producer("idle-producer", "127.0.0.1:1")
    with pytest.raises(ClientError, match="not started"):
        p.send(Message("T", b"x"))
    p.start()
    try:
        # A network failure keeps its type and its cause, down to the operating system's.
        with pytest.raises(RemotingConnectError, match="no name server answered") as e:
            p.send(Message("T", b"x"))
        assert isinstance(e.value.__cause__, RemotingConnectError)
        assert isinstance(e.value.__cause__.__cause__, ConnectionRefusedError)
    finally:
        p.shutdown()


def test_a_broker_or_grpc_port_given_as_the_name_server_says_so(tmp_path):
    cluster = Cluster(tmp_path / "store", grpc=True)
    try:
        for addr, what in [(cluster.broker, "as a RocketMQ broker"), (cluster.grpc, "gRPC")]:
            wrong = f"{addr} is not a name server.*{what}"
            with Producer("wrong-namesrv", addr) as p, pytest.raises(ConfigError, match=wrong):
                p.send(Message("T", b"x"))
            with Admin(addr) as admin, pytest.raises(ConfigError, match="not a name server"):
                admin.cluster_info()
        # A wrong address before a right one: the right one answers.
        with Admin(f"{cluster.broker};{cluster.namesrv}") as admin:
            assert admin.cluster_info()["brokerAddrTable"]
    finally:
        cluster.stop()


def test_a_send_to_a_dead_broker_keeps_every_attempts_error(tmp_path):
    cluster = Cluster(tmp_path / "store")
    try:
        with Admin(cluster.namesrv) as admin:
            assert wait_until(lambda: admin.master_addrs(), timeout=10), "never registered"
            admin.create_topic("DeadBrokerTopic", queues=2)
        with Producer("dead-broker", cluster.namesrv, send_timeout_ms=20_000) as p:
            p.send(Message("DeadBrokerTopic", b"first"))
            cluster.broker_proc.kill()
            # The name server still lists the broker (it expires after 120 s of silence):
            # each attempt fails to connect, and the error says so with its type.
            with pytest.raises(RemotingConnectError, match="failed after 3 attempt") as e:
                p.send(Message("DeadBrokerTopic", b"second"))
            attempts = e.value.errors  # type: ignore[attr-defined]
            assert len(attempts) == 3
            assert all(isinstance(a, RemotingConnectError) for a in attempts)
            assert e.value.__cause__ is attempts[-1]
    finally:
        cluster.namesrv_proc.stop()


def test_remoting_errors_and_garbage_bodies():
    client = RemotingClient()
    with pytest.raises(RemotingConnectError) as refused:
        client.invoke("127.0.0.1:1", 105, dict(topic="T"), None, 1000)
    assert isinstance(refused.value.__cause__, ConnectionRefusedError)
    # A peer that accepts and never answers: a timeout, with Python's TimeoutError as cause.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        addr = f"127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(RemotingTimeoutError) as timed_out:
            client.invoke(addr, 105, dict(topic="T"), None, 200)
        assert isinstance(timed_out.value.__cause__, TimeoutError)
    with pytest.raises(CorruptDataError):
        decode_messages(b"\x00\x00\x00\x10garbage-garbage-")
    assert decode_messages(b"") == []
    client.shutdown()
    assert MessageExt is not None
