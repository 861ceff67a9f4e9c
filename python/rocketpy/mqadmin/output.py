"""Output helpers shared by the commands: mqadmin's printf-style rows, its time format, and
``--json``."""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import Any


def row(fmt: str, *args: object) -> None:
    """Prints one line formatted like mqadmin's ``System.out.printf`` (Python's ``%`` accepts
    the same ``%-20s`` / ``%d`` / ``%.2f`` directives; the format carries no newline)."""
    print(fmt % args)


def human_time(ms: int) -> str:
    """RocketMQ's ``UtilAll.timeMillisToHumanString2``: ``yyyy-MM-dd HH:mm:ss,SSS`` in local
    time."""
    t = dt.datetime.fromtimestamp(ms / 1000)
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


def dump_json(value: Any) -> None:
    """``--json`` output: one JSON document."""
    json.dump(value, sys.stdout, indent=2, sort_keys=True, default=str)
    print()
