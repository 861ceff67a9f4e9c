"""How far behind a streaming query is, in Kafka's source metric names.

Spark's Kafka source reports ``minOffsetsBehindLatest``, ``maxOffsetsBehindLatest`` and
``avgOffsetsBehindLatest`` in each source's ``metrics``. A Python data source cannot add
source metrics (PySpark 4.3 has no such hook), but the ``rocketmq`` source reports the
queues' ends as each progress's ``latestOffset``; with ``endOffset`` (what the micro-batch
read up to) they give the same figures. :func:`offsets_behind` computes them from a
progress, and :class:`OffsetsBehindListener` keeps them for every running query::

    listener = OffsetsBehindListener()
    spark.streams.addListener(listener)
    ...
    listener.latest(query.id)  # {"offsetsBehindLatest": 1200.0, "avgOffsetsBehindLatest": ...}
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from typing import Any

from pyspark.sql.streaming.listener import StreamingQueryListener

log = logging.getLogger("pyspark_rocketmq")

#: Names of the figures (Kafka's three, plus the total).
METRICS = (
    "offsetsBehindLatest",
    "minOffsetsBehindLatest",
    "maxOffsetsBehindLatest",
    "avgOffsetsBehindLatest",
)


def _offsets(value: Any) -> dict[tuple[str, str, str], int] | None:
    """``{"topic": {"broker": {"queueId": offset}}}`` (a dict or its JSON) as a flat map, or
    None when ``value`` is not in the source's offset form (another source's offsets)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    if not isinstance(value, Mapping) or not value:
        return None
    out = {}
    for topic, brokers in value.items():
        if not isinstance(brokers, Mapping):
            return None
        for broker, queues in brokers.items():
            if not isinstance(queues, Mapping):
                return None
            for q, off in queues.items():
                if not isinstance(off, int) or isinstance(off, bool):
                    return None
                out[(str(topic), str(broker), str(q))] = off
    return out


def _queue_lags(source: Mapping[str, Any]) -> list[int] | None:
    """Per queue, the messages between a source progress's ``endOffset`` and its
    ``latestOffset``; None when it is not a ``rocketmq`` source or reports no latest offsets."""
    end, latest = _offsets(source.get("endOffset")), _offsets(source.get("latestOffset"))
    if end is None or latest is None:
        return None
    return [max(0, latest[q] - end.get(q, 0)) for q in latest]


def _figures(lags: list[int]) -> dict[str, float]:
    return {
        "offsetsBehindLatest": float(sum(lags)),
        "minOffsetsBehindLatest": float(min(lags)),
        "maxOffsetsBehindLatest": float(max(lags)),
        "avgOffsetsBehindLatest": sum(lags) / len(lags),
    }


def source_offsets_behind(source: Mapping[str, Any]) -> dict[str, float] | None:
    """The figures of one source progress (``progress["sources"][i]``), or None when it is
    not a ``rocketmq`` source."""
    lags = _queue_lags(source)
    return _figures(lags) if lags else None


def offsets_behind(progress: Mapping[str, Any] | str) -> dict[str, float] | None:
    """The figures of a query progress (``query.lastProgress``, a listener event's
    ``progress``, or its JSON) over the queues of all its ``rocketmq`` sources: the total,
    and the smallest, largest and mean lag of a queue. None when it has no such source."""
    if isinstance(progress, str):
        progress = json.loads(progress)
    assert isinstance(progress, Mapping)
    lags: list[int] = []
    for source in progress.get("sources") or []:
        lags.extend(_queue_lags(source) or [])
    return _figures(lags) if lags else None


class OffsetsBehindListener(StreamingQueryListener):
    """Keeps each query's latest :func:`offsets_behind` figures (by query id) and logs them
    at debug level on the ``pyspark_rocketmq`` logger. Add it with
    ``spark.streams.addListener``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: dict[str, dict[str, float]] = {}

    def latest(self, query_id: Any) -> dict[str, float] | None:
        """The figures of the last progress of the query with this id (``query.id``)."""
        with self._lock:
            return self._latest.get(str(query_id))

    def onQueryStarted(self, event: Any) -> None:
        """Nothing to record yet."""

    def onQueryProgress(self, event: Any) -> None:
        """Records the figures of ``event.progress``."""
        figures = offsets_behind(event.progress)
        if figures is None:
            return
        with self._lock:
            self._latest[str(event.progress.id)] = figures
        log.debug("query %s: %s", event.progress.id, figures)

    def onQueryIdle(self, event: Any) -> None:
        """Nothing changes while idle."""

    def onQueryTerminated(self, event: Any) -> None:
        """The last figures stay readable after the query ends."""
