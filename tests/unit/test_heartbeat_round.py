"""The client's periodic heartbeat round does not wait for brokers: it shares the scheduler's
thread with route refreshes, and a broker that takes the heartbeat's connection but never
answers (paused, or cut off after the connection was made) would otherwise hold up, for the
heartbeat's whole timeout, the refresh that names that broker's replacement."""

from __future__ import annotations

import socket
import time

from helpers import fast_config
from rocketpy import Producer
from rocketpy.client.instance import HEARTBEAT_TIMEOUT_MS
from rocketpy.protocol import MASTER_ID


def test_heartbeat_round_does_not_wait_for_a_silent_broker() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # connections are accepted by the kernel, and never answered
        addr = f"127.0.0.1:{silent.getsockname()[1]}"
        with Producer("heartbeat-round", client_config=fast_config("127.0.0.1:1")) as p:
            inst = p._client()
            with inst._lock:
                inst._broker_addrs["paused-broker"] = {MASTER_ID: addr}
            started = time.monotonic()
            inst._heartbeat_round()
            assert time.monotonic() - started < HEARTBEAT_TIMEOUT_MS / 1000 / 2
            with inst._lock:  # the producer's unregistration at close need not try it
                del inst._broker_addrs["paused-broker"]
