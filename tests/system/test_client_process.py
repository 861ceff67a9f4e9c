"""A Python process using rocketpy exits promptly (at the end of the program and on Ctrl-C)
with no hang and no crash, survives fork(), and gets native log records through logging."""

from __future__ import annotations

import logging
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketpy import set_native_log_level
from rocketpy._native import RemotingClient
from rocketpy.errors import RemotingConnectError

SCRIPT = Path(__file__).parents[1] / "process_scenarios.py"


@pytest.fixture
def silent() -> Iterator[str]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    yield f"127.0.0.1:{s.getsockname()[1]}"
    s.close()


def start(*args: str) -> subprocess.Popen[bytes]:
    """Starts a scenario and waits for its first line. The pipes are unbuffered: a buffered
    reader would read ahead past that line, and what it took (a forked child's lines, when
    the machine is slow to schedule this reader) would be missing from ``finish``'s output,
    which reads the pipe itself."""
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
    )
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline()  # a raw pipe: read a byte at a time, nothing beyond
    if not line:
        proc.wait(10)
        raise AssertionError(f"scenario {args[0]} failed: {proc.stderr.read().decode()}")
    return proc


def finish(proc: subprocess.Popen[bytes], limit: float) -> tuple[int, float, str]:
    """Exit code, seconds until exit, and what it printed (stdout after the first line, then
    stderr)."""
    t = time.monotonic()
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"hung for {limit} s:\n{err.decode(errors='replace')}") from None
    return proc.returncode, time.monotonic() - t, (out + err).decode(errors="replace")


def test_exit_with_a_backlog_does_not_wait_for_it(shared_dev):
    proc = start("backlog", shared_dev.namesrv, "ProcBacklog")
    code, took, err = finish(proc, 30)
    # 2,000 messages at 20 threads x 5/s would take 20 s; the exit waits for none of them.
    assert code == 0, err
    assert took < 5, took


def test_exit_while_busy_never_crashes(shared_dev, silent):
    # Replies, callbacks and daemon threads coming back from native calls during interpreter
    # exit used to abort the process (PyGILState_Release) in most runs.
    for _ in range(8):
        proc = start("busy", shared_dev.namesrv, "ProcBusy", silent)
        code, took, err = finish(proc, 30)
        assert code == 0, err
        assert "Fatal Python error" not in err
        assert took < 10, took


@pytest.mark.parametrize("scenario", ["blocked_invoke", "blocked_direct_invoke", "consuming"])
def test_ctrl_c_stops_the_program(shared_dev, silent, scenario):
    arg = silent if scenario.startswith("blocked") else "ProcSigint"
    proc = start(scenario, shared_dev.namesrv, arg)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    code, took, err = finish(proc, 15)
    assert "KeyboardInterrupt" in err
    assert code in (1, -signal.SIGINT), (code, err)
    assert took < 7, took


def test_fork_gives_a_clear_error_and_new_clients_work(shared_dev, tmp_path):
    proc = start("fork", shared_dev.namesrv, "ProcFork", str(tmp_path / "store"))
    code, _, out = finish(proc, 120)
    assert code == 0, out
    assert out.count("before os.fork()") == 2, out  # the producer's and the store's errors
    assert "fork ok" in out


def test_native_records_go_through_logging(caplog, silent):
    # A "server" that answers with bytes that are no frame: the client's transport logs a
    # warning, which arrives on the rocketpy.native.remoting logger.
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    addr = f"127.0.0.1:{srv.getsockname()[1]}"
    caplog.set_level(logging.WARNING, logger="rocketpy.native")
    client = RemotingClient()
    try:

        def garbage() -> None:
            conn, _ = srv.accept()
            conn.recv(4096)
            conn.sendall(b"\xff\xff\xff\xff not a frame")
            time.sleep(0.5)
            conn.close()

        threading.Thread(target=garbage, daemon=True).start()
        with pytest.raises(RemotingConnectError):
            client.invoke(addr, 105, dict(topic="T"), None, 5000)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any(
            r.name.startswith("rocketpy.native") for r in caplog.records
        ):
            time.sleep(0.05)
    finally:
        client.shutdown()
        srv.close()
    native = [r for r in caplog.records if r.name.startswith("rocketpy.native")]
    assert native, "no native record reached logging"
    assert native[0].name == "rocketpy.native.remoting"
    assert native[0].levelno == logging.WARNING
    assert "bad frame" in native[0].getMessage()
    set_native_log_level(logging.WARNING)  # the level API takes logging's levels
