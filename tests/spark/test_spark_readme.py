"""spark/README.md as a user runs it: its set-up block in a shell, then every Python block, as
written, in one interpreter (the page says its blocks continue one session), started as
``/work/main/.venv/bin/python`` from a shell whose virtualenv is not active — so Spark's Python
workers are not the venv's unless the package sees to it. Against a ``rocketpy dev`` of the
test's own, named by ``$NAMESRV_ADDR`` as the page allows."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from examples import ROOT, block_after, fenced_blocks

README = ROOT / "spark" / "README.md"
VENV_BIN = Path(sys.executable).parent

#: Runs the blocks given as JSON one after the other in one namespace, each compiled under
#: its README line numbers (a traceback points at the README), and says which one failed.
RUNNER = """
import json, sys, traceback
namespace = {"__name__": "__main__"}
for path, line, text in json.loads(sys.argv[1]):
    print(f"=== {path}:{line} ===", flush=True)
    try:
        exec(compile("\\n" * line + text, path, "exec"), namespace)
    except BaseException:
        traceback.print_exc()
        print(f"=== FAILED {path}:{line} ===", flush=True)
        sys.exit(1)
    sys.stdout.flush()
"""


def unactivated_env(**extra: str) -> dict[str, str]:
    """This environment as a shell without the virtualenv active has it: the venv's bin off
    ``PATH``, no ``VIRTUAL_ENV``, and nothing naming Spark's worker Python."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYSPARK_PYTHON",
                                                            "PYSPARK_DRIVER_PYTHON", "PYTHONPATH")}  # fmt: skip
    venv = {str(VENV_BIN), str(VENV_BIN.resolve())}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p not in venv)
    env.update(extra)
    return env


def check_precondition(env: dict[str, str]) -> None:
    """The test proves something only if ``python3`` on that ``PATH`` lacks the package."""
    python3 = shutil.which("python3", path=env["PATH"])
    if python3 is None:
        return
    probe = subprocess.run([python3, "-c", "import pyspark_rocketmq"], env=env,
                           capture_output=True)  # fmt: skip
    assert probe.returncode != 0, f"{python3} imports pyspark_rocketmq: nothing to test"


def run_blocks(blocks: list[tuple[str, int, str]], env: dict[str, str], cwd: Path) -> str:
    """Runs the blocks with the venv's interpreter by its path; their merged output."""
    proc = subprocess.run(
        [str(VENV_BIN / "python"), "-c", RUNNER, json.dumps(blocks)],
        env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=280,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-6000:]
    return proc.stdout


def test_every_python_block_runs_as_written_from_an_unactivated_venv(dev_server, tmp_path):
    env = unactivated_env(NAMESRV_ADDR=dev_server.namesrv)
    check_precondition(env)
    setup = block_after(README, "## Trying it", "sh")
    done = subprocess.run(["bash", "-euc", setup.text], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, f"{setup.id}:\n{done.stdout}{done.stderr}"

    blocks = fenced_blocks(README, "python")
    assert len(blocks) >= 3, "the page's examples moved: every one must run here"
    rel = str(README.relative_to(ROOT))
    out = run_blocks([(rel, b.line, b.text) for b in blocks], env, tmp_path)
    assert "FAILED" not in out
    # The first block's batch read (TagA only) and streaming query (everything) printed rows.
    assert "hello 1" in out and "hello 2" in out, out[-4000:]
    assert "offsetsBehindLatest" in out, out[-4000:]


REGISTER_LATE = """
from pyspark.sql import SparkSession

spark = SparkSession.builder.master("local[1]").getOrCreate()
import pyspark_rocketmq  # too late: the session's JVM has its environment

try:
    pyspark_rocketmq.register(spark)
except pyspark_rocketmq.WorkerPythonError as e:
    print("REFUSED:", e)
else:
    print("REGISTERED")
"""


def test_register_in_a_session_started_first_names_pyspark_python(tmp_path):
    env = unactivated_env()
    check_precondition(env)
    out = run_blocks([("register_late.py", 0, REGISTER_LATE)], env, tmp_path)
    assert "REFUSED:" in out and "PYSPARK_PYTHON=" in out, out[-3000:]
    assert str(VENV_BIN / "python") in out


@pytest.mark.parametrize(
    ("given", "expected"),
    [(None, "driver"), ("/opt/other/python", "/opt/other/python")],
)
def test_import_sets_the_workers_python_only_when_unset(given, expected, tmp_path):
    env = unactivated_env(**({"PYSPARK_PYTHON": given} if given else {}))
    code = "import os, pyspark_rocketmq; print(os.environ['PYSPARK_PYTHON'])"
    out = subprocess.run([str(VENV_BIN / "python"), "-c", code], env=env, cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    assert out == (str(VENV_BIN / "python") if expected == "driver" else expected)
