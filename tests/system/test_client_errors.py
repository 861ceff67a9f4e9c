"""Client-side validation and failures: clear errors, nothing sent, nothing lost."""

from __future__ import annotations

import pytest

from rocketpy import ClientError, Message, MessageExt, Producer, RemotingConnectError
from rocketpy._native import CorruptDataError, RemotingClient, decode_messages


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
        with pytest.raises(ClientError, match="no name server"):
            p.send(Message("T", b"x"))
    finally:
        p.shutdown()


def test_remoting_errors_and_garbage_bodies():
    client = RemotingClient()
    with pytest.raises(RemotingConnectError):
        client.invoke("127.0.0.1:1", 105, dict(topic="T"), None, 1000)
    with pytest.raises(CorruptDataError):
        decode_messages(b"\x00\x00\x00\x10garbage-garbage-")
    assert decode_messages(b"") == []
    client.shutdown()
    assert MessageExt is not None
