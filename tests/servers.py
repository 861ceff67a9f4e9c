"""The tests' one harness for server processes.

Every server a test starts as a process goes through :class:`ServerProcess`: ``rocketpy
namesrv``, ``rocketpy broker``, ``rocketpy dev`` (both in one process) and the peer servers of
the compatibility suite (rocketmq-rust's name server and broker). It starts a command, waits for
the line saying where it listens, and stops it with SIGTERM (a clean stop is exit code 0) or
SIGKILL (a crash); :meth:`ServerProcess.start` again brings it back, on the same port when the
port was fixed. The factories :func:`namesrv`, :func:`broker` and :func:`dev` build the rocketpy
commands on 127.0.0.1; :class:`Cluster` is a name server and a broker on free ports. ACL, TLS,
HA and gRPC are broker-config keys, made by :func:`acl_settings`, :func:`tls_server_settings`,
:func:`tls_client_settings`, :func:`ha_settings` and :func:`grpc_settings`.

Servers the tests embed in their own process (``rocketpy._native.NameServer``/``Broker``,
``rocketpy.server.DevServer``) are the binding's API under test, not processes: they are not
started here.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from rocketpy.server import DevServer

#: CommitLog file size of test servers (16 MiB): small files keep each test server's disk use
#: (and the prefault window) small.
TEST_COMMIT_LOG_FILE = 16 * 1024 * 1024

#: The host disk's fullness is not what these tests are about: the machine's disk may be shared
#: and 90 % used by others (a CI run was refused every put), so ratio checks are off for test
#: servers; a write that finds no space is still refused (tests/system/test_disk_full.py).
HOST_DISK_SETTINGS = {
    "diskMaxUsedSpaceRatio": "100",
    "diskSpaceCleanForciblyRatio": "100",
    "diskSpaceWarningLevelRatio": "100",
}

#: Controller-mode keys of a test broker (crates/broker/tests/it/controller_mode.rs uses the
#: same): every replica starts as a slave and the controller tells it its role; short periods
#: so that tests see role and SyncStateSet changes within a second.
CONTROLLER_MODE_BROKER_SETTINGS = {
    "brokerRole": "SLAVE",
    "brokerId": "-1",
    "enableControllerMode": "true",
    "allAckInSyncStateSet": "true",
    "syncBrokerMetadataPeriod": "200",
    "checkSyncStateSetPeriod": "200",
    "brokerHeartbeatInterval": "100",
    "registerNameServerPeriod": "1000",
    "haSendHeartbeatInterval": "200",
    "slaveTimeout": "5000",
}

#: What every test broker of :func:`broker` and :class:`Cluster` has: it advertises loopback
#: (not this machine's own address), small CommitLog files, and the host disk ignored.
BASE_BROKER_SETTINGS = {
    "brokerIP1": "127.0.0.1",
    "mapedFileSizeCommitLog": str(TEST_COMMIT_LOG_FILE),
    **HOST_DISK_SETTINGS,
}

#: :func:`broker`'s default, for restart tests: a restarted broker is back in the name server's
#: table within a second instead of RocketMQ's 30 s.
BROKER_TEST_SETTINGS = {**BASE_BROKER_SETTINGS, "registerNameServerPeriod": "1000"}

#: Retries come back after a second instead of after 10 s, 30 s, 1 min, ... (every delay level
#: is 1 s), so tests that wait for a redelivery are quick.
RETRY_IN_A_SECOND = {"messageDelayLevel": " ".join(["1s"] * 18)}

#: The ready lines of ``rocketpy namesrv``, ``broker`` and ``dev`` (python/rocketpy/cli.py);
#: the named groups become :attr:`ServerProcess.addresses`.
NAMESRV_READY = r"rocketpy name server listening on (?P<namesrv>\S+)"
BROKER_READY = r"rocketpy broker listening on (?P<listen>\S+) as (?P<broker>\S+)"
DEV_READY = (
    r"rocketpy dev ready: namesrv=(?P<namesrv>\S+) broker=(?P<broker>\S+)"
    r"(?: slave=(?P<slave>\S+))? store=(?P<store>\S+)"
)
#: The line after a broker's ready line naming its gRPC endpoint (RocketMQ 5.x clients).
GRPC_LINE = r"gRPC endpoint for RocketMQ 5\.x clients: (?P<grpc>\S+)"


def free_port(span: int = 1) -> int:
    """A port of 127.0.0.1 that nothing listens on now, with the ``span - 1`` ports below it
    free too (a broker also listens at its port - 2: its VIP channel)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port - span > 1024 and all(_free(p) for p in range(port - span + 1, port)):
            return port


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class ServerProcess:
    """One server command as a process; :meth:`start` again after :meth:`stop` or :meth:`kill`
    runs it again with the same arguments.

    Its stdout and stderr go, merged, to :attr:`output` (a thread drains the pipe, so a chatty
    server never blocks on a full pipe) or, with ``log``, to that file. ``ready`` is a regular
    expression for the line saying the server serves; its named groups are the server's
    :attr:`addresses`. Without ``ready`` :meth:`start` returns once the process runs and the
    caller checks readiness its own way (a peer broker that says nothing: its registration).
    """

    def __init__(
        self,
        argv: Sequence[str | os.PathLike[str]],
        ready: str | None,
        *,
        name: str | None = None,
        env: Mapping[str, str] | None = None,
        log: Path | None = None,
        store: Path | None = None,
    ) -> None:
        if ready is not None and log is not None:
            # The ready line is read from the pipe; a server writing to a file has none.
            raise ValueError("a server logging to a file has no ready line to wait for")
        self.argv = [os.fspath(a) for a in argv]
        self.ready = re.compile(ready) if ready is not None else None
        self.name = name or Path(self.argv[0]).name
        self.env = dict(env) if env is not None else None
        self.log = log
        #: The store directory (``rocketpy broker`` and ``dev``), for tests that look into it.
        self.store = store
        self.proc: subprocess.Popen[str] | None = None
        #: Every line the server printed, over all its starts.
        self.output: list[str] = []
        #: The ready line of the latest start and its match.
        self.ready_line = ""
        self.ready_match: re.Match[str] | None = None
        self._cond = threading.Condition()
        self._eof = True
        self._drainer: threading.Thread | None = None
        self._log_file: IO[str] | None = None
        self._after_ready = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, timeout: float = 60) -> Self:
        """Starts the command and waits up to ``timeout`` seconds for its ready line; a server
        that does not get there is killed and fails the test with what it printed."""
        if self.running:
            raise RuntimeError(f"{self.name} is running already (pid {self.pid})")
        self._end(signal.SIGKILL, 30)  # reaps a run that ended by itself
        env = {**os.environ, **self.env} if self.env is not None else None
        if self.log is not None:
            self._log_file = open(self.log, "a")  # noqa: SIM115 - closed by _end
        with self._cond:
            since = len(self.output)
            self._eof = self._log_file is not None
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=self._log_file if self._log_file is not None else subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",  # a peer's log may not be UTF-8: never kill the drainer
                env=env,
            )
        except BaseException:
            self._end(signal.SIGKILL, 30)  # closes the log file
            raise
        if self._log_file is None:
            self._drainer = threading.Thread(
                target=self._drain, args=(self.proc,), name=f"drain {self.name}", daemon=True
            )
            self._drainer.start()
        self.ready_line, self.ready_match = "", None
        self._after_ready = since
        if self.ready is None:
            return self
        found = self._wait_line(self.ready, since, timeout)
        if found is None:
            code = self.kill()
            raise AssertionError(
                f"{self.name} did not start (waited up to {timeout} s, exit code {code}):\n"
                + self.text()
            )
        self.ready_match, index = found
        self.ready_line = self.output[index]
        self._after_ready = index + 1
        return self

    def stop(self, timeout: float = 30, signum: int = signal.SIGTERM) -> int:
        """Asks the server to stop (SIGTERM, or ``signum``) and waits; its exit code (0 when
        clean). One that has not stopped after ``timeout`` seconds is killed."""
        return self._end(signum, timeout)

    def kill(self) -> int:
        """SIGKILL: a crash. The exit code (-9 unless the process had ended already)."""
        return self._end(signal.SIGKILL, 30)

    def restart(self, timeout: float = 60, *, crash: bool = False) -> Self:
        """Stops the server (with SIGKILL when ``crash``) and starts it again."""
        if crash:
            self.kill()
        else:
            self.stop()
        return self.start(timeout)

    def _end(self, signum: int, timeout: float) -> int:
        proc, self.proc = self.proc, None
        code = 0
        if proc is not None:
            if proc.poll() is None:
                proc.send_signal(signum)
            try:
                code = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
        if self._drainer is not None:
            # The pipe ends with the process (unless a child of it holds it open).
            self._drainer.join(10)
            self._drainer = None
        for f in (proc.stdout if proc is not None else None, self._log_file):
            if f is not None:
                with contextlib.suppress(OSError):
                    f.close()
        self._log_file = None
        with self._cond:
            self._eof = True  # nothing more comes from this run
            self._cond.notify_all()
        return code

    # -- state -------------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        """The process id of the running server."""
        assert self.proc is not None, f"{self.name} is not running"
        return self.proc.pid

    @property
    def running(self) -> bool:
        """Started and not ended (by a stop, a kill or by itself)."""
        return self.proc is not None and self.proc.poll() is None

    @property
    def addresses(self) -> dict[str, str]:
        """What the ready line named: ``namesrv``, ``broker`` (the advertised address), ..."""
        if self.ready_match is None:
            return {}
        return {k: v for k, v in self.ready_match.groupdict().items() if v is not None}

    @property
    def namesrv(self) -> str:
        """The name server's address (``rocketpy namesrv``, ``dev``); "" for a broker."""
        return self.addresses.get("namesrv", "")

    @property
    def broker(self) -> str:
        """The broker's advertised address (``rocketpy broker``, ``dev``); "" otherwise."""
        return self.addresses.get("broker", "")

    @property
    def address(self) -> str:
        """Where clients reach this server: its broker, else its name server."""
        return self.broker or self.namesrv

    def text(self) -> str:
        """Everything the server printed (its log file's content with ``log``)."""
        if self.log is not None:
            try:
                return self.log.read_text(errors="replace")
            except FileNotFoundError:
                return ""
        with self._cond:
            return "".join(self.output)

    def tail(self, chars: int = 4000) -> str:
        """The end of :meth:`text`, for failure messages."""
        return self.text()[-chars:]

    # -- output ------------------------------------------------------------------------------

    def wait_for_line(self, pattern: str, timeout: float = 30) -> re.Match[str]:
        """The first line after the ready line matching ``pattern`` (what a server prints
        after it: its metrics address, its gRPC endpoint), waiting up to ``timeout`` s."""
        found = self._wait_line(re.compile(pattern), self._after_ready, timeout)
        if found is None:
            raise AssertionError(f"{self.name}: no line matching {pattern!r}:\n{self.text()}")
        return found[0]

    def _drain(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        # The pipe is closed by _end when the process is gone; a read racing that ends here.
        with contextlib.suppress(OSError, ValueError):
            for line in proc.stdout:
                with self._cond:
                    self.output.append(line)
                    self._cond.notify_all()
        with self._cond:
            # A drainer outliving its run (a child of it held the pipe) must not end a newer one.
            if proc is self.proc:
                self._eof = True
            self._cond.notify_all()

    def _wait_line(
        self, pattern: re.Pattern[str], since: int, timeout: float
    ) -> tuple[re.Match[str], int] | None:
        """The first line from ``output[since]`` on matching ``pattern`` and its index; None
        when the output ended or ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        with self._cond:
            index = since
            while True:
                while index < len(self.output):
                    m = pattern.search(self.output[index])
                    if m:
                        return m, index
                    index += 1
                left = deadline - time.monotonic()
                if self._eof or left <= 0:
                    return None
                self._cond.wait(left)


# -- rocketpy's servers --------------------------------------------------------------------------


def settings_args(settings: Mapping[str, str] | None) -> list[str]:
    """``--set key=value`` arguments of ``rocketpy namesrv``/``broker``/``dev``."""
    return [f"--set={k}={v}" for k, v in (settings or {}).items()]


def rocketpy_process(*args: str, ready: str | None, store: Path | None = None) -> ServerProcess:
    """``rocketpy <args>`` (this venv's Python, warnings and errors logged only) as a
    :class:`ServerProcess`; for a command line the factories below do not make."""
    argv = [sys.executable, "-m", "rocketpy", "--log-level", "warn", *args]
    return ServerProcess(argv, ready, name=f"rocketpy {args[0]}", store=store)


def namesrv(port: int = 0, settings: Mapping[str, str] | None = None) -> ServerProcess:
    """A name server on ``127.0.0.1:port`` (0: a free port, a new one at every start) with
    name-server keys ``settings``."""
    args = ["namesrv", "--host", "127.0.0.1", "--port", str(port), *settings_args(settings)]
    return rocketpy_process(*args, ready=NAMESRV_READY)


def broker(
    namesrv_addr: str,
    port: int,
    store: Path,
    settings: Mapping[str, str] | None = None,
    *,
    base: Mapping[str, str] = BROKER_TEST_SETTINGS,
) -> ServerProcess:
    """A broker on ``127.0.0.1:port`` (0: a free port) storing in ``store`` and registering
    with ``namesrv_addr``; broker-config keys ``settings`` over ``base``."""
    args = ["broker", "-n", namesrv_addr, "--host", "127.0.0.1", "--port", str(port)]
    sets = settings_args({**base, **(settings or {})})
    return rocketpy_process(
        *args, "--store-dir", str(store), *sets, ready=BROKER_READY, store=store
    )


def in_process_dev(store: Path, **options: Any) -> DevServer:
    """A :class:`~rocketpy.server.DevServer` (name server and broker in this process, for
    tests of the embedded API) on free ports of 127.0.0.1, storing in ``store``, the host
    disk ignored; ``options`` are DevServer's (``broker_config`` keys go over
    :data:`HOST_DISK_SETTINGS`)."""
    from rocketpy.server import DevServer

    config = {**HOST_DISK_SETTINGS, **options.pop("broker_config", {})}
    return DevServer(
        namesrv_port=0, broker_port=0, store_dir=store, broker_config=config, **options
    )


def dev(store: Path, *extra: str, settings: Mapping[str, str] | None = None) -> ServerProcess:
    """``rocketpy dev`` (a name server and a broker in one process) on free ports of
    127.0.0.1, storing in ``store``; ``extra`` arguments (``--grpc-port 0``, ``--set k=v``) and
    broker-config keys ``settings`` come after the test defaults, so they win."""
    given = [*extra, *(settings or {})]
    if not any("mapedFileSizeCommitLog" in e for e in given):
        extra = ("--set", f"mapedFileSizeCommitLog={TEST_COMMIT_LOG_FILE}", *extra)
    return rocketpy_process(
        "dev", "--namesrv-port", "0", "--port", "0", "--store-dir", str(store),
        *settings_args(HOST_DISK_SETTINGS), *extra, *settings_args(settings),
        ready=DEV_READY, store=store,
    )  # fmt: skip


class Cluster:
    """A name server and a broker registered with it, separate ``rocketpy`` processes on free
    ports of 127.0.0.1, started at once; with ``grpc``, the broker also serves RocketMQ 5.x
    clients (gRPC) on a free port, at :attr:`grpc`.

    ``settings`` are the broker's keys over ``base``, ``namesrv_settings`` the name server's
    (a TLS name server, one checking ACL).
    """

    def __init__(
        self,
        store: Path,
        settings: Mapping[str, str] | None = None,
        *,
        namesrv_settings: Mapping[str, str] | None = None,
        grpc: bool = False,
        base: Mapping[str, str] = BASE_BROKER_SETTINGS,
    ) -> None:
        broker_settings = {**(settings or {}), **(grpc_settings() if grpc else {})}
        self.namesrv_proc = namesrv(0, namesrv_settings).start()
        self.broker_proc = broker(self.namesrv_proc.namesrv, 0, store, broker_settings, base=base)
        try:
            self.broker_proc.start()
            self.grpc = self.broker_proc.wait_for_line(GRPC_LINE)["grpc"] if grpc else ""
        except BaseException:
            # No server outlives a failed start: the fixture that made it never stops it.
            self.broker_proc.kill()
            self.namesrv_proc.kill()
            raise

    @property
    def namesrv(self) -> str:
        """The name server's address."""
        return self.namesrv_proc.namesrv

    @property
    def broker(self) -> str:
        """The broker's advertised address."""
        return self.broker_proc.broker

    def stop(self) -> None:
        """Stops the broker, then the name server; both must stop cleanly."""
        codes = (self.broker_proc.stop(), self.namesrv_proc.stop())
        assert codes == (0, 0), self.broker_proc.text() + self.namesrv_proc.text()


# -- broker-config keys ---------------------------------------------------------------------------


def acl_settings(acl_file: Path, signer: tuple[str, str] | None = None) -> dict[str, str]:
    """RocketMQ 4.x ACL checked against ``acl_file`` (plain_acl.yml), for a name server or a
    broker; with ``signer`` (access key, secret key) a broker signs its own registrations, as
    a name server checking ACL wants."""
    keys = {"aclEnable": "true", "aclFile": str(acl_file)}
    if signer is not None:
        keys.update(accessKey=signer[0], secretKey=signer[1])
    return keys


def tls_server_settings(mode: str, cert: Path, key: Path, **more: str) -> dict[str, str]:
    """TLS on a server's listener: ``mode`` disabled, permissive or enforcing, its certificate
    and key; ``more`` keys as they are (``tls.server.need.client.auth``, ...)."""
    return {
        "tls.server.mode": mode,
        "tls.server.certPath": str(cert),
        "tls.server.keyPath": str(key),
        **more,
    }


def tls_client_settings(
    ca: Path, cert: Path | None = None, key: Path | None = None
) -> dict[str, str]:
    """A broker's own connections (its registrations) over TLS, checking the name server's
    certificate against ``ca``; with ``cert`` and ``key``, presenting its own."""
    keys = {
        "tls.enable": "true",
        "tls.client.authServer": "true",
        "tls.client.trustCertPath": str(ca),
    }
    if cert is not None and key is not None:
        keys.update({"tls.client.certPath": str(cert), "tls.client.keyPath": str(key)})
    return keys


def ha_settings(name: str, role: str, ha_port: int | None = None) -> dict[str, str]:
    """A broker of group ``name`` replicating: ``role`` SYNC_MASTER or ASYNC_MASTER
    (replicating on ``ha_port``) or SLAVE (broker id 1; it finds its master through the name
    server)."""
    keys = {"brokerName": name, "brokerRole": role}
    if role == "SLAVE":
        keys["brokerId"] = "1"
    if ha_port is not None:
        keys["haListenPort"] = str(ha_port)
    return keys


def grpc_settings() -> dict[str, str]:
    """RocketMQ 5.x clients (gRPC) served on a free port (:data:`GRPC_LINE` names it)."""
    return {
        "grpcServerPort": "0",
        # 5.x receives may ask for invisible times from 1 s (10 s by default): the tests
        # wait for redeliveries that long.
        "minInvisibleTimeMillsForRecv": "1000",
    }
