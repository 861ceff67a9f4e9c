"""Send latency fault tolerance (RocketMQ's ``MQFaultStrategy`` / ``LatencyFaultTolerance``):
a broker that answered slowly, or failed, is avoided for a while proportional to how badly."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

#: Send latency thresholds (ms) ...
LATENCY_MAX = (50, 100, 550, 1000, 2000, 3000, 15000)
#: ... and how long (ms) a broker is avoided once it reached each one.
NOT_AVAILABLE_DURATION = (0, 0, 30000, 60000, 120000, 180000, 600000)
#: A failed send counts as this latency (isolation).
ISOLATION_LATENCY = 30000


def not_available_ms(latency_ms: float) -> int:
    """How long to avoid a broker after a send that took ``latency_ms``."""
    for threshold, duration in zip(
        reversed(LATENCY_MAX), reversed(NOT_AVAILABLE_DURATION), strict=True
    ):
        if latency_ms >= threshold:
            return duration
    return 0


@dataclass
class _FaultItem:
    name: str
    latency_ms: float
    available_at: float  # monotonic seconds


class LatencyFaultTolerance:
    """Per-broker availability from recent send latencies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, _FaultItem] = {}

    def update(self, broker: str, latency_ms: float, isolation: bool) -> None:
        """Records a send to ``broker`` that took ``latency_ms`` (or failed: ``isolation``)."""
        duration = not_available_ms(ISOLATION_LATENCY if isolation else latency_ms)
        with self._lock:
            self._items[broker] = _FaultItem(broker, latency_ms, time.monotonic() + duration / 1000)

    def is_available(self, broker: str) -> bool:
        """Whether ``broker`` is not being avoided now."""
        with self._lock:
            item = self._items.get(broker)
        return item is None or time.monotonic() >= item.available_at

    def pick_one_at_least(self) -> str | None:
        """The least bad of the avoided brokers (soonest available, then fastest)."""
        with self._lock:
            items = sorted(self._items.values(), key=lambda i: (i.available_at, i.latency_ms))
        return items[0].name if items else None

    def remove(self, broker: str) -> None:
        """Forgets ``broker``."""
        with self._lock:
            self._items.pop(broker, None)
