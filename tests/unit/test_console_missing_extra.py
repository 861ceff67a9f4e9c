"""``rocketpy dev --console-port`` and ``rocketpy console`` without the console extra (Flask,
waitress) say how to install it in one line and exit non-zero, before starting anything.

The missing extra is simulated in a child process: a ``sitecustomize`` on its PYTHONPATH puts
an import blocker for Flask and waitress on ``sys.meta_path``, as if they were not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocketpy.console import MISSING_EXTRA

BLOCKER = '''
import sys


class _NotInstalled:
    """Finds Flask and waitress nowhere, as in a venv without rocketpy-mq[console]."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("flask", "waitress"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
'''


@pytest.mark.parametrize(
    "argv",
    [
        ["dev", "--namesrv-port", "0", "--port", "0", "--console-port", "0"],
        ["console", "-n", "127.0.0.1:9876", "--port", "0"],
    ],
    ids=["dev", "console"],
)
def test_missing_console_extra_is_one_line(argv: list[str], tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    if argv[0] == "dev":
        argv = [*argv, "--store-dir", str(tmp_path / "store")]
    done = subprocess.run(
        [sys.executable, "-m", "rocketpy", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert done.stderr.strip() == f"rocketpy: {MISSING_EXTRA}", done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    # Nothing was started on the way: no ready line, no store made.
    assert done.stdout == ""
    assert not (tmp_path / "store").exists()
