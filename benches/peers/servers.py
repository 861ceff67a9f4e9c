"""The three servers as child processes: each on free ports of 127.0.0.1 with a temporary
data directory that :meth:`Server.stop` removes.

A server runs in its own session, so a Ctrl-C at the terminal reaches only the benchmark,
whose ``finally`` stops it; the kernel also sends it SIGTERM should the benchmark die
without cleaning up (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import ctypes
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from benches.peers.settings import Settings

_PR_SET_PDEATHSIG = 1
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def free_port() -> int:
    """A port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGTERM when the benchmark's process goes away."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Holds SIGINT, SIGTERM and SIGHUP back (main thread only) until the block is done,
    then raises KeyboardInterrupt if one came."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)

    previous = {s: signal.signal(s, note) for s in _STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if caught:
            raise KeyboardInterrupt(signal.Signals(caught[0]).name)


def _first_line(argv: list[str]) -> str:
    """The first line a command prints (a version string), or why there is none."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except OSError as e:
        return f"unknown ({e})"
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else "unknown"


class Server(ABC):
    """One server process. Subclasses give its command line, the log line that says it is
    ready, the signal that stops it cleanly, and how clients reach it.

    Attributes:
        name: the system's short name (``rocketpy``, ``nats``, ``redis``).
        title: the system's name in the table, with its durability setting in brackets.
        durability: when an acknowledged message reaches the disk, in this configuration.
    """

    name = ""
    title = ""
    durability = ""
    ready_text = ""
    stop_signal = signal.SIGTERM

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.dir = Path(tempfile.mkdtemp(prefix=f"bench-peers-{self.name}-"))
        self.log_path = self.dir / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @abstractmethod
    def command(self) -> list[str]:
        """The command line (ports and directories already chosen)."""

    @property
    @abstractmethod
    def address(self) -> str:
        """What a client connects to."""

    @staticmethod
    @abstractmethod
    def version() -> str:
        """The server's version, as the program reports it."""

    def start(self, timeout: float = 60.0) -> Server:
        """Starts the process and waits until its log says it is ready."""
        data = self.dir / "data"
        data.mkdir(exist_ok=True)
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.dir,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        deadline = time.monotonic() + timeout
        while self.ready_text not in self.log():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.log()[-2000:]
                self.stop()
                raise RuntimeError(f"{self.name} did not start:\n{tail}")
            time.sleep(0.05)
        return self

    @property
    def pid(self) -> int:
        """The server process's id (0 when not running)."""
        return self.proc.pid if self.proc is not None else 0

    def log(self) -> str:
        """What the server printed so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self, timeout: float = 30.0) -> None:
        """Stops the process (cleanly, then with SIGKILL after ``timeout``) and removes its
        directory; a Ctrl-C meanwhile waits until that is done. Safe to call more than once."""
        proc, self.proc = self.proc, None
        with _signals_deferred():
            try:
                if proc is not None and proc.poll() is None:
                    proc.send_signal(self.stop_signal)
                    proc.wait(timeout)
            except subprocess.TimeoutExpired:
                print(f"{self.name} did not stop in {timeout:.0f} s: SIGKILL", file=sys.stderr)
            finally:
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait()
                shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class RocketpyServer(Server):
    """``rocketpy dev``: a name server and a broker in one process, default broker settings
    but one: a pull may carry ``PEER_FETCH`` messages (``maxTransferCountOnMessageInMemory``;
    RocketMQ's default of 32 would cap the consumer's batches below the other systems')."""

    name = "rocketpy"
    title = "rocketpy [ASYNC_FLUSH]"
    durability = (
        "ASYNC_FLUSH (the default): ack once in the page cache (mmap); write-back started "
        "every 0.5 s, msync every 10 s. maxTransferCountOnMessageInMemory = PEER_FETCH "
        "(RocketMQ's default 32 caps a pull at 32 messages)"
    )
    ready_text = "rocketpy dev ready"
    stop_signal = signal.SIGINT

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__(settings)
        self.namesrv_port, self.broker_port = free_port(), free_port()

    def command(self) -> list[str]:
        rocketpy = Path(sys.executable).with_name("rocketpy")
        return [
            str(rocketpy),
            "--log-level",
            "warn",
            "dev",
            "--namesrv-port",
            str(self.namesrv_port),
            "--port",
            str(self.broker_port),
            "--store-dir",
            str(self.dir / "data"),
            "--set",
            f"maxTransferCountOnMessageInMemory={max(32, self.settings.fetch)}",
        ]

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    @staticmethod
    def version() -> str:
        return _first_line([str(Path(sys.executable).with_name("rocketpy")), "--version"])


class NatsServer(Server):
    """``nats-server -js``: JetStream with file storage under the temporary directory."""

    name = "nats"
    title = "NATS JetStream [fsync 2 min]"
    durability = (
        "JetStream file store, defaults: ack after write() to the block file (page cache); "
        "fsync every 2 min (nats-server 2.9 streams; sync_interval is settable from 2.10)"
    )
    ready_text = "Server is ready"

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__(settings)
        self.port = free_port()

    def command(self) -> list[str]:
        return [
            "nats-server",
            "-js",
            "-a",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-sd",
            str(self.dir / "data"),
        ]

    @property
    def address(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @staticmethod
    def version() -> str:
        return _first_line(["nats-server", "--version"])


class RedisServer(Server):
    """``redis-server`` with the append-only file on, fsync every second, no RDB snapshots."""

    name = "redis"
    title = "Redis Streams [AOF everysec]"
    durability = (
        "AOF appendfsync everysec: ack after write() to the AOF (page cache); fsync every 1 s"
    )
    ready_text = "Ready to accept connections"

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__(settings)
        self.port = free_port()

    def command(self) -> list[str]:
        return [
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.dir / "data"),
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
            "--save",
            "",
        ]

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @staticmethod
    def version() -> str:
        return _first_line(["redis-server", "--version"])


#: The server class of each system.
SERVERS: dict[str, type[Server]] = {
    "rocketpy": RocketpyServer,
    "nats": NatsServer,
    "redis": RedisServer,
}
