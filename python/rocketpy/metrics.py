"""Client metrics through ``prometheus_client``, when it is installed (``pip install
rocketpy-mq[metrics]``); without it every hook here is a no-op.

The metrics go to ``prometheus_client``'s default registry, so an application exposes them
with its own ``prometheus_client.start_http_server(port)`` next to its other metrics:

- ``rocketmq_send_cost_time`` (histogram, milliseconds; ``topic``, ``client_id``,
  ``invocation_status`` = success / failure): every send attempt, the name and buckets of
  RocketMQ 5.x's clients;
- ``rocketpy_client_messages_sent_total`` (``topic``, ``client_id``): messages the broker
  stored; ``rocketpy_client_send_failures_total``: failed attempts (each retry counts);
  these three are counted natively, wherever a send ends, and read when scraped;
- ``rocketmq_process_time`` (histogram, milliseconds; ``topic``, ``consumer_group``,
  ``client_id``, ``invocation_status``): listener calls of push consumers, counted natively
  too (a run of calls in one call) and read when scraped;
- ``rocketpy_client_consume_lag_messages`` (gauge; ``consumer_group``, ``topic``, ``broker``,
  ``queue_id``, ``client_id``): per assigned queue, messages stored on the broker that this
  consumer has not consumed yet (the broker's max offset at the last pull, minus the next
  offset to pull, plus messages pulled and not yet consumed), computed when scraped.

Set ``ROCKETPY_CLIENT_METRICS=off`` to leave the registry alone.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterator
from typing import Any, Protocol

from rocketpy import _native
from rocketpy.message import MessageQueue

__all__ = ["METRICS", "ClientMetrics"]

#: RocketMQ 5.x clients' send and process-time buckets, in milliseconds.
_BUCKETS_MS = (*_native.send_metric_buckets(), float("inf"))


class LaggingConsumer(Protocol):
    """What the lag gauge reads of a consumer (``rocketpy.consumer.base.ConsumerBase``)."""

    @property
    def group(self) -> str: ...

    @property
    def client_id(self) -> str: ...

    def queue_lags(self) -> list[tuple[MessageQueue, int]]: ...


class _LagCollector:
    """Reads the live consumers' queues when scraped."""

    def __init__(self) -> None:
        self.consumers: weakref.WeakSet[LaggingConsumer] = weakref.WeakSet()

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        family = GaugeMetricFamily(
            "rocketpy_client_consume_lag_messages",
            "Messages of an assigned queue this consumer has not consumed yet",
            labels=["consumer_group", "topic", "broker", "queue_id", "client_id"],
        )
        for consumer in list(self.consumers):
            for mq, lag in consumer.queue_lags():
                family.add_metric(
                    [
                        consumer.group,
                        mq.topic,
                        mq.broker_name,
                        str(mq.queue_id),
                        consumer.client_id,
                    ],
                    lag,
                )
        yield family


class _SendCollector:
    """Reads the native send table (``rocketpy._native.send_metrics``) when scraped."""

    def describe(self) -> Iterator[Any]:
        # Named up front, so that registering twice fails as it does for other metrics.
        return self._families([])

    def collect(self) -> Iterator[Any]:
        return self._families(_native.send_metrics())

    @staticmethod
    def _families(rows: list[tuple[str, str, bool, list[int], float, int]]) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

        bounds = [*_native.send_metric_buckets(), float("inf")]
        cost = HistogramMetricFamily(
            "rocketmq_send_cost_time",
            "Send attempts and their time in milliseconds",
            labels=["topic", "client_id", "invocation_status"],
        )
        sent = CounterMetricFamily(
            "rocketpy_client_messages_sent",
            "Messages the broker stored",
            labels=["topic", "client_id"],
        )
        failed = CounterMetricFamily(
            "rocketpy_client_send_failures",
            "Failed send attempts (each retry counts)",
            labels=["topic", "client_id"],
        )
        for client_id, topic, ok, counts, sum_ms, messages in rows:
            buckets = _cumulative(bounds, counts)
            status = "success" if ok else "failure"
            cost.add_metric([topic, client_id, status], buckets, sum_ms)
            (sent if ok else failed).add_metric([topic, client_id], messages)
        yield cost
        yield sent
        yield failed


