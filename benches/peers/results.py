"""What one run of a workload measured, and how rounds are summarized (medians)."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class Throughput:
    """Messages acknowledged (or read) in a run.

    Attributes:
        messages: messages counted.
        seconds: the time they took (for producers, until the last answer came back).
        errors: messages that failed.
        extra: anything else worth keeping (e.g. the time to a consumer's first message, the
            CPU per message of :mod:`benches.peers.cpu`).
        started: ``time.monotonic()`` when the timed part began, where the workload knows it
            (producers, consumers); not reported.
    """

    messages: int
    seconds: float
    errors: int = 0
    extra: dict[str, float] | None = None
    started: float | None = None

    @property
    def rate(self) -> float:
        """Messages per second."""
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        """For the JSON report."""
        d = asdict(self)
        del d["started"]
        return dict(d, rate=round(self.rate, 1))


@dataclass
class Latency:
    """One-at-a-time requests: percentiles of their round trips, in milliseconds."""

    count: int
    seconds: float
    p50_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float
    errors: int = 0

    @property
    def rate(self) -> float:
        """Requests per second."""
        return self.count / self.seconds if self.seconds > 0 else 0.0

    @staticmethod
    def of(samples_s: Sequence[float], seconds: float, errors: int = 0) -> Latency:
        """The summary of round trips given in seconds."""
        ordered = sorted(samples_s)
        return Latency(
            count=len(ordered),
            seconds=seconds,
            p50_ms=percentile(ordered, 50) * 1000,
            p99_ms=percentile(ordered, 99) * 1000,
            p999_ms=percentile(ordered, 99.9) * 1000,
            max_ms=(ordered[-1] if ordered else 0.0) * 1000,
            errors=errors,
        )

    def as_dict(self) -> dict[str, Any]:
        """For the JSON report."""
        return dict(asdict(self), rate=round(self.rate, 1))


Result = Throughput | Latency

#: The CPU figures (:mod:`benches.peers.cpu`) a throughput run may carry in ``extra``.
CPU_KEYS = ("server_us_per_msg", "others_us_per_msg")


def consumed(
    wanted: int, got: int, head: int, started: float, first: float, last: float
) -> Throughput:
    """A consumer's run: the messages after the first batch (``head`` of them) over the time
    from that batch to the last (``time.perf_counter()`` readings), so neither the start-up
    nor a system's batch size counts; ``wanted - got`` messages never came. Its ``started``
    is the first batch's time on ``time.monotonic()``'s clock, for the CPU meter."""
    return Throughput(
        max(0, got - head),
        last - first if got else 0.0,
        errors=max(0, wanted - got),
        extra={"first_batch": head, "first_message_s": round(first - started, 4) if got else -1},
        started=first + (time.monotonic() - time.perf_counter()) if got else None,
    )


def percentile(ordered: Sequence[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile of sorted values (0 for none)."""
    if not ordered:
        return 0.0
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def median_of(runs: Sequence[Result]) -> dict[str, float]:
    """The median of each figure over rounds (each percentile on its own)."""
    if not runs:
        return {}
    if isinstance(runs[0], Latency):
        lat = [r for r in runs if isinstance(r, Latency)]
        return {
            "rate": statistics.median(r.rate for r in lat),
            "p50_ms": statistics.median(r.p50_ms for r in lat),
            "p99_ms": statistics.median(r.p99_ms for r in lat),
            "p999_ms": statistics.median(r.p999_ms for r in lat),
            "errors": sum(r.errors for r in lat),
        }
    out = {
        "rate": statistics.median(r.rate for r in runs),
        "errors": sum(r.errors for r in runs),
    }
    for key in CPU_KEYS:
        values = [r.extra[key] for r in runs if r.extra and key in r.extra]
        if values:
            out[key] = statistics.median(values)
    return out
