"""The test harness's process handling (tests/servers.py) with a stand-in server: a Python
one-liner that prints a ready line, more lines, and exits 0 on SIGTERM. No rocketpy server."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest
from servers import ServerProcess, free_port

from helpers import wait_until

#: Prints a ready line naming its "address", then a later line; SIGTERM ends it cleanly.
FAKE = r"""
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
print("warming up", file=sys.stderr, flush=True)
print("fake listening on 127.0.0.1:1234 as 127.0.0.1:5678", flush=True)
print("extra: endpoint 127.0.0.1:9999", flush=True)
while True:
    time.sleep(0.1)
"""
READY = r"fake listening on (?P<namesrv>\S+) as (?P<broker>\S+)"


def fake(ready: str | None = READY, **kw: object) -> ServerProcess:
    return ServerProcess([sys.executable, "-c", FAKE], ready, name="fake", **kw)  # type: ignore[arg-type]


def test_start_stop_kill_restart() -> None:
    server = fake().start(timeout=30)
    try:
        assert server.running and server.pid > 0
        assert server.addresses == {"namesrv": "127.0.0.1:1234", "broker": "127.0.0.1:5678"}
        assert server.address == server.broker == "127.0.0.1:5678"
        assert "fake listening" in server.ready_line
        assert server.wait_for_line(r"endpoint (\S+)")[1] == "127.0.0.1:9999"
        assert "warming up" in server.text(), "stderr is kept too"
        first = server.pid
        server.restart(timeout=30)
        assert server.running and server.pid != first
        assert server.kill() == -signal.SIGKILL
        assert not server.running
        server.start(timeout=30)
        with pytest.raises(RuntimeError, match="running already"):
            server.start()
    finally:
        code = server.stop()
    assert code == 0
    assert server.stop() == 0, "stopping a stopped server is harmless"


def test_no_ready_line_fails_the_start_with_the_output() -> None:
    server = ServerProcess([sys.executable, "-c", "print('nothing to see')"], "never")
    with pytest.raises(AssertionError, match="nothing to see"):
        server.start(timeout=30)
    assert not server.running


def test_without_a_ready_line_to_a_log_file(tmp_path: Path) -> None:
    log = tmp_path / "fake.log"
    server = fake(None, log=log, env={"FAKE": "1"}).start()
    try:
        assert server.running
        # Ready (its SIGTERM handler set) once it wrote its line: the caller's own check.
        assert wait_until(lambda: "fake listening" in server.text(), timeout=30)
    finally:
        assert server.stop() == 0
    assert "fake listening" in server.text() == log.read_text()
    with pytest.raises(ValueError):
        fake(READY, log=log)


def test_free_port_span() -> None:
    port = free_port(3)
    assert port > 1024
