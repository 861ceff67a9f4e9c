"""``PullGate``: a flow-controlled pull goes as soon as consumption made room, or when its
back-off passes if nothing woke it — once either way. The back-off runs on a timer table the
test fires by hand (no sleeps)."""

from __future__ import annotations

from collections.abc import Callable

from rocketpy.consumer.flow import PullGate
from rocketpy.consumer.model import PullRequest
from rocketpy.consumer.process_queue import ProcessQueue
from rocketpy.message import MessageQueue


class Timers:
    """call_later that keeps the callbacks for the test to fire."""

    def __init__(self) -> None:
        self.due: list[tuple[float, Callable[[], None]]] = []

    def call_later(self, delay_s: float, fn: Callable[[], None]) -> None:
        self.due.append((delay_s, fn))

    def fire_all(self) -> None:
        due, self.due = self.due, []
        for _, fn in due:
            fn()


def _pr(queue_id: int) -> PullRequest:
    return PullRequest(MessageQueue("T", "b", queue_id), ProcessQueue(), 0)


def _gate(full: set[int]) -> tuple[PullGate, list[int]]:
    """A gate over queues whose buffers are full while their id is in ``full``."""
    pulled: list[int] = []
    gate = PullGate(
        lambda pr: pulled.append(pr.mq.queue_id),
        lambda pr: 0.05 if pr.mq.queue_id in full else 0.0,
    )
    return gate, pulled


def test_a_held_pull_goes_when_consumption_makes_room_and_the_timer_then_does_nothing() -> None:
    full = {0}
    gate, pulled = _gate(full)
    timers, pr = Timers(), _pr(0)
    gate.hold(pr, 0.05, timers)
    assert pulled == [] and [d for d, _ in timers.due] == [0.05]
    gate.wake()
    assert pulled == [], "still full: it stays held"
    full.clear()
    gate.wake()
    gate.wake()
    assert pulled == [0], "room: it pulls, once"
    timers.fire_all()
    assert pulled == [0], "the back-off of a pull already woken is void"


def test_a_held_pull_nothing_wakes_goes_when_its_back_off_passes() -> None:
    gate, pulled = _gate({0})
    timers = Timers()
    gate.hold(_pr(0), 0.05, timers)
    timers.fire_all()
    assert pulled == [0]
    gate.wake()
    assert pulled == [0]


def test_room_made_before_the_hold_is_seen_at_once() -> None:
    gate, pulled = _gate(set())
    timers = Timers()
    gate.hold(_pr(3), 0.05, timers)
    assert pulled == [3]
    timers.fire_all()
    assert pulled == [3]


def test_waking_one_queue_leaves_the_others_held() -> None:
    full = {1, 2}
    gate, pulled = _gate(full)
    timers = Timers()
    one, two = _pr(1), _pr(2)
    gate.hold(one, 0.05, timers)
    gate.hold(two, 0.05, timers)
    full.clear()
    gate.wake(one)
    assert pulled == [1]
    gate.wake()
    assert pulled == [1, 2]


def test_a_stopped_consumer_holds_nothing() -> None:
    gate, pulled = _gate(set())
    gate.hold(_pr(0), 0.05, None)
    gate.wake()
    assert pulled == []
