"""The compatibility suite: a real ``rocketpy namesrv`` and ``rocketpy broker`` (separate
processes, loopback, advertising 127.0.0.1) driven by RocketMQ clients this project did not
write, each running as its own process (see ``peerlib``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from peerlib import Cluster, Peer


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.compat)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("compat") / "store")
    yield c
    c.stop()


@pytest.fixture
def peers(tmp_path: Path) -> Iterator[list[Peer]]:
    """Started peers; any still running at the end are stopped."""
    started: list[Peer] = []
    yield started
    for p in started:
        p.kill()
