"""The short fault loop (loop.py): the cluster of controller mode in network namespaces, one
kill -9, one pause and one partition of the master, each held long enough (12 s, over the 10 s
heartbeat timeout) for the controllers to replace it, then every check of checks.py. About a
minute; root and a working ``ip netns`` needed (skipped otherwise, saying why). `make
fault-loop` runs the long loop."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from netns import unusable  # noqa: E402


def test_short_fault_loop() -> None:
    why = unusable()
    if why:
        pytest.skip(why)
    argv = [
        sys.executable, str(HERE / "loop.py"), "--faults", "3", "--in-order",
        "--kinds", "kill,pause,partition",
        "--hold", "kill=2-4", "--hold", "pause=12", "--hold", "partition=12",
        "--settle-timeout", "40", "--catch-up", "30",
    ]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-30000:]
    print(out)
