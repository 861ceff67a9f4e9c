"""No input from the network can crash the Python process: a "server" answers the client's
requests with random bytes, frames with impossible lengths, headers of the wrong types and
bodies that are no records, and sends requests of its own. Every call ends in a rocketpy
error (or a result), never a Rust panic, a hang or a dead interpreter."""

from __future__ import annotations

import json
import random
import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from rocketpy import ClientConfig, Message, Producer, RocketpyError
from rocketpy._native import RemotingClient

PULL = dict(consumer_group="g", topic="T", queue_id=0, queue_offset=0, max_msg_nums=32,
            sys_flag=0, commit_offset=0, suspend_timeout_millis=0, subscription="*",
            sub_version=0)  # fmt: skip
SEND = dict(producer_group="g", topic="T", default_topic="TBW102", default_topic_queue_nums=4,
            queue_id=0, sys_flag=0, born_timestamp=0, flag=0)  # fmt: skip
QUEUE = dict(consumer_group="g", topic="T", queue_id=0)
HEADERS = {11: PULL, 310: SEND, 14: QUEUE, 30: dict(topic="T", queue_id=0), 105: dict(topic="T")}

# Request codes the client sends, with header attributes it reads from their answers.
CALLS = {
    11: ("next_begin_offset", "min_offset", "max_offset", "suggest_which_broker_id"),  # PULL
    310: ("msg_id", "queue_id", "queue_offset", "transaction_id"),  # SEND_MESSAGE_V2
    14: ("offset",),  # QUERY_CONSUMER_OFFSET
    30: ("offset",),  # GET_MAX_OFFSET
    105: (),  # GET_ROUTEINFO_BY_TOPIC
}
FIELDS = ["nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId", "msgId",
          "queueId", "queueOffset", "offset", "transactionId", "consumerGroup", "a"]  # fmt: skip
VALUES = ["", "0", "-1", "abc", "9" * 40, "1e99", "true", "\u00ff\u0000", "NaN", "0x10"]


def frame(header: bytes, body: bytes = b"", kind: int = 0, length: int | None = None) -> bytes:
    total = 4 + len(header) + len(body) if length is None else length
    return struct.pack(">ii", total, (kind << 24) | len(header)) + header + body


def record(rng: random.Random) -> bytes:
    """A CommitLog record with random fields (valid magic most of the time)."""
    body = rng.randbytes(rng.randrange(0, 40))
    topic = rng.randbytes(rng.randrange(0, 8))
    props = rng.choice([b"", b"TAGS\x01a\x02", rng.randbytes(10)])
    magic = rng.choice([0xDAA320A7, 0xCBD43194, rng.getrandbits(32)])
    rec = struct.pack(">iIiiiqqiq", 0, magic, 0, rng.randrange(-2, 9), 0, 1, 2, 0, 3)
    rec += struct.pack(">q", 4) + rng.randbytes(8) + struct.pack(">q", 5) + rng.randbytes(8)
    rec += struct.pack(">iq", 0, 0) + struct.pack(">i", len(body)) + body
    rec += bytes([len(topic)]) + topic + struct.pack(">h", len(props)) + props
    size = rng.choice([len(rec), len(rec) + 100, rng.randrange(-5, 300)])
    return struct.pack(">i", size) + rec[4:]


def answer(rng: random.Random, opaque: int) -> bytes:
    """One hostile reply to the request with ``opaque``."""
    kind = rng.randrange(9)
    if kind == 0:
        return rng.randbytes(rng.randrange(1, 64))
    if kind == 1:
        return struct.pack(">i", rng.choice([0x7FFFFFFF, -1, 0, 3, 1 << 30])) + rng.randbytes(16)
    if kind == 2:  # header length past the frame
        return frame(b"{}", length=6) + b"{}"
    if kind == 3:  # binary header of random bytes
        return frame(rng.randbytes(rng.randrange(0, 40)), kind=1)
    if kind == 4:  # JSON of the wrong shapes
        h = rng.choice([b"[]", b"null", b'{"code":"x"}', b"\xff\xfe", b'{"code":0,"flag":1,'
                        b'"opaque":%d,"extFields":[1]}' % opaque, b'{"flag":1,"opaque":1e400}'])  # fmt: skip
        return frame(h)
    header: dict[str, object] = {
        "code": rng.choice([0, 1, 1 << 20, -7, 25, 26]),
        "flag": 1 if kind != 5 else 0,  # 5: a request from the "server"
        "opaque": opaque if kind != 5 else rng.getrandbits(31),
        "language": rng.choice(["JAVA", "RUST", 7, None]),
        "version": rng.choice([413, -1, "x"]),
        "remark": rng.choice([None, "", "\u0000" * 3, "r" * 1000]),
        "extFields": {rng.choice(FIELDS): rng.choice(VALUES) for _ in range(rng.randrange(6))},
    }
    body = rng.choice([b"", rng.randbytes(rng.randrange(0, 200)), b"{}", b"{\"brokerDatas\":1}",
                       b"".join(record(rng) for _ in range(rng.randrange(1, 4)))])  # fmt: skip
    out = frame(json.dumps(header).encode(), body)
    if kind == 5:  # then the real (hostile) answer
        out += answer(rng, opaque)
    return out


class HostileServer:
    """Answers every request frame with :func:`answer`; closes after garbage."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.addr = f"127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                while True:
                    head = conn.recv(8, socket.MSG_WAITALL)
                    if len(head) < 8:
                        return
                    total, hlen = struct.unpack(">ii", head)
                    rest = conn.recv(total - 4, socket.MSG_WAITALL)
                    opaque = json.loads(rest[: hlen & 0xFFFFFF]).get("opaque", 0)
                    reply = answer(self.rng, opaque)
                    conn.sendall(reply)
                    if not reply.startswith(b"\x00\x00") or b'"flag": 1' not in reply:
                        return  # not a whole answer: close rather than let the client wait
            except (OSError, ValueError):
                return


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    server = HostileServer(seed=20261123)
    yield server
    server.sock.close()


def not_a_panic(e: BaseException) -> None:
    assert type(e).__name__ != "PanicException", repr(e)


def test_hostile_answers_raise_errors_not_panics(hostile):
    client = RemotingClient(request_handler=lambda code, header, body, peer: None)
    outcomes = {"answered": 0, "error": 0}
    try:
        for i in range(400):
            code = list(CALLS)[i % len(CALLS)]
            try:
                # Every other request waits in this thread's own read (as sends do).
                resp = client.invoke(
                    hostile.addr, code, HEADERS[code], b"x", 300, direct=i % 2 == 0
                )
            except RocketpyError:
                outcomes["error"] += 1
                continue
            outcomes["answered"] += 1
            for attr in CALLS[code]:
                try:
                    getattr(resp.header, attr)
                except (RocketpyError, AttributeError, ValueError) as e:
                    not_a_panic(e)
            try:
                resp.decode_messages("b")
            except RocketpyError as e:
                not_a_panic(e)
            assert isinstance(resp.ext_fields, dict) and isinstance(resp.body, bytes)
    finally:
        client.shutdown()
    assert outcomes["answered"] > 40 and outcomes["error"] > 40, outcomes


def test_producer_against_a_hostile_name_server(hostile):
    cfg = ClientConfig(hostile.addr, instance_name="hostile", request_timeout_ms=300)
    with Producer("hostile-p", client_config=cfg, send_timeout_ms=300) as p:
        for _ in range(60):
            with pytest.raises(RocketpyError):
                p.send(Message("HostileTopic", b"x"))
