"""Throughput and latency accounting for ``rocketpy bench``.

Worker threads call :meth:`Stats.record`; a reporter calls :meth:`Stats.interval` every
period. Interval percentiles are exact (the interval's samples are sorted); the totals keep a
log-scale histogram with 1 % wide buckets so a long run does not hold every sample.
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass

#: Width of a histogram bucket: latencies within 1 % of each other share one.
_STEP = math.log(1.01)


@dataclass(frozen=True)
class Report:
    """Counts and latencies over a period."""

    seconds: float
    messages: int
    bytes: int
    failures: int
    #: Latency percentiles and maximum in milliseconds (0 when nothing was measured).
    p50_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float

    @property
    def tps(self) -> float:
        """Messages per second."""
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        """Body megabytes (10^6 bytes) per second."""
        return self.bytes / 1e6 / self.seconds if self.seconds > 0 else 0.0

    def line(self, label: str) -> str:
        """One human-readable line."""
        return (
            f"{label}: {self.tps:>10,.0f} msg/s {self.mb_per_s:8.2f} MB/s | latency ms "
            f"p50 {self.p50_ms:.3f} p99 {self.p99_ms:.3f} p99.9 {self.p999_ms:.3f} "
            f"max {self.max_ms:.3f} | messages {self.messages:,} failures {self.failures:,}"
        )

    def as_dict(self) -> dict[str, float]:
        """The fields plus ``tps`` and ``mb_per_s``, for ``--json``."""
        out: dict[str, float] = asdict(self)
        out["tps"] = round(self.tps, 1)
        out["mb_per_s"] = round(self.mb_per_s, 3)
        return out


def _bucket(seconds: float) -> int:
    return int(math.log(max(seconds * 1e6, 1.0)) / _STEP)


def _exact(samples: list[float], q: float) -> float:
    """The q-quantile (0..1) of sorted ``samples`` (seconds), in ms."""
    if not samples:
        return 0.0
    i = min(len(samples) - 1, max(0, math.ceil(q * len(samples)) - 1))
    return samples[i] * 1000


class Stats:
    """Thread-safe counters of one benchmark run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._samples: list[float] = []
        self._messages = self._bytes = self._failures = 0
        self._hist: Counter[int] = Counter()
        self._total_messages = self._total_bytes = self._total_failures = 0
        self._max = 0.0
        self.started = time.monotonic()
        self._last = self.started
        self.errors: list[str] = []

    def record(self, messages: int, nbytes: int, latency_s: float) -> None:
        """``messages`` done (one request, or one batch) after ``latency_s``."""
        with self._lock:
            self._messages += messages
            self._bytes += nbytes
            self._samples.append(latency_s)

    def count(self, messages: int, nbytes: int) -> None:
        """``messages`` done whose latency was not measured."""
        with self._lock:
            self._messages += messages
            self._bytes += nbytes

    def record_many(self, nbytes: int, latencies_s: Iterable[float]) -> None:
        """One message done per latency (a consumer's batch)."""
        with self._lock:
            before = len(self._samples)
            self._samples.extend(latencies_s)
            self._messages += len(self._samples) - before
            self._bytes += nbytes

    def failed(self, messages: int, error: object) -> None:
        """``messages`` that could not be done."""
        with self._lock:
            self._failures += messages
            if len(self.errors) < 5:
                self.errors.append(str(error))

    @property
    def total_messages(self) -> int:
        """Messages done so far, including the current interval."""
        with self._lock:
            return self._total_messages + self._messages

    @property
    def total_failures(self) -> int:
        """Failures so far, including the current interval."""
        with self._lock:
            return self._total_failures + self._failures

    def interval(self) -> Report:
        """What happened since the previous call; folds it into the totals."""
        with self._lock:
            samples, self._samples = self._samples, []
            msgs, nbytes, fails = self._messages, self._bytes, self._failures
            self._messages = self._bytes = self._failures = 0
            now = time.monotonic()
            seconds, self._last = now - self._last, now
        samples.sort()
        self._fold(samples)
        top = samples[-1] * 1000 if samples else 0.0
        self._max = max(self._max, top)
        self._total_messages += msgs
        self._total_bytes += nbytes
        self._total_failures += fails
        return Report(
            seconds,
            msgs,
            nbytes,
            fails,
            _exact(samples, 0.50),
            _exact(samples, 0.99),
            _exact(samples, 0.999),
            top,
        )

    def _fold(self, samples: list[float]) -> None:
        """Adds sorted ``samples`` to the histogram, one bisect per bucket (not per sample:
        a consumer records 100k+ samples a second)."""
        i, n = 0, len(samples)
        while i < n:
            key = _bucket(samples[i])
            upper = math.exp((key + 1) * _STEP) / 1e6
            j = bisect.bisect_left(samples, upper, i)
            j = max(j, i + 1)  # float rounding at the edge must not stall
            self._hist[key] += j - i
            i = j

    def _hist_quantile(self, q: float) -> float:
        total = sum(self._hist.values())
        if total == 0:
            return 0.0
        want = max(1, math.ceil(q * total))
        seen = 0
        for key in sorted(self._hist):
            seen += self._hist[key]
            if seen >= want:
                # The bucket's upper edge: never reports a latency lower than measured.
                return min(math.exp((key + 1) * _STEP) / 1000, self._max)
        return self._max

    def total(self) -> Report:
        """The whole run (call :meth:`interval` first to fold in the last period)."""
        return Report(
            self._last - self.started,
            self._total_messages,
            self._total_bytes,
            self._total_failures,
            self._hist_quantile(0.50),
            self._hist_quantile(0.99),
            self._hist_quantile(0.999),
            self._max,
        )
