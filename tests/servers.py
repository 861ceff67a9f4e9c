"""A name server and a broker as separate ``rocketpy`` processes on fixed free ports of
127.0.0.1, so either can be stopped (cleanly or with SIGKILL) and started again at the same
address: what a client sees when a server restarts."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

from devserver import HOST_DISK_SETTINGS

#: Broker settings for restart tests: the CommitLog small, registration every second.
BROKER_TEST_SETTINGS = {
    "brokerIP1": "127.0.0.1",
    "mapedFileSizeCommitLog": str(16 * 1024 * 1024),
    "registerNameServerPeriod": "1000",
    **HOST_DISK_SETTINGS,
}


def free_port() -> int:
    """A port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """One ``rocketpy`` server command; :meth:`start` again after :meth:`stop` or
    :meth:`kill` brings it back on the same port."""

    def __init__(self, args: list[str], ready: str) -> None:
        self.args = args
        self.ready = ready
        self.proc: subprocess.Popen[str] | None = None
        self.output: list[str] = []

    def start(self, timeout: float = 60) -> ServerProcess:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rocketpy", "--log-level", "warn", *self.args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        first = threading.Event()
        proc = self.proc

        def drain() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                self.output.append(line)
                if self.ready in line:
                    first.set()

        self._drainer = threading.Thread(target=drain, daemon=True)
        self._drainer.start()
        if not first.wait(timeout):
            self.kill()
            raise AssertionError(f"{self.args[0]} did not start:\n{''.join(self.output)}")
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM and wait; the exit code (0 when clean)."""
        return self._end(signal.SIGTERM, timeout)

    def kill(self) -> int:
        """SIGKILL: a crash."""
        return self._end(signal.SIGKILL, 30)

    def _end(self, sig: int, timeout: float) -> int:
        proc, self.proc = self.proc, None
        if proc is None:
            return 0
        if proc.poll() is None:
            proc.send_signal(sig)
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        self._drainer.join(5)
        if proc.stdout is not None:
            proc.stdout.close()
        return code


def namesrv(port: int) -> ServerProcess:
    """A name server on ``127.0.0.1:port``."""
    return ServerProcess(
        ["namesrv", "--host", "127.0.0.1", "--port", str(port)], "name server listening"
    )


def broker(
    namesrv_addr: str, port: int, store: Path, settings: dict[str, str] | None = None
) -> ServerProcess:
    """A broker on ``127.0.0.1:port`` registering with ``namesrv_addr``."""
    sets = [f"--set={k}={v}" for k, v in {**BROKER_TEST_SETTINGS, **(settings or {})}.items()]
    args = ["broker", "-n", namesrv_addr, "--host", "127.0.0.1", "--port", str(port)]
    return ServerProcess([*args, "--store-dir", str(store), *sets], "rocketpy broker listening")
