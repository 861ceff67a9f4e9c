"""Fixtures: real rocketpy servers in subprocesses on free loopback ports; and the tiers.

Tests live by kind: ``tests/unit`` (no server, no Spark, no peer: ``make test-fast``),
``tests/system`` (real servers on loopback), ``tests/spark`` (a local SparkSession),
``tests/compat`` (clients and servers this project did not write). Each test is marked with
its directory's name, so ``pytest -m unit`` and ``-m "not spark"`` select by tier; helpers
shared by the tiers stay here, in ``tests/``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devserver import HOST_DISK_SETTINGS, DevProcess

# Loopback only: Spark (here and in the examples and benchmarks the tests start) otherwise
# binds and advertises this machine's own address.
os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"


#: The tiers: a test's first directory below ``tests/`` names its marker.
TIERS = ("unit", "system", "spark", "compat")
TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(str(item.path)).resolve().relative_to(TESTS).parts
        if parts and parts[0] in TIERS:
            item.add_marker(parts[0])


@pytest.fixture(autouse=True)
def host_disk_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Embedded stores opened by tests ignore how full the (possibly shared) host disk is,
    as the test servers do (``HOST_DISK_SETTINGS``); a test that sets a limit keeps it."""
    from rocketpy import store

    original = store.MessageStore.__init__

    def init(self: Any, path: Any, **config: Any) -> None:
        given = {store._config_key(k) for k in config}
        config.update({k: v for k, v in HOST_DISK_SETTINGS.items() if k not in given})
        original(self, path, **config)

    monkeypatch.setattr(store.MessageStore, "__init__", init)


@pytest.fixture
def dev_server(tmp_path: Path) -> Iterator[DevProcess]:
    """A running ``rocketpy dev`` with a store in a temporary directory."""
    dev = DevProcess(tmp_path / "store").start()
    yield dev
    assert dev.stop() == 0, "".join(dev.stderr)


@pytest.fixture
def dev_factory(tmp_path: Path) -> Iterator[type[DevProcess]]:
    """Starts ``DevProcess``es; every one still running at the end is stopped."""
    started: list[DevProcess] = []

    class Tracked(DevProcess):
        def start(self, timeout: float = 60) -> DevProcess:
            started.append(self)
            return super().start(timeout)

    yield Tracked
    for dev in started:
        dev.stop()


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """A local SparkSession (2 cores) for a test module (the Spark tests: ``-m spark``)."""
    from pyspark_rocketmq.local_cluster import spark_session

    session = spark_session("local[2]", "rocketpy-tests")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def shared_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    """One ``rocketpy dev`` for a whole test module, with short delay levels (1 s each) so
    retries are quick."""
    store = tmp_path_factory.mktemp("shared") / "store"
    dev = DevProcess(store, "--set", "messageDelayLevel=" + " ".join(["1s"] * 18)).start()
    yield dev
    assert dev.stop() == 0, "".join(dev.stderr)
