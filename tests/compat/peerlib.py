"""The pieces of the compatibility suite: rocketpy servers as processes, and peer client
programs (``peers/``) run as processes that report what they did as JSON lines."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from devserver import HOST_DISK_SETTINGS

PEERS = Path(__file__).with_name("peers")


class ServerProcess:
    """One ``rocketpy`` server command; its first stdout line says where it listens."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rocketpy", "--log-level", "warn", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stderr: list[str] = []
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()
        line = self._first_line(60)
        m = re.search(r"listening on (\S+)(?: as (\S+))?", line)
        if not m:
            self.stop()
            raise AssertionError(f"{args[0]} did not start: {line!r} {''.join(self.stderr)}")
        self.address = m.group(2) or m.group(1)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def line_matching(self, pattern: str, timeout: float = 30) -> re.Match[str]:
        """The first further stdout line matching ``pattern`` (what the server printed after
        its first line: metrics, the gRPC endpoint)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self._first_line(deadline - time.monotonic())
            m = re.search(pattern, line)
            if m:
                return m
            if not line:
                break
        raise AssertionError(f"no line matching {pattern!r}: {''.join(self.stderr)}")

    def _first_line(self, timeout: float) -> str:
        out: list[str] = []
        t = threading.Thread(target=lambda: out.append(self.proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        t.start()
        t.join(timeout)
        return out[0] if out else ""

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._drainer.join(10)
        close_pipes(self.proc)
        return code


def close_pipes(proc: subprocess.Popen[str]) -> None:
    """Closes a finished process's pipes (their reader threads have seen EOF)."""
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None and not pipe.closed:
            with contextlib.suppress(OSError):
                pipe.close()


class Cluster:
    """A name server and a broker registered with it; with ``grpc``, the broker also serves
    RocketMQ 5.x clients (gRPC) on a free port, at :attr:`grpc`."""

    def __init__(
        self,
        store: Path,
        *broker_args: str,
        grpc: bool = False,
        namesrv_args: tuple[str, ...] = (),
    ) -> None:
        if grpc:
            # 5.x receives may ask for invisible times from 1 s (10 s by default): the tests
            # wait for redeliveries that long.
            broker_args = (
                *broker_args, "--set", "grpcServerPort=0",
                "--set", "minInvisibleTimeMillsForRecv=1000",
            )  # fmt: skip
        self.namesrv_proc = ServerProcess(
            "namesrv", "--host", "127.0.0.1", "--port", "0", *namesrv_args
        )
        self.namesrv = self.namesrv_proc.address
        self.broker_proc = ServerProcess(
            "broker", "-n", self.namesrv, "--host", "127.0.0.1", "--port", "0",
            "--store-dir", str(store), "--set", "brokerIP1=127.0.0.1",
            "--set", "mapedFileSizeCommitLog=16777216",
            # Retries come back after a second instead of after 10 s, 30 s, 1 min, ...
            "--set", "messageDelayLevel=" + " ".join(["1s"] * 18),
            # Not refused because the shared host disk is 90 % used (tests/devserver.py).
            *(a for k, v in HOST_DISK_SETTINGS.items() for a in ("--set", f"{k}={v}")),
            *broker_args,
        )  # fmt: skip
        self.broker = self.broker_proc.address
        self.grpc = ""
        if grpc:
            self.grpc = self.broker_proc.line_matching(r"5\.x clients: (\S+)").group(1)

    def stop(self) -> None:
        codes = (self.broker_proc.stop(), self.namesrv_proc.stop())
        assert codes == (0, 0), "".join(self.broker_proc.stderr + self.namesrv_proc.stderr)


