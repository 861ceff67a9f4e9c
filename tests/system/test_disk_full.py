"""A broker whose store disk fills up — by its own writes, or by another process — refuses
writes with SERVICE_NOT_AVAILABLE (14), never dies (a write through a mapping into space the
file system cannot back would be a SIGBUS), serves reads, loses nothing it acknowledged, and
accepts writes again by itself when space returns.

The store lives on a 48 MiB tmpfs mounted in a private mount namespace (``unshare --mount
--map-root-user``): no root needed, no real disk filled. The scenario itself runs in that
namespace (tests/disk_full_scenario.py) and reports what it found.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCENARIO = Path(__file__).parents[1] / "disk_full_scenario.py"


def _can_mount_tmpfs() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--mount", "--map-root-user", "sh", "-c", "mount -t tmpfs none /mnt"],
        capture_output=True,
    )
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(
    not _can_mount_tmpfs(), reason="needs unshare with user and mount namespaces"
)


def run_scenario(tmp_path: Path, scenario: str) -> dict[str, object]:
    mount = tmp_path / "small-disk"
    mount.mkdir()
    script = (
        f"mount -t tmpfs -o size=48m rocketpy-full {mount} && "
        f"exec {sys.executable} {SCENARIO} {mount} {scenario}"
    )
    proc = subprocess.run(
        ["unshare", "--mount", "--map-root-user", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    found: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return found


def check_refused_and_recovered(found: dict[str, object]) -> None:
    assert found["code"] == 14, found
    assert "disk full" in str(found["remark"]), found
    assert found["alive_after_refusal"] and found["alive_at_end"], found
    assert found["still_refused"] == 14, found
    assert found["lost"] == 0, found
    assert found["read_back"] == found["acked"], found
    assert found["max_offset"] == found["acked"], found
    assert 0 <= float(found["accepted_again_after_s"]) < 30, found  # type: ignore[arg-type]
    assert found["exit_code"] == 0, found


def test_broker_fills_its_own_disk(tmp_path: Path) -> None:
    found = run_scenario(tmp_path, "self")
    assert int(found["acked"]) > 1000, found  # type: ignore[call-overload]
    check_refused_and_recovered(found)
    # Restarted on the full disk, it recovers and serves everything.
    assert found["restart_exit_code"] == 0, found
    assert found["read_back_after_restart"] == found["acked"], found


def test_another_process_fills_the_disk(tmp_path: Path) -> None:
    found = run_scenario(tmp_path, "dd")
    assert found["dd_filled"], found
    assert int(found["sent_before_dd"]) == 500, found  # type: ignore[call-overload]
    check_refused_and_recovered(found)
