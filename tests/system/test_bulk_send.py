"""Bulk sends (``Producer.send_many`` / ``send_arrow``) against a real broker: every row is
stored once with its body, key, tags, properties and its own unique id, in row order within
each request; lists and Arrow columns (sliced, chunked, large, string) read alike; what
cannot be sent is refused before it goes; a broker that refuses every request ends in a
``BulkSendError`` naming every row."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from servers import in_process_dev

from helpers import fast_config, wait_until
from rocketpy import (
    BrokerResponseError,
    BulkSendError,
    BulkSendResult,
    ClientError,
    MessageExt,
    Producer,
)
from rocketpy.admin import Admin
from rocketpy.protocol import ResponseCode
from rocketpy.server import DevServer


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with in_process_dev(tmp_path_factory.mktemp("bulk") / "store") as d:
        yield d


@pytest.fixture(scope="module")
def producer(dev: DevServer) -> Iterator[Producer]:
    p = Producer("bulk-producer", client_config=fast_config(dev.namesrv_addr))
    p.start()
    yield p
    p.shutdown()


def stored(dev: DevServer, result: BulkSendResult) -> list[MessageExt]:
    """The messages of ``result``'s requests, request by request, in offset order."""
    admin = Admin(dev.namesrv_addr)
    try:
        topic = result.batches[0][0].topic
        assert wait_until(lambda: admin.topic_route(topic) is not None, timeout=10)
        out: list[MessageExt] = []
        for mq, first, count in result.batches:
            got: list[MessageExt] = []
            while len(got) < count:
                more = admin.pull_messages(mq, first + len(got), 32)
                assert more, f"nothing stored at {mq} offset {first + len(got)}"
                got.extend(more)
            out.extend(got[:count])
        return out
    finally:
        admin.close()


def test_a_list_is_stored_row_by_row_with_keys_tags_and_ids(
    dev: DevServer, producer: Producer
) -> None:
    n = 5000
    bodies = [f"body-{i}".encode() for i in range(n)]
    keys = [None if i % 7 == 0 else f"k{i}" for i in range(n)]
    result = producer.send_many(
        "BulkList", bodies, keys=keys, tags="TagB", properties={"source": "bulk"}
    )
    assert result.count == n
    assert sum(c for _, _, c in result.batches) == n
    msgs = stored(dev, result)
    assert sorted(m.body for m in msgs) == sorted(bodies)
    # Within a request the rows keep their order: the request's first row, then the next.
    for m in msgs:
        i = int(m.body.split(b"-")[1])
        assert m.tags == "TagB"
        assert m.properties["source"] == "bulk"
        assert m.keys == keys[i]
    assert len({m.msg_id for m in msgs}) == n, "each message has its own unique id"


def test_many_requests_stay_within_their_size(dev: DevServer, producer: Producer) -> None:
    body = b"x" * 1000
    result = producer.send_many("BulkSized", [body] * 3000)
    assert result.count == 3000
    # 3 MB in requests of at most 1 MiB.
    assert len(result.batches) >= 3
    assert all(c * 1000 <= 1024 * 1024 for _, _, c in result.batches)
    queues = {mq for mq, _, _ in result.batches}
    assert len(queues) > 1, "requests go to the topic's queues in turn"


def test_str_bytearray_and_memoryview_bodies(dev: DevServer, producer: Producer) -> None:
    bodies = ["text-é", bytearray(b"array"), memoryview(b"view"), b"bytes"]
    result = producer.send_many("BulkKinds", bodies)
    got = sorted(m.body for m in stored(dev, result))
    assert got == sorted([b"text-\xc3\xa9", b"array", b"view", b"bytes"])


