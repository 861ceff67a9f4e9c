"""Long polling: a held pull answers as soon as a message arrives on its queue; an idle one
answers PULL_NOT_FOUND when its suspend timeout passes."""

from __future__ import annotations

import threading
import time

from rmq_wire import Wire
from servers import HOST_DISK_SETTINGS
from test_conformance import PULL_NOT_FOUND, SUCCESS, create_topic, pull, send_v2


def test_held_pull_wakes_on_arrival_and_times_out_when_idle(dev_server):
    with Wire(dev_server.broker) as admin:
        assert create_topic(admin, "PollTopic", queues=2).code == SUCCESS
    for attempt in range(3):
        result: dict = {}

        def hold(result: dict = result, offset: int = attempt) -> None:
            with Wire(dev_server.broker) as w:
                result["resp"] = pull(
                    w, "PollTopic", 1, offset, sys_flag=0x2 | 0x4, suspend_ms=10_000
                )
                result["at"] = time.monotonic()

        t = threading.Thread(target=hold)
        t.start()
        time.sleep(0.5)  # the pull is held by now
        assert "resp" not in result, "held, not answered"
        with Wire(dev_server.broker) as w:
            assert send_v2(w, "PollTopic", b"wake up", queue_id=1).code == SUCCESS
            sent_at = time.monotonic()
        t.join(10)
        assert result["resp"].code == SUCCESS
        assert result["at"] - sent_at < 0.1, (
            f"answered {result['at'] - sent_at:.3f}s after the send"
        )

    with Wire(dev_server.broker) as w:
        started = time.monotonic()
        idle = pull(w, "PollTopic", 0, 0, sys_flag=0x2 | 0x4, suspend_ms=700)
        waited = time.monotonic() - started
    assert idle.code == PULL_NOT_FOUND
    assert 0.6 < waited < 3, waited


def test_shutdown_answers_held_pulls(tmp_path):
    from rocketpy._native import Broker, NameServer

    ns = NameServer.start("127.0.0.1", 0)
    broker = Broker.start(None, {"namesrvAddr": ns.address, "bindAddress": "127.0.0.1", "brokerIP1": "127.0.0.1",
                                 "listenPort": "0", "storePathRootDir": str(tmp_path / "s"),
                                 **HOST_DISK_SETTINGS})  # fmt: skip
    try:
        with Wire(broker.address) as w:
            assert create_topic(w, "HeldTopic", queues=1).code == SUCCESS
            result: dict = {}

            def hold() -> None:
                result["resp"] = pull(w, "HeldTopic", 0, 0, sys_flag=0x2 | 0x4, suspend_ms=30_000)

            t = threading.Thread(target=hold)
            t.start()
            time.sleep(0.3)
            started = time.monotonic()
            broker.shutdown()
            t.join(10)
            assert result["resp"].code == PULL_NOT_FOUND, "answered, not dropped"
            assert time.monotonic() - started < 5
    finally:
        ns.shutdown()
