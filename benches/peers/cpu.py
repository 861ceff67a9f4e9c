"""Where a throughput workload's CPU goes: the server's share and everything else's.

All three systems' clients and servers share this machine's cores, so a throughput ratio
alone cannot say whether a system is limited by its server or by its Python client. A
:class:`CpuMeter` samples the server process's CPU time and the whole machine's busy time
while a workload runs; :func:`CpuMeter.per_message` turns the timed part of a run into
microseconds of CPU per acknowledged (or read) message: the server's, and the rest (the clients,
the kernel's work for them, anything else running).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from bisect import bisect_left
from types import TracebackType

#: Seconds between samples.
PERIOD_S = 0.25

_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) ``pid`` has used, its threads included."""
    with open(f"/proc/{pid}/stat") as f:
        # After the command name in parentheses, which may itself hold spaces or ')'.
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def machine_busy_s() -> float:
    """CPU seconds all cores have spent busy (not idle nor waiting for I/O) since boot."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / _TICKS


class CpuMeter:
    """Samples ``pid``'s CPU time and the machine's busy time every :data:`PERIOD_S` seconds
    on a thread, from ``with`` to its end."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples: list[tuple[float, float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-peers-cpu", daemon=True)

    def _sample(self) -> None:
        # A server gone leaves no sample: the run's own error says so.
        with contextlib.suppress(OSError, IndexError, ValueError):
            self.samples.append((time.monotonic(), process_cpu_s(self.pid), machine_busy_s()))

    def _run(self) -> None:
        self._sample()
        while not self._stop.wait(PERIOD_S):
            self._sample()
        self._sample()

    def __enter__(self) -> CpuMeter:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _at(self, t: float) -> tuple[float, float] | None:
        """(server CPU s, machine busy s) at monotonic time ``t``, interpolated."""
        times = [s[0] for s in self.samples]
        i = bisect_left(times, t)
        if i == 0 or i == len(times):
            return None
        (t0, a0, b0), (t1, a1, b1) = self.samples[i - 1], self.samples[i]
        w = (t - t0) / (t1 - t0) if t1 > t0 else 0.0
        return a0 + (a1 - a0) * w, b0 + (b1 - b0) * w

    def per_message(self, started: float, seconds: float, messages: int) -> dict[str, float]:
        """For the run timed from monotonic ``started`` for ``seconds``: server and other CPU
        per message (µs) and on average (cores). Empty when the samples do not cover it."""
        if messages <= 0 or seconds <= 0:
            return {}
        a, b = self._at(started), self._at(started + seconds)
        if a is None or b is None:
            return {}
        server, busy = b[0] - a[0], b[1] - a[1]
        others = max(0.0, busy - server)
        return {
            "server_us_per_msg": round(server / messages * 1e6, 2),
            "others_us_per_msg": round(others / messages * 1e6, 2),
            "server_cores": round(server / seconds, 2),
            "others_cores": round(others / seconds, 2),
        }