def test_arrow_columns_of_every_layout(dev: DevServer, producer: Producer) -> None:
    rows = [f"a-{i}".encode() for i in range(100)]
    keys = pa.array([None if i % 2 else f"ka{i}" for i in range(100)])
    table = pa.table({"body": pa.array(rows, pa.binary()), "keys": keys})
    r1 = producer.send_arrow(table, "BulkArrow")
    assert r1.count == 100
    got = {m.body: m.keys for m in stored(dev, r1)}
    assert got[b"a-0"] == "ka0" and got[b"a-1"] is None
    # A slice (non-zero offset), large offsets, strings, several chunks.
    sliced = pa.array(rows, pa.large_binary()).slice(10, 20)
    r2 = producer.send_many("BulkArrow2", sliced)
    assert sorted(m.body for m in stored(dev, r2)) == sorted(rows[10:30])
    chunked = pa.chunked_array([pa.array(["s1", "s2"]), pa.array(["s3"])])
    r3 = producer.send_many("BulkArrow3", chunked, keys=pa.chunked_array([["x", "y", "z"]]))
    assert {m.body: m.keys for m in stored(dev, r3)} == {b"s1": "x", b"s2": "y", b"s3": "z"}


def test_a_refused_call_sends_nothing(dev: DevServer, producer: Producer) -> None:
    # The bad row comes after several requests' worth of good ones.
    bodies: list[bytes | None] = [b"x" * 1000] * 5000 + [None]
    with pytest.raises(ValueError, match="row 5000 has a null body"):
        producer.send_many("BulkNothingSent", bodies)  # type: ignore[arg-type]
    with Admin(dev.namesrv_addr) as admin:
        assert admin.topic_route("BulkNothingSent") is None, "no send created the topic"


def test_what_cannot_be_sent_is_refused_before_it_goes(producer: Producer) -> None:
    with pytest.raises(ValueError, match="row 1 has a null body"):
        producer.send_many("BulkBad", [b"ok", None])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="row 0 has an empty body"):
        producer.send_many("BulkBad", [b""])
    with pytest.raises(ValueError, match="over the limit"):
        producer.send_many("BulkBad", [b"x" * (producer.max_message_size + 1)])
    with pytest.raises(ValueError, match="keys for"):
        producer.send_many("BulkBad", [b"a", b"b"], keys=["only one"])
    with pytest.raises(ValueError, match="separator"):
        producer.send_many("BulkBad", [b"a"], keys=["bad\x01key"])
    with pytest.raises(ValueError, match="cannot be used in a bulk send"):
        producer.send_many("BulkBad", [b"a"], properties={"DELAY": "3"})
    # Rows are numbered across an Arrow column's chunks.
    with pytest.raises(ValueError, match="row 2 has a null body"):
        producer.send_many("BulkBad", pa.chunked_array([[b"a", b"b"], [None]]))
    with pytest.raises(ValueError, match="no column"):
        producer.send_arrow(pa.table({"value": [b"a"]}), "BulkBad")
    with pytest.raises(ClientError, match="retry topics"):
        producer.send_many("%RETRY%group", [b"a"])
    with pytest.raises(ClientError, match="not started"):
        Producer("bulk-unstarted", "127.0.0.1:1").send_many("BulkBad", [b"a"])


def test_rows_not_stored_are_named(tmp_path: Path) -> None:
    # The broker takes bodies of 4 KiB at most: the request holding the one larger row is
    # refused (MESSAGE_ILLEGAL, not retried), the others are stored.
    with in_process_dev(tmp_path / "store", broker_config={"maxMessageSize": "4096"}) as d:
        p = Producer("bulk-refused", client_config=fast_config(d.namesrv_addr))
        p.start()
        try:
            bodies = [b"s" * 10] * 3000 + [b"L" * 5000] + [b"s" * 10] * 3000
            with pytest.raises(BulkSendError) as err:
                p.send_many("BulkRefused", bodies)
        finally:
            p.shutdown()
    e = err.value
    assert len(e.failed) == 1 and 3000 in e.failed[0]
    assert e.result.count == len(bodies) - len(e.failed[0])
    assert isinstance(e.__cause__, BrokerResponseError)
    assert e.__cause__.code == ResponseCode.MESSAGE_ILLEGAL
    assert e.__cause__ is e.errors[0]
