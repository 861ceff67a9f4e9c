"""``rocketpy dev --controller`` (DevServer(controller=True)): the local demo of controller mode.
Three brokers of one group and a controller in the name server; the group's master is stopped
and a producer that was never restarted goes on sending; a consumer then reads every
acknowledged message."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from helpers import wait_until
from rocketpy import ConsumeFromWhere, ConsumeStatus, Message, Producer, PushConsumer
from rocketpy.server import DevServer


def send_until_ok(producer: Producer, body: bytes, timeout: float = 30) -> float:
    """Sends until SEND_OK (a failover may refuse a few); returns how long it took."""
    start = time.monotonic()
    while True:
        try:
            producer.send(Message("DevDemo", body))
            return time.monotonic() - start
        except Exception:
            if time.monotonic() - start > timeout:
                raise
            time.sleep(0.1)


def test_the_demo_fails_over_and_loses_nothing(tmp_path: Path) -> None:
    with DevServer(
        namesrv_port=0, broker_port=0, store_dir=tmp_path / "store", controller=True
    ) as dev:
        assert len(dev.replicas) == 3
        assert dev.controller_addr is not None
        producer = Producer("dev-demo-producer", dev.namesrv_addr)
        producer.start()
        try:
            acked = set()
            for i in range(20):
                send_until_ok(producer, f"before {i}".encode())
                acked.add(f"before {i}")
            stopped = dev.stop_master()
            took = send_until_ok(producer, b"after 0")
            acked.add("after 0")
            print(f"first acknowledged write {took:.3f} s after stopping {stopped}")
            for i in range(1, 20):
                send_until_ok(producer, f"after {i}".encode())
                acked.add(f"after {i}")
        finally:
            producer.shutdown()

        received: set[str] = set()
        lock = threading.Lock()

        def listener(msgs: list) -> ConsumeStatus:  # type: ignore[type-arg]
            with lock:
                received.update(m.body.decode() for m in msgs)
            return ConsumeStatus.CONSUME_SUCCESS

        consumer = PushConsumer(
            "dev-demo-consumer",
            dev.namesrv_addr,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        )
        consumer.subscribe("DevDemo", "*")
        consumer.register_listener(listener)
        consumer.start()
        try:
            assert wait_until(lambda: acked <= received, timeout=30), acked - received
        finally:
            consumer.shutdown()
