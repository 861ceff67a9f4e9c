"""Hostile and broken input: each is refused (an error answer or a closed connection), the
store directory is unchanged outside its own tree, and a well-formed client is served
normally afterwards."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest
from rmq_wire import JSON, ROCKETMQ, Wire
from test_conformance import (
    GET_MAX_OFFSET,
    PULL_MESSAGE,
    SEND_MESSAGE_V2,
    SUCCESS,
    create_topic,
    send_v2,
)


def served_normally(addr: str) -> None:
    with Wire(addr) as w:
        assert w.call(GET_MAX_OFFSET, {"topic": "TBW102", "queueId": "0"}).code == SUCCESS


def tree(root: Path) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


def test_garbage_frames_close_only_that_connection(dev_server):
    cases = {
        "garbage": b"\x13\x37 hello, this is not a frame at all \x00\xff" * 4,
        "2 GiB length": struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 16,
        "negative length": struct.pack(">i", -5) + b"\x00" * 16,
        "header longer than frame": struct.pack(">ii", 8, 500) + b"\x00" * 4,
        "header not JSON": struct.pack(">ii", 4 + 9, 9) + b"not json!",
        "JSON without code": struct.pack(">ii", 4 + 13, 13) + b'{"opaque": 1}',
        "unknown serialisation": struct.pack(">ii", 4 + 2, (9 << 24) | 2) + b"{}",
        "binary header lies": struct.pack(">ii", 4 + 17, (1 << 24) | 17)
        + struct.pack(">hBhii", 30, 0, 1, 1, 0)
        + struct.pack(">i", 999),
    }
    for name, data in cases.items():
        for addr in (dev_server.broker, dev_server.namesrv):
            with Wire(addr) as w:
                w.send_raw(data)
                assert w.is_closed_by_peer(), f"{name}: connection should be closed"
            served_normally(dev_server.broker)


def test_missing_and_invalid_fields_are_named(dev_server):
    with Wire(dev_server.broker, ROCKETMQ) as w:
        r = w.call(
            SEND_MESSAGE_V2,
            {"a": "g", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0"},
            b"x",
        )
        assert r.code != SUCCESS and "topic" in (r.remark or ""), r.remark
        r = w.call(PULL_MESSAGE, {"consumerGroup": "g", "topic": "TBW102"})
        assert r.code != SUCCESS and "queueId" in (r.remark or ""), r.remark
        r = w.call(GET_MAX_OFFSET, {"topic": "TBW102", "queueId": "not-a-number"})
        assert r.code != SUCCESS and "queueId" in (r.remark or ""), r.remark
        r = w.call(34, None, b"{not json")  # HEART_BEAT with a broken body
        assert r.code != SUCCESS and "HeartbeatData" in (r.remark or "")
        r = w.call(41, None, b"[]")  # LOCK_BATCH_MQ with the wrong body shape
        assert r.code != SUCCESS
    served_normally(dev_server.broker)


def test_hostile_topic_names_never_reach_the_file_system(dev_server):
    store = Path(dev_server.store)
    outside_before = tree(store.parent)
    bad = ["../x", "a/b", "x" * 128, "nul\x00byte", "..", "a\\b", " ", "é"]
    with Wire(dev_server.broker, JSON) as w:
        for topic in bad:
            assert send_v2(w, topic, b"evil").code != SUCCESS, topic
            assert create_topic(w, topic).code != SUCCESS, topic
            r = w.call(PULL_MESSAGE, {"consumerGroup": "g", "topic": topic, "queueId": "0", "queueOffset": "0",
                                      "maxMsgNums": "1", "sysFlag": "4", "commitOffset": "0",
                                      "suspendTimeoutMillis": "0", "subscription": "*"})  # fmt: skip
            assert r.code != SUCCESS
        # Batch and send-back paths, too.
        assert (
            w.call(
                320,
                {
                    "a": "g",
                    "b": "../x",
                    "c": "TBW102",
                    "d": "4",
                    "e": "0",
                    "f": "0",
                    "g": "1",
                    "h": "0",
                },
                b"",
            ).code
            != SUCCESS
        )
        assert w.call(36, {"offset": "0", "group": "../evil", "delayLevel": "0"}).code != SUCCESS
    outside_after = tree(store.parent)
    inside = {p for p in outside_after - outside_before if p.startswith(store.name + os.sep)}
    assert outside_after - outside_before == inside, "nothing was created outside the store"
    names = set(os.listdir(store / "consumequeue")) if (store / "consumequeue").exists() else set()
    assert not names & set(bad)
    topics = (
        json.loads((store / "config" / "topics.json").read_text())["topicConfigTable"]
        if (store / "config" / "topics.json").exists()
        else {}
    )
    assert not set(topics) & set(bad)
    served_normally(dev_server.broker)


def test_oversized_body_and_unknown_codes(dev_server):
    with Wire(dev_server.broker) as w:
        r = send_v2(w, "BigTopic", b"x" * (4 * 1024 * 1024 + 1))
        assert r.code == 13, "MESSAGE_ILLEGAL"
        assert w.call(12345).code == 3
    # A frame over 16 MiB is refused at the frame layer.
    with Wire(dev_server.broker) as w:
        w.send_raw(struct.pack(">ii", 17 * 1024 * 1024, 2) + b"{}")
        assert w.is_closed_by_peer()
    served_normally(dev_server.broker)


def test_property_separators_in_names_or_values_are_refused(dev_server):
    """A value holding ``\\x02`` would add properties of its own (a ``DELAY``); the client
    refuses it before sending, and the broker refuses a properties string whose items are not
    one name and value each (MESSAGE_ILLEGAL)."""
    from rocketpy import Message, Producer
    from rocketpy._native import InvalidArgumentError

    with Wire(dev_server.broker) as w:
        r = send_v2(w, "PropTopic", b"x", note="a\x01b")
        assert r.code == 13 and "separator" in (r.remark or ""), r.remark
        r = send_v2(w, "PropTopic", b"x", note="a\x02trailing")
        assert r.code == 13, r.remark
        assert send_v2(w, "PropTopic", b"x", note="fine").code == 0
    with Producer("prop-producer", dev_server.namesrv) as p:
        for props in ({"note": "x\x02DELAY\x013"}, {"no\x01te": "v"}):
            msg = Message("PropTopic", b"x", properties=props)
            with pytest.raises(InvalidArgumentError, match="separator"):
                p.send(msg)
            with pytest.raises(InvalidArgumentError, match="separator"):
                p.send_async(msg).result(10)
        with pytest.raises(InvalidArgumentError, match="separator"):
            p.send(Message("PropTopic", b"x", tags="A\x02DELAY\x011"))