class Peer:
    """One run of a peer client program: JSON lines in, events out."""

    def __init__(self, argv: list[str], spec: dict[str, Any], home: Path) -> None:
        # The C++ client writes its logs under $HOME/logs: keep them in the test's folder.
        env = dict(os.environ, HOME=str(home))
        self.proc = subprocess.Popen(
            [*argv, json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.events: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        self._cond = threading.Condition()
        self._threads = [
            threading.Thread(target=self._read, daemon=True),
            threading.Thread(target=self._drain, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if not line.startswith("{"):
                continue  # a peer library's own chatter
            with self._cond:
                self.events.append(json.loads(line))
                self._cond.notify_all()
        with self._cond:
            self.events.append({"event": "exit"})
            self._cond.notify_all()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def of(self, kind: str) -> list[dict[str, Any]]:
        with self._cond:
            return [e for e in self.events if e["event"] == kind]

    def wait_for(self, kind: str, n: int = 1, timeout: float = 60) -> list[dict[str, Any]]:
        """Waits until ``n`` events of ``kind`` arrived (or the peer exited); returns them."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len([e for e in self.events if e["event"] == kind]) < n:
                if any(e["event"] == "exit" for e in self.events):
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        return self.of(kind)

    def _close(self) -> None:
        for t in self._threads:
            t.join(10)
        close_pipes(self.proc)

    def kill(self) -> None:
        """Stops the peer at once (test clean-up)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._close()

    def finish(self, timeout: float = 60) -> list[dict[str, Any]]:
        """Closes the peer's stdin (a consumer's signal to stop), waits for it to exit and
        returns its events; errors it reported fail the test."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._close()
        errors = self.of("error")
        assert not errors and code == 0, (
            f"peer failed ({code}): {errors} {''.join(self.stderr)[-2000:]}"
        )
        return self.events


#: The rocketmq-client-rust program, built by ``make compat-rust-client`` (which exports its
#: path as ROCKETPY_COMPAT_RUST_CLIENT for ``make test``).
RUST_CLIENT = os.environ.get(
    "ROCKETPY_COMPAT_RUST_CLIENT",
    str(Path.home() / ".cache/rocketpy/compat-target/release/rocketpy-compat-rust-client"),
)

#: The Python of the venv holding the official 5.x client, made by ``make compat-py5`` (which
#: exports it as ROCKETPY_PY5_PYTHON for ``make test``).
PY5_PYTHON = os.environ.get(
    "ROCKETPY_PY5_PYTHON", str(Path.home() / ".cache/rocketpy/py5-venv/bin/python")
)

#: How each peer client is started: the C++ client (through PyPI ``rocketmq``, ctypes),
#: rocketmq-client-rust, and the official 5.x Python client (PyPI rocketmq-python-client).
CLIENTS = {
    "cpp": [sys.executable, str(PEERS / "cpp_client.py")],
    "rust": [RUST_CLIENT],
    "py5": [PY5_PYTHON, str(PEERS / "py5_client.py")],
}


def start_peer(client: str, peers: list[Peer], tmp_path: Path, **spec: Any) -> Peer:
    """Starts peer program ``client`` with ``spec``."""
    argv = CLIENTS[client]
    assert client != "rust" or Path(RUST_CLIENT).exists(), (
        f"{RUST_CLIENT} is missing: build it with `make compat-rust-client`"
    )
    assert client != "py5" or Path(PY5_PYTHON).exists(), (
        f"{PY5_PYTHON} is missing: make the venv with `make compat-py5`"
    )
    p = Peer(argv, spec, tmp_path)
    peers.append(p)
    return p


def cpp(peers: list[Peer], tmp_path: Path, **spec: Any) -> Peer:
    """Starts the C++ client program with ``spec``."""
    return start_peer("cpp", peers, tmp_path, **spec)


def rust(peers: list[Peer], tmp_path: Path, **spec: Any) -> Peer:
    """Starts the rocketmq-client-rust program with ``spec``."""
    return start_peer("rust", peers, tmp_path, **spec)


def py5(peers: list[Peer], tmp_path: Path, **spec: Any) -> Peer:
    """Starts the official RocketMQ 5.x Python client program with ``spec``."""
    return start_peer("py5", peers, tmp_path, **spec)
