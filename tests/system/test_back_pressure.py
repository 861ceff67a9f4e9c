"""Back-pressure: sends that waited too long behind others are answered SYSTEM_BUSY at once
(the producer retries elsewhere) instead of queueing more work; nothing is half-stored and
the broker keeps serving. A peer that pipelines pulls and reads no answers holds a bounded
number of bytes in the broker (the connection stops being read past its water mark)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from rmq_wire import Frame, Wire, encode
from servers import dev
from test_conformance import (
    GET_MAX_OFFSET,
    PULL_MESSAGE,
    SEND_MESSAGE_V2,
    SUCCESS,
    create_topic,
    send_v2,
)

SYSTEM_BUSY = 2


def test_sends_waiting_too_long_get_system_busy(tmp_path):
    server = dev(tmp_path / "store", settings={"waitTimeMillsInSendQueue": "1"}).start()
    try:
        n = 40_000
        fields = {
            "a": "bp",
            "b": "BusyTopic",
            "c": "TBW102",
            "d": "4",
            "e": "0",
            "f": "0",
            "g": "1",
            "h": "0",
            "i": "",
        }
        with Wire(server.broker, timeout=60, rcvbuf=4096) as w:
            # Create the topic first, then pipeline many sends while not reading answers for
            # a while: the answers fill the socket and the broker's write queue, so the
            # requests it has already read wait behind them - longer than 1 ms, whatever
            # the machine's speed.
            assert w.call(SEND_MESSAGE_V2, fields, b"first").code == SUCCESS
            frames = b"".join(
                encode(Frame(SEND_MESSAGE_V2, fields, b"x" * 64, opaque=100_000 + i))
                for i in range(n)
            )
            sender = threading.Thread(target=w.send_raw, args=(frames,))
            sender.start()
            time.sleep(0.5)
            codes = [w.read_frame().code for _ in range(n)]
            assert set(codes) <= {SUCCESS, SYSTEM_BUSY}
            sender.join()
            busy = codes.count(SYSTEM_BUSY)
            assert busy > 0, "requests stuck behind others were refused"
            time.sleep(0.1)
            stored = int(
                w.call(GET_MAX_OFFSET, {"topic": "BusyTopic", "queueId": "0"}).fields["offset"]
            )
            assert stored == 1 + codes.count(SUCCESS), "exactly the accepted sends were stored"
    finally:
        assert server.stop() == 0


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_peer_that_reads_no_answers_holds_bounded_memory(tmp_path):
    """2,000 pipelined pulls of 250 KiB answers (500 MB; the broker once pinned ~950 MB for
    such a peer): the broker reads requests only while it owes the peer less than
    writeBufferHighWaterMark, so its memory stays near where it was, and every answer arrives
    once the peer reads."""
    server = dev(tmp_path / "store").start()
    try:
        with Wire(server.broker, timeout=60) as w:
            assert create_topic(w, "PinTopic", queues=1).code == SUCCESS
            for _ in range(4):
                assert send_v2(w, "PinTopic", b"p" * (250 << 10)).code == SUCCESS
        n = 2000
        fields = {
            "consumerGroup": "pin-group", "topic": "PinTopic", "queueId": "0",
            "queueOffset": "0", "maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0",
            "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0",
            "expressionType": "TAG",
        }  # fmt: skip
        frames = b"".join(encode(Frame(PULL_MESSAGE, fields, opaque=200_000 + i)) for i in range(n))
        before = rss_kb(server.pid)
        with Wire(server.broker, timeout=60, rcvbuf=4096) as w:
            w.send_raw(frames)
            # Give the broker time to read and answer all it will: with no bound it would
            # build every answer (500 MB) now.
            grown = 0
            for _ in range(30):
                time.sleep(0.1)
                grown = max(grown, rss_kb(server.pid) - before)
            assert grown < 100 * 1024, f"the broker grew {grown} KiB for a peer that reads nothing"
            answers = [w.read_frame() for _ in range(n)]
            assert {a.code for a in answers} == {SUCCESS}
            assert all(len(a.body) > 250 << 10 for a in answers)
            assert [a.opaque for a in answers] == [200_000 + i for i in range(n)]
    finally:
        assert server.stop() == 0
