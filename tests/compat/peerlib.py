"""The pieces of the compatibility suite: peer client programs (``peers/``) run as processes
that report what they did as JSON lines, and the rocketpy servers they talk to (started by
the tests' one harness, tests/servers.py)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from servers import RETRY_IN_A_SECOND, Cluster

PEERS = Path(__file__).with_name("peers")


def compat_cluster(
    store: Path,
    settings: Mapping[str, str] | None = None,
    *,
    grpc: bool = False,
    namesrv_settings: Mapping[str, str] | None = None,
) -> Cluster:
    """A rocketpy name server and broker for peers (:class:`servers.Cluster`) whose retries
    come back after a second: peers' consumers that ask for a redelivery see it soon."""
    return Cluster(
        store,
        {**RETRY_IN_A_SECOND, **(settings or {})},
        grpc=grpc,
        namesrv_settings=namesrv_settings,
    )


def close_pipes(proc: subprocess.Popen[str]) -> None:
    """Closes a finished process's pipes (their reader threads have seen EOF)."""
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None and not pipe.closed:
            with contextlib.suppress(OSError):
                pipe.close()


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
