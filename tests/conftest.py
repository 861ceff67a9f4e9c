"""Fixtures: real rocketpy servers in subprocesses on free loopback ports; and the tiers.

Tests live by kind: ``tests/unit`` (no server, no Spark, no peer: ``make test-fast``),
``tests/system`` (real servers on loopback), ``tests/spark`` (a local SparkSession),
``tests/compat`` (clients and servers this project did not write). Each test is marked with
its directory's name, so ``pytest -m unit`` and ``-m "not spark"`` select by tier; helpers
shared by the tiers stay here, in ``tests/``."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import HOST_DISK_SETTINGS, RETRY_IN_A_SECOND, ServerProcess, dev

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
def dev_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A running ``rocketpy dev`` with a store in a temporary directory."""
    server = dev(tmp_path / "store").start()
    yield server
    assert server.stop() == 0, server.text()


@pytest.fixture
def dev_factory() -> Iterator[Callable[..., ServerProcess]]:
    """Makes ``rocketpy dev`` servers (:func:`servers.dev`'s arguments) for a test to start;
    every one still running at the end is stopped."""
    made: list[ServerProcess] = []

    def factory(store: Path, *extra: str, settings: dict[str, str] | None = None) -> ServerProcess:
        made.append(dev(store, *extra, settings=settings))
        return made[-1]

    yield factory
    for server in made:
        server.stop()


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """A local SparkSession (2 cores) for a test module (the Spark tests: ``-m spark``)."""
    from pyspark_rocketmq.local_cluster import spark_session

    session = spark_session("local[2]", "rocketpy-tests")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def shared_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One ``rocketpy dev`` for a whole test module, with short delay levels (1 s each) so
    retries are quick."""
    store = tmp_path_factory.mktemp("shared") / "store"
    server = dev(store, settings=RETRY_IN_A_SECOND).start()
    yield server
    assert server.stop() == 0, server.text()