class _ProcessCollector:
    """Reads the native listener-call table (``rocketpy._native.process_metrics``) when
    scraped."""

    def describe(self) -> Iterator[Any]:
        return self._families([])

    def collect(self) -> Iterator[Any]:
        return self._families(_native.process_metrics())

    @staticmethod
    def _families(
        rows: list[tuple[str, str, str, bool, list[int], float, int]],
    ) -> Iterator[Any]:
        from prometheus_client.core import HistogramMetricFamily

        bounds = [*_native.send_metric_buckets(), float("inf")]
        process = HistogramMetricFamily(
            "rocketmq_process_time",
            "Listener calls of push consumers and their time in milliseconds",
            labels=["topic", "consumer_group", "client_id", "invocation_status"],
        )
        for client_id, group, topic, ok, counts, sum_ms, _messages in rows:
            buckets = _cumulative(bounds, counts)
            status = "success" if ok else "failure"
            process.add_metric([topic, group, client_id, status], buckets, sum_ms)
        yield process


def _cumulative(bounds: list[float], counts: list[int]) -> list[tuple[str, int]]:
    """A native table's per-bucket counts as Prometheus's cumulative ``(le, count)`` pairs."""
    cumulative, buckets = 0, []
    for bound, n in zip(bounds, counts, strict=True):
        cumulative += n
        buckets.append((_bound_label(bound), cumulative))
    return buckets


def _bound_label(bound: float) -> str:
    """A bucket's ``le`` label as prometheus_client writes it ("5.0", "+Inf")."""
    return "+Inf" if bound == float("inf") else repr(float(bound))


class ClientMetrics:
    """The client's metric families, registered once in ``prometheus_client``'s registry."""

    def __init__(self, registry: Any = None) -> None:
        from prometheus_client import REGISTRY

        registry = registry if registry is not None else REGISTRY
        registry.register(_SendCollector())
        registry.register(_ProcessCollector())
        _native.enable_send_metrics()
        self._lag = _LagCollector()
        registry.register(self._lag)

    @staticmethod
    def record_send(topic: str, client_id: str, elapsed_s: float, ok: bool, messages: int) -> None:
        """One send attempt of ``messages`` messages took ``elapsed_s`` (the native send
        paths record their own)."""
        _native.record_send(client_id, topic, elapsed_s, ok, messages)

    @staticmethod
    def record_process(
        topic: str, group: str, client_id: str, elapsed_s: float, ok: bool, messages: int = 1
    ) -> None:
        """One listener call of ``messages`` messages took ``elapsed_s``."""
        _native.record_process(client_id, group, topic, [elapsed_s], ok, messages)

    @staticmethod
    def record_processes(
        topic: str, group: str, client_id: str, elapsed_s: list[float], ok: bool, messages: int
    ) -> None:
        """Listener calls that took ``elapsed_s`` (seconds each), ``messages`` in all."""
        _native.record_process(client_id, group, topic, elapsed_s, ok, messages)

    def track(self, consumer: LaggingConsumer) -> None:
        """Reports ``consumer``'s per-queue lag while it lives."""
        self._lag.consumers.add(consumer)

    def untrack(self, consumer: LaggingConsumer) -> None:
        """Stops reporting ``consumer`` (it shut down)."""
        self._lag.consumers.discard(consumer)


def _create() -> ClientMetrics | None:
    if os.environ.get("ROCKETPY_CLIENT_METRICS", "on").lower() in ("off", "0", "false"):
        return None
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        return None
    return ClientMetrics()


#: The process's client metrics, or None without ``prometheus_client`` (or when turned off).
METRICS: ClientMetrics | None = _create()


def lag_of(broker_max: int, next_offset: int, held: int) -> int:
    """Messages not consumed yet of a queue: not pulled, plus pulled and still held."""
    return max(0, broker_max - next_offset) + held if broker_max >= 0 else held
