"""``rocketpy dev`` as a subprocess for tests: a name server and a broker on free ports of
127.0.0.1 (imported by conftest's fixtures and by tests that start their own)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

#: CommitLog file size of test servers (16 MiB).
TEST_COMMIT_LOG_FILE = 16 * 1024 * 1024

#: The host disk's fullness is not what these tests are about: the machine's disk may be shared
#: and 90 % used by others (a CI run was refused every put), so ratio checks are off for test
#: servers; a write that finds no space is still refused (tests/system/test_disk_full.py).
HOST_DISK_SETTINGS = {
    "diskMaxUsedSpaceRatio": "100",
    "diskSpaceCleanForciblyRatio": "100",
    "diskSpaceWarningLevelRatio": "100",
}

READY = re.compile(r"rocketpy dev ready: namesrv=(\S+) broker=(\S+) store=(\S+)")


class DevProcess:
    """``rocketpy dev`` as a subprocess: name server and broker on free ports of 127.0.0.1."""

    def __init__(self, store: Path, *extra: str) -> None:
        self.store = store
        if not any("mapedFileSizeCommitLog" in e for e in extra):
            # Small files keep each test server's disk use (and the prefault window) small.
            extra = ("--set", f"mapedFileSizeCommitLog={TEST_COMMIT_LOG_FILE}", *extra)
        disk = [a for k, v in HOST_DISK_SETTINGS.items() for a in ("--set", f"{k}={v}")]
        self.extra = (*disk, *extra)
        self.proc: subprocess.Popen[str] | None = None
        self.namesrv = ""
        self.broker = ""
        self.stderr: list[str] = []

    def start(self, timeout: float = 60) -> DevProcess:
        cmd = [
            sys.executable, "-m", "rocketpy", "--log-level", "warn", "dev",
            "--namesrv-port", "0", "--port", "0", "--store-dir", str(self.store), *self.extra,
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ)
        )
        self._drainer = threading.Thread(target=self._drain_stderr, daemon=True)
        self._drainer.start()
        line = self._readline(timeout)
        m = READY.search(line)
        if not m:
            self.stop()
            raise AssertionError(f"rocketpy dev did not start: {line!r}\n{''.join(self.stderr)}")
        self.namesrv, self.broker = m.group(1), m.group(2)
        return self

    def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def _readline(self, timeout: float) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        out: list[str] = []
        t = threading.Thread(target=lambda: out.append(self.proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        t.start()
        t.join(timeout)
        return out[0] if out else ""

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, wait, and return the exit code (a clean stop is 0)."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._drainer.join(5)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        self.proc = None
        return code
