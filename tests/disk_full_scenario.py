"""Run inside a private mount namespace by tests/system/test_disk_full.py: a ``rocketpy dev`` whose
store is on a small tmpfs mounted at ``argv[1]``, filled by the broker itself (``self``) or
by another process writing a file beside it (``dd``). Prints one JSON line of findings.

The broker must refuse writes with SERVICE_NOT_AVAILABLE (14) and never die, keep serving
reads and offsets, give back every message it acknowledged, and accept writes again by
itself once space returns.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from servers import dev

from rocketpy import LitePullConsumer, Message, MessageQueue, Producer
from rocketpy.admin import Admin
from rocketpy.errors import BrokerResponseError, RocketpyError

TOPIC = "FullDisk"
BODY = b"x" * 1000


def send_until_refused(producer: Producer, limit: int) -> tuple[list[str], int, str]:
    """Sends until the broker refuses; returns the acknowledged bodies, the refusal's code
    and remark."""
    acked: list[str] = []
    for i in range(limit):
        body = f"{i:08d}".encode() + BODY
        try:
            producer.send(Message(TOPIC, body), MessageQueue(TOPIC, "broker-a", i % 2))
        except RocketpyError as e:
            refusal = e if isinstance(e, BrokerResponseError) else e.__cause__
            if not isinstance(refusal, BrokerResponseError):
                raise
            return acked, refusal.code, refusal.remark or ""
        acked.append(body[:8].decode())
    return acked, 0, ""


def read_all(namesrv: str, expect: int) -> list[str]:
    consumer = LitePullConsumer("full_disk_reader", namesrv, auto_commit=False)
    consumer.assign([MessageQueue(TOPIC, "broker-a", q) for q in (0, 1)])
    consumer.start()
    try:
        for q in (0, 1):
            consumer.seek_to_begin(MessageQueue(TOPIC, "broker-a", q))
        seen: list[str] = []
        deadline = time.monotonic() + 60
        while len(seen) < expect and time.monotonic() < deadline:
            for msg in consumer.poll(timeout_ms=1000):
                assert msg.body[8:] == BODY, "body damaged"
                seen.append(msg.body[:8].decode())
        return seen
    finally:
        consumer.shutdown()


def send_ok_again(producer: Producer, timeout: float) -> float:
    """Seconds until a send succeeds again (-1 if none did)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            producer.send(Message(TOPIC, b"again"), MessageQueue(TOPIC, "broker-a", 0))
            return time.monotonic() - start
        except RocketpyError:
            time.sleep(0.2)
    return -1


def main(mount: Path, scenario: str) -> dict[str, object]:
    store = mount / "store"
    settings = {
        "mapedFileSizeCommitLog": "4194304",
        "maxHashSlotNum": "20000",
        "maxIndexNum": "80000",
        "cleanResourceInterval": "200",
        "brokerName": "broker-a",
        "flushDiskType": "SYNC_FLUSH",
        # Forced retention (on by default above 85 %) would delete unexpired files on the
        # full disk; off, every acknowledged message must come back.
        "cleanFileForciblyEnable": "false",
        # RocketMQ's limits (test servers turn them off, tests/servers.py): this disk is the
        # test's own small mount.
        "diskMaxUsedSpaceRatio": "75",
        "diskSpaceCleanForciblyRatio": "85",
        # Refusal by the write itself (ENOSPC), not by the usage ratio.
        "diskSpaceWarningLevelRatio": "100" if scenario == "self" else "90",
    }
    ballast = mount / "ballast"
    if scenario == "self":
        ballast.write_bytes(os.urandom(6 << 20))
    server = dev(store, settings=settings).start()
    found: dict[str, object] = {"scenario": scenario}
    producer = Producer("full_disk_producer", server.namesrv, retry_times_when_send_failed=0)
    producer.start()
    admin = Admin(server.namesrv)
    try:
        admin.create_topic(TOPIC, queues=2)
        # The route reaches the name server with the broker's next registration.
        deadline = time.monotonic() + 30
        while admin.topic_route(TOPIC) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if scenario == "dd":
            acked, _, _ = send_until_refused(producer, 500)
            found["sent_before_dd"] = len(acked)
            dd = subprocess.run(
                ["dd", "if=/dev/zero", f"of={ballast}", "bs=1M"], capture_output=True, text=True
            )
            found["dd_filled"] = "No space left" in dd.stderr
            more, code, remark = send_until_refused(producer, 100_000)
            acked += more
        else:
            acked, code, remark = send_until_refused(producer, 100_000)
        found.update(acked=len(acked), code=code, remark=remark)
        found["alive_after_refusal"] = server.running
        # Reads and offsets keep working on the full disk.
        found["max_offset"] = sum(
            admin.max_offset(MessageQueue(TOPIC, "broker-a", q)) for q in (0, 1)
        )
        seen = read_all(server.namesrv, len(acked))
        found["read_back"] = len(seen)
        found["lost"] = len(set(acked) - set(seen))
        _, code2, _ = send_until_refused(producer, 1)
        found["still_refused"] = code2
        if scenario == "self":
            # An operator restarts the broker on the full disk: it recovers and serves reads.
            producer.shutdown()
            admin.close()
            found["restart_exit_code"] = server.stop()
            server.start()
            producer = Producer(
                "full_disk_producer", server.namesrv, retry_times_when_send_failed=0
            )
            producer.start()
            admin = Admin(server.namesrv)
            found["read_back_after_restart"] = len(read_all(server.namesrv, len(acked)))
        # Space returns: writes are accepted again without a restart.
        ballast.unlink()
        found["accepted_again_after_s"] = round(send_ok_again(producer, 30), 2)
        found["alive_at_end"] = server.running
    finally:
        producer.shutdown()
        admin.close()
        found["exit_code"] = server.stop()
        found["output_tail"] = "".join(server.output[-5:])[-2000:]
    return found


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), sys.argv[2])), flush=True)
