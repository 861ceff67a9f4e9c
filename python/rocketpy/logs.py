"""Logging. rocketpy logs through Python's :mod:`logging` and writes no file or stream of its
own: the Python side under ``rocketpy.client``, ``rocketpy.producer``, ``rocketpy.consumer``,
and the native side (transport, embedded servers, store) under ``rocketpy.native.*``.

Native records are forwarded at WARNING and above unless :func:`set_native_log_level` (or
``RUST_LOG``) says otherwise: forwarding costs a trip to the interpreter per record, so the
finer levels are opt-in.
"""

from __future__ import annotations

import logging

from rocketpy._native import init_logging

_NAMES = {"ERROR": "error", "WARNING": "warn", "WARN": "warn", "INFO": "info", "DEBUG": "debug"}


def set_native_log_level(level: int | str) -> None:
    """Forwards native records at ``level`` and above (a :mod:`logging` level such as
    ``logging.DEBUG``, or its name) to the ``rocketpy.native.*`` loggers."""
    if isinstance(level, str):
        name = _NAMES.get(level.upper(), level.lower())
    elif level >= logging.ERROR:
        name = "error"
    elif level >= logging.WARNING:
        name = "warn"
    elif level >= logging.INFO:
        name = "info"
    elif level >= logging.DEBUG:
        name = "debug"
    else:
        name = "trace"
    init_logging(name, stderr=False)
