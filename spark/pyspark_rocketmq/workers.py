"""Which Python Spark's workers run, so that they can import this package.

Spark runs every Python data source in Python worker processes it starts itself: the
automatic look-up of ``pyspark_*`` data sources, the planning of reads and the executors'
tasks. Unless ``PYSPARK_PYTHON`` says otherwise, that is ``python3`` from ``PATH`` — outside an
activated virtualenv a Python without ``pyspark_rocketmq``, and the read fails with
``DATA_SOURCE_NOT_FOUND`` (or ``ModuleNotFoundError`` after :func:`~pyspark_rocketmq.register`).

Importing ``pyspark_rocketmq`` before the session starts points the workers at the driver's
own interpreter (:func:`use_driver_python`); a session that started earlier cannot be changed,
and :func:`check_workers` then says what to set.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from typing import Any

log = logging.getLogger("pyspark_rocketmq")

#: The variable Spark reads (in the JVM it starts, and in PySpark's SparkContext).
VARIABLE = "PYSPARK_PYTHON"


def _jvm_running() -> bool:
    """Whether the Spark JVM this process talks to is up already (its environment, which its
    workers inherit, is then fixed): started by this process, or by ``spark-submit`` /
    the ``pyspark`` shell, which hand the driver their gateway's port."""
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return True
    try:
        from pyspark import SparkContext
    except ImportError:
        return False
    return SparkContext._gateway is not None


def use_driver_python() -> bool:
    """Sets ``PYSPARK_PYTHON`` to this interpreter when nothing set it and no Spark JVM runs
    yet, so a session started afterwards (in this process, local mode, an un-activated
    virtualenv) runs its Python workers where this package is installed. Returns whether it
    set it. With ``PYSPARK_PYTHON`` set, or a JVM already running, nothing changes."""
    if os.environ.get(VARIABLE) or not sys.executable or _jvm_running():
        return False
    os.environ[VARIABLE] = sys.executable
    log.debug("%s set to this interpreter, %s", VARIABLE, sys.executable)
    return True


class WorkerPythonError(RuntimeError):
    """Spark's Python workers run an interpreter that cannot import ``pyspark_rocketmq``."""


def workers_python(spark: Any) -> str:
    """The interpreter a classic (non-Connect) session's workers start: its JVM's
    ``PYSPARK_PYTHON``, else Spark's default ``python3`` from ``PATH``."""
    return str(spark._jvm.java.lang.System.getenv(VARIABLE) or "python3")


def check_workers(spark: Any) -> None:
    """Raises :class:`WorkerPythonError` naming ``PYSPARK_PYTHON`` when ``spark`` runs in local
    mode and its workers' Python cannot import this package. Nothing is checked for a
    cluster (the workers' Python is on other machines) or a Spark Connect session."""
    try:
        master = spark.sparkContext.master
        exe = workers_python(spark)
    except Exception:  # Spark Connect: no JVM in this process, nothing to look at
        return
    if not str(master).startswith("local") or exe == sys.executable:
        return
    path = shutil.which(exe) or exe
    try:
        found = subprocess.run(
            [path, "-c", "import pyspark_rocketmq"], capture_output=True, timeout=60
        ).returncode == 0  # fmt: skip
    except OSError:
        found = False
    if not found:
        raise WorkerPythonError(
            f"Spark's Python workers run {path}, which cannot import pyspark_rocketmq, so "
            f"reads and writes of the rocketmq format would fail in them. Set {VARIABLE}="
            f"{sys.executable} before the session starts (importing pyspark_rocketmq before "
            "it starts does that), or install rocketpy and rocketpy-spark into that Python"
        )
