"""Back-pressure: sends that waited too long behind others are answered SYSTEM_BUSY at once
(the producer retries elsewhere) instead of queueing more work; nothing is half-stored and
the broker keeps serving."""

from __future__ import annotations

import threading
import time

from rmq_wire import Frame, Wire, encode
from test_conformance import GET_MAX_OFFSET, SEND_MESSAGE_V2, SUCCESS

from devserver import DevProcess

SYSTEM_BUSY = 2


def test_sends_waiting_too_long_get_system_busy(tmp_path):
    dev = DevProcess(tmp_path / "store", "--set", "waitTimeMillsInSendQueue=1").start()
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
        with Wire(dev.broker, timeout=60, rcvbuf=4096) as w:
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
        assert dev.stop() == 0
