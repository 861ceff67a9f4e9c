"""A Spark standalone cluster on this machine, started from the pyspark installation: a
master and workers as separate processes on loopback (each worker starts its executors as
further JVMs, which start their own Python workers), as a production cluster runs them. For
trying cluster mode, the tests (``tests/test_spark_cluster.py``) and the benchmark
(``spark/benchmarks/read_vs_parquet.py --cluster``); not for production."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def spark_session(master: str, app: str, **conf: str) -> Any:
    """A SparkSession on loopback only, with no UI, this Python on the executors (where the
    packages are installed) and quiet logs; ``conf`` adds Spark settings."""
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    # Before the JVM starts: Spark otherwise binds and advertises the host's own address.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    for k, v in conf.items():
        builder = builder.config(k, v)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


class SparkCluster:
    """``with SparkCluster(work_dir, workers=2) as c: spark_session(c.url, "app")``: logs and
    worker directories go under ``work_dir``; ``stop`` (or leaving the block) ends every
    process it started."""

    def __init__(self, work: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.work, self.workers, self.cores, self.memory = work, workers, cores, memory
        import pyspark

        self.home = Path(pyspark.__file__).parent
        self.procs: list[tuple[subprocess.Popen[bytes], Path]] = []
        self.url = ""

    def _start(self, name: str, *args: str) -> Path:
        log = self.work / f"{name}.log"
        env = dict(
            os.environ,
            SPARK_HOME=str(self.home),
            SPARK_LOCAL_IP="127.0.0.1",
            # Free ports only: no REST submission server on its fixed 6066.
            SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
            SPARK_WORKER_DIR=str(self.work / name),
        )
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(self.home / "bin" / "spark-class"), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # stopped with its children (executor JVMs)
            )
        self.procs.append((proc, log))
        return log

    def _wait_for(self, log: Path, pattern: str, timeout: float = 90) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(pattern, log.read_text(errors="replace"))
            if m:
                return m
            if any(p.poll() is not None for p, _ in self.procs):
                break
            time.sleep(0.2)
        raise RuntimeError(f"{log.name}: no {pattern!r}:\n{log.read_text(errors='replace')}")

    def __enter__(self) -> SparkCluster:
        self.work.mkdir(parents=True, exist_ok=True)
        master = self._start(
            "master", "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
        )  # fmt: skip
        try:
            self.url = self._wait_for(master, r"Starting Spark master at (spark://[\d.:]+)")[1]
            logs = [self._worker(i) for i in range(self.workers)]
            for log in logs:
                self._wait_for(log, r"Successfully registered with master")
        except BaseException:
            self.stop()
            raise
        return self

    def _worker(self, i: int) -> Path:
        return self._start(
            f"worker{i}", "org.apache.spark.deploy.worker.Worker", self.url,
            "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
            "--cores", str(self.cores), "--memory", self.memory,
            "--work-dir", str(self.work / f"worker{i}"),
        )  # fmt: skip

    def stop(self) -> None:
        for proc, _ in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc, _ in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def __exit__(self, *exc: object) -> None:
        self.stop()
