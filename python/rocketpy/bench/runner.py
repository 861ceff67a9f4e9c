"""The reporting loop shared by the producer and consumer benchmarks."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from rocketpy.bench.stats import Report, Stats


def _say(text: str) -> None:
    print(text, flush=True)


def report_until(
    stats: Stats,
    label: str,
    interval_s: float,
    finished: Callable[[], bool],
    duration_s: float | None,
) -> Report:
    """Prints one line per interval until ``finished()``, the duration passes, or Ctrl-C;
    then the last partial interval and the total. Returns the total."""
    deadline = stats.started + duration_s if duration_s else float("inf")
    next_tick = stats.started + interval_s
    try:
        while True:
            now = time.monotonic()
            if now >= next_tick:
                report = stats.interval()
                _say(report.line(f"{label} {now - stats.started:7.1f}s"))
                next_tick += interval_s * max(1, int((now - next_tick) / interval_s) + 1)
            if finished() or now >= deadline:
                break
            time.sleep(min(0.02, max(0.0, min(next_tick, deadline) - now)))
    except KeyboardInterrupt:
        _say(f"{label}: interrupted")
    last = stats.interval()
    if last.messages or last.failures:
        _say(last.line(f"{label} {time.monotonic() - stats.started:7.1f}s"))
    total = stats.total()
    _say(total.line(f"{label}   total"))
    for error in stats.errors:
        _say(f"{label} error: {error}")
    return total


def print_json(mode: str, total: Report, stats: Stats, settings: dict[str, object]) -> None:
    """One JSON line with the totals, for scripts."""
    _say(
        json.dumps(
            {"mode": mode, "settings": settings, "total": total.as_dict(), "errors": stats.errors}
        )
    )


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """Options both benchmarks take: where, what topic, how long, how to report."""
    p.add_argument("-n", "--namesrv", default="127.0.0.1:9876", help="name servers")
    p.add_argument("-t", "--topic", default="BenchmarkTest")
    p.add_argument("-c", "--count", type=int, help="stop after this many messages")
    p.add_argument("-d", "--duration", type=float, help="stop after this many seconds")
    p.add_argument("-i", "--interval", type=float, default=1.0, help="seconds between reports")
    p.add_argument("--json", action="store_true", help="end with one JSON line of totals")
    p.add_argument("--ak", dest="access_key", help="ACL account (aclEnable servers)")
    p.add_argument("--sk", dest="secret_key", help="its secret key")


def public(settings: Any) -> dict[str, object]:
    """A settings dataclass as a dict for reports, without the secret key."""
    out = asdict(settings)
    out.pop("secret_key", None)
    return out


def settings(cls: Any, args: argparse.Namespace) -> Any:
    """An instance of the settings dataclass ``cls`` from the parsed arguments it names."""
    return cls(**{k: v for k, v in vars(args).items() if k in cls.__dataclass_fields__})
