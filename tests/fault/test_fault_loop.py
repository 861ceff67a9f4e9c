"""The short fault loop (loop.py): the cluster of controller mode in network namespaces, with
every period and timeout at its default, one kill -9, one pause and one partition of the
master, each held long enough (8 s, over the 5 s heartbeat timeout and the 1 s scan) for the
controllers to replace it, then every check of checks.py. The cluster must be whole again
(every broker in the SyncStateSet) within 20 s of each heal: a replica that followed a stale
master address for the 30 s until its next registration made that 28 s. About a minute;
root and a working ``ip netns`` needed (skipped otherwise, saying why). `make fault-loop`
runs the long loop."""

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
        "--hold", "kill=2-4", "--hold", "pause=8", "--hold", "partition=8",
        "--settle-timeout", "20", "--catch-up", "30",
    ]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-30000:]
    print(out)
