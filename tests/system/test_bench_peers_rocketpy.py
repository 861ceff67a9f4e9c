"""benches/peers/rocketpy_client.py against a real broker: the producer pump keeps its window
by waiting on futures (every message answered and counted), and the push consumer workload
(f) reads a whole backlog through its listener."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest
from servers import in_process_dev

from rocketpy import Message, Producer, SendResult
from rocketpy.server import DevServer

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benches.peers import rocketpy_client as rc


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with in_process_dev(tmp_path_factory.mktemp("bench") / "store") as d:
        yield d


class _Watched:
    """A real producer whose ``send_async`` notes the most messages ever unanswered."""

    def __init__(self, producer: Producer) -> None:
        self.producer = producer
        self.sent = 0
        self.answered = 0
        self.most = 0

    def send_async(self, msg: Message, callback: object) -> Future[SendResult]:
        def counted(result: SendResult | None, error: BaseException | None) -> None:
            self.answered += 1
            callback(result, error)  # type: ignore[operator]

        self.sent += 1
        self.most = max(self.most, self.sent - self.answered)
        return self.producer.send_async(msg, counted)


def test_pump_keeps_its_window_and_counts_every_answer(dev: DevServer) -> None:
    rc.prepare(dev.namesrv_addr, "BenchPump")
    with Producer("bench-pump", dev.namesrv_addr) as producer:
        watched = _Watched(producer)
        window = 2 * rc.RUN
        r = rc._pump(watched, "BenchPump", b"x" * 100, window, None, 5_000)  # type: ignore[arg-type]
    assert (r.messages, r.errors) == (5_000, 0)
    assert watched.answered == 5_000
    # Checked before each run of RUN sends: never more than the window plus one run out.
    assert watched.most <= window + rc.RUN


def test_push_consumer_workload_reads_the_whole_backlog(dev: DevServer) -> None:
    rc.prepare(dev.namesrv_addr, "BenchListener")
    rc.fill(dev.namesrv_addr, "BenchListener", 3_000, 100, 1024)
    r = rc.consume_listener(dev.namesrv_addr, "BenchListener", 3_000, 1000)
    assert r.errors == 0
    assert r.messages == 3_000 - r.extra["first_batch"]
    assert 1 <= r.extra["first_batch"] <= rc.LISTENER_BATCH
