"""Transactional messages across broker crashes, driven by the independent wire client
(tests/rmq_wire.py) as a 4.x producer drives them: the outcome of a half message lives in
the store, so after kill -9 the broker's check still resolves a half message left open, a
producer on another connection (the first one died) answers it, and a committed transaction
stays committed once: not checked again, not committed twice by a repeated END_TRANSACTION.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from rmq_format import parse_records
from rmq_wire import Frame, Wire
from servers import broker, free_port, namesrv

SEND_MESSAGE, PULL_MESSAGE, HEART_BEAT = 10, 11, 34
END_TRANSACTION, CHECK_TRANSACTION_STATE = 37, 39
COMMIT, UNKNOWN = "8", "0"
SETTINGS = {
    "transactionCheckInterval": "200",
    "transactionTimeOut": "500",
    "flushDiskType": "SYNC_FLUSH",
}


def props(**pairs: str) -> str:
    return "".join(f"{k}\x01{v}\x02" for k, v in pairs.items())


def prepare(w: Wire, topic: str, group: str, uniq: str, body: bytes) -> dict[str, str]:
    resp = w.call(
        SEND_MESSAGE,
        {
            "producerGroup": group, "topic": topic, "defaultTopic": "TBW102",
            "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "4",
            "bornTimestamp": str(int(time.time() * 1000)), "flag": "0",
            "properties": props(TRAN_MSG="true", PGROUP=group, UNIQ_KEY=uniq),
            "reconsumeTimes": "0", "unitMode": "false",
        },
        body,
    )  # fmt: skip
    assert resp.code == 0, resp.remark
    return {
        "tranStateTableOffset": resp.fields["queueOffset"],
        "commitLogOffset": str(int(resp.fields["msgId"][-16:], 16)),
        "msgId": uniq,
        "transactionId": uniq,
    }


def end(w: Wire, group: str, half: dict[str, str], outcome: str) -> Frame:
    fields = {**half, "producerGroup": group, "commitOrRollback": outcome}
    return w.call(END_TRANSACTION, {**fields, "fromTransactionCheck": "true"})


def join(w: Wire, group: str) -> None:
    body = json.dumps(
        {
            "clientID": f"127.0.0.1@tx-{id(w)}",
            "consumerDataSet": [],
            "producerDataSet": [{"groupName": group}],
        }
    ).encode()
    assert w.call(HEART_BEAT, {}, body).code == 0


def pull(addr: str, topic: str) -> list[dict]:
    with Wire(addr) as w:
        got = w.call(
            PULL_MESSAGE,
            {
                "consumerGroup": "tx-reader", "topic": topic, "queueId": "0",
                "queueOffset": "0", "maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0",
                "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0",
            },
        )  # fmt: skip
        return parse_records(got.body) if got.code == 0 else []


def next_check(w: Wire, timeout: float) -> Frame | None:
    """The next CHECK_TRANSACTION_STATE on `w` within `timeout` seconds, if any."""
    deadline = time.monotonic() + timeout
    while w.inbox:
        f = w.inbox.pop(0)
        if f.code == CHECK_TRANSACTION_STATE and not f.is_response:
            return f
    while (left := deadline - time.monotonic()) > 0:
        w.sock.settimeout(left)
        try:
            f = w.read_frame()
        except TimeoutError:
            return None
        if f.code == CHECK_TRANSACTION_STATE and not f.is_response:
            return f
    return None


def test_a_crashed_broker_still_resolves_each_transaction_once(tmp_path: Path):
    ns_port, port = free_port(), free_port()
    ns = namesrv(ns_port).start()
    b = broker(f"127.0.0.1:{ns_port}", port, tmp_path / "store", SETTINGS).start()
    addr = f"127.0.0.1:{port}"
    try:
        with Wire(addr) as first:
            join(first, "crash-g")
            done = prepare(first, "TxCrash", "crash-g", "UNIQ-DONE", b"committed before")
            assert end(first, "crash-g", done, COMMIT).code == 0
            open_half = prepare(first, "TxCrash", "crash-g", "UNIQ-OPEN", b"left open")
            assert [r["body"] for r in pull(addr, "TxCrash")] == [b"committed before"]
            b.kill()
        b.start()
        # Another producer of the group (the first connection died with the broker).
        with Wire(addr, timeout=20) as second:
            join(second, "crash-g")
            check = next_check(second, 20)
            assert check is not None, "the open half message was checked after the crash"
            assert check.fields["tranStateTableOffset"] == open_half["tranStateTableOffset"]
            [asked] = parse_records(check.body)
            assert asked["body"] == b"left open" and asked["topic"] == "TxCrash"
            assert end(second, "crash-g", open_half, COMMIT).code == 0
            # The transaction committed before the crash is not asked about, and repeating
            # either outcome adds nothing.
            assert end(second, "crash-g", done, COMMIT).code == 0
            assert end(second, "crash-g", open_half, COMMIT).code == 0
            bodies = [r["body"] for r in pull(addr, "TxCrash")]
            assert bodies == [b"committed before", b"left open"]
            b.kill()
        b.start()
        with Wire(addr, timeout=20) as third:
            join(third, "crash-g")
            assert next_check(third, 2.0) is None, "resolved transactions are not checked"
            assert end(third, "crash-g", open_half, COMMIT).code == 0
        assert [r["body"] for r in pull(addr, "TxCrash")] == [
            b"committed before",
            b"left open",
        ]
    finally:
        b.stop()
        ns.stop()
