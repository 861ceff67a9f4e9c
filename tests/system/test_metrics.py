"""Prometheus metrics of the broker and the name server (``metricsExporterType=PROM``): the
endpoint is scraped over HTTP and parsed with prometheus_client's OpenMetrics parser, and the
samples follow the traffic this test makes — messages and bytes in and out, DLQ sends, lag
that appears when a consumer stops and its age, connections, request latency by code, storage
and process metrics — under RocketMQ 5.x's names and labels."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from metrics_scrape import scrape, value
from servers import in_process_dev

from helpers import Collector, fast_config, start_consumer, wait_until
from rocketpy import ConsumeFromWhere, ConsumeStatus, Message, Producer, PushConsumer
from rocketpy.admin import Admin
from rocketpy.server import DevServer


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    store = tmp_path_factory.mktemp("metrics") / "store"
    with in_process_dev(store, metrics_port=0) as d:
        yield d


def push_consumer(ns: str, group: str, topic: str, listener: Any) -> PushConsumer:
    """A consumer from the first offset that sends a failed message straight to the DLQ."""
    return start_consumer(
        group, ns, topic, listener, "*", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        client_config=fast_config(ns), max_reconsume_times=0,
    )  # fmt: skip


def test_traffic_lag_and_connections_follow_the_clients(dev: DevServer) -> None:
    assert dev.broker is not None and dev.broker.metrics_address
    addr = dev.broker.metrics_address
    ns, topic, group = dev.namesrv_addr, "MetricsTopic", "metrics-group"
    node = {"cluster": "DefaultCluster", "node_type": "broker", "node_id": "broker-a"}
    with Producer("metrics-producer", client_config=fast_config(ns)) as p:
        for i in range(10):
            p.send(Message(topic, b"x" * 100, keys=f"k{i}"))
        p.send(Message(topic, b"later", delay_level=1))
        s = scrape(addr)
        labels = {**node, "topic": topic, "is_system": "false"}
        assert value(s, "rocketmq_messages_in_total", message_type="normal", **labels) == 10
        assert value(s, "rocketmq_messages_in_total", message_type="delay", **labels) == 1
        stored = value(s, "rocketmq_throughput_in_total", message_type="normal", **labels)
        assert stored is not None and stored > 10 * 100, "record bytes, headers included"
        assert value(s, "rocketmq_message_size_count", message_type="normal", **labels) == 10
        assert value(s, "rocketmq_message_size_bucket", le="1024.0", message_type="normal") == 10
        sends = value(
            s,
            "rocketmq_rpc_latency_milliseconds_count",
            request_code="send_message_v2",
            result="success",
        )
        assert sends is not None and sends >= 10

        def producer_seen() -> bool:
            n = value(scrape(addr), "rocketmq_producer_connections", language="python")
            return n is not None and n >= 1

        assert wait_until(producer_seen, timeout=10), "after the producer's first heartbeat"

    got = Collector()
    c = push_consumer(ns, group, topic, got)
    try:
        assert wait_until(lambda: len(got.messages) >= 11, timeout=30)
        lag_labels = {"consumer_group": group, "topic": topic, "is_retry": "false"}

        def caught_up() -> bool:
            s = scrape(addr)
            return value(s, "rocketmq_consumer_lag_messages", **lag_labels) == 0

        assert wait_until(caught_up, timeout=20), "committed offsets reach the end"
        s = scrape(addr)
        assert value(s, "rocketmq_messages_out_total", consumer_group=group, topic=topic) == 11
        assert value(s, "rocketmq_consumer_inflight_messages", **lag_labels) == 0
        assert value(s, "rocketmq_consumer_lag_latency_milliseconds", **lag_labels) == 0
        conns = value(s, "rocketmq_consumer_connections", consumer_group=group)
        assert conns == 1
        assert value(s, "rocketmq_consumer_connections", consume_mode="push", consumer_group=group)
    finally:
        c.shutdown()

    with Producer("metrics-producer", client_config=fast_config(ns)) as p:
        for _ in range(5):
            p.send(Message(topic, b"unread"))
    time.sleep(0.3)
    s = scrape(addr)
    assert value(s, "rocketmq_consumer_lag_messages", consumer_group=group, topic=topic) == 5
    age = value(s, "rocketmq_consumer_lag_latency_milliseconds", consumer_group=group, topic=topic)
    assert age is not None and age >= 250, "age of the oldest unconsumed message, in ms"
    assert value(s, "rocketmq_consumer_connections", consumer_group=group) is None
    topics = value(s, "rocketmq_topic_number", **node)
    assert topics is not None and topics >= 2


def test_dlq_storage_and_process_metrics(dev: DevServer) -> None:
    assert dev.broker is not None and dev.broker.metrics_address
    ns, topic, group = dev.namesrv_addr, "MetricsDlqTopic", "metrics-dlq-group"
    c = push_consumer(ns, group, topic, lambda msgs: ConsumeStatus.RECONSUME_LATER)
    try:
        with Producer("metrics-dlq-producer", client_config=fast_config(ns)) as p:
            p.send(Message(topic, b"doomed"))

        def in_dlq() -> bool:
            s = scrape(dev.broker.metrics_address)  # type: ignore[union-attr]
            return value(s, "rocketmq_send_to_dlq_messages_total", consumer_group=group) == 1

        assert wait_until(in_dlq, timeout=30)
    finally:
        c.shutdown()
    s = scrape(dev.broker.metrics_address)
    size = value(s, "rocketmq_storage_size_bytes")
    assert size is not None and size > 0
    assert value(s, "rocketmq_storage_dispatch_behind_bytes") == 0
    assert value(s, "rocketmq_storage_flush_behind_bytes") is not None
    rss = value(s, "process_resident_memory_bytes")
    assert rss is not None and rss > 1 << 20
    assert value(s, "process_open_fds") is not None


def test_name_server_metrics_and_endpoint_errors(dev: DevServer) -> None:
    assert dev.namesrv is not None and dev.namesrv.metrics_address
    addr = dev.namesrv.metrics_address
    with Admin(dev.namesrv_addr) as admin:  # a route asked for, whatever ran before
        admin.create_topic("MetricsRouteAsked", queues=1)
        assert wait_until(lambda: admin.topic_route("MetricsRouteAsked") is not None)
    s = scrape(addr)
    assert value(s, "rocketmq_broker_number", node_type="namesrv") == 1
    routes = value(
        s,
        "rocketmq_rpc_latency_milliseconds_count",
        request_code="get_routeinfo_by_topic",
        result="success",
    )
    assert routes is not None and routes >= 1, "clients asked for routes"
    registrations = value(
        s, "rocketmq_rpc_latency_milliseconds_count", request_code="register_broker"
    )
    assert registrations is not None and registrations >= 1
    assert dev.metrics_urls == [
        f"http://{dev.broker.metrics_address}/metrics",  # type: ignore[union-attr]
        f"http://{addr}/metrics",
    ]
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"http://{addr}/nothing", timeout=10)
    assert e.value.code == 404
    e.value.close()


def test_metrics_are_off_by_default(tmp_path) -> None:
    with in_process_dev(tmp_path / "s") as d:
        assert d.broker is not None and d.broker.metrics_address is None
        assert d.namesrv is not None and d.namesrv.metrics_address is None
        assert d.metrics_urls == []


def test_client_metrics_through_prometheus_client(dev: DevServer) -> None:
    from prometheus_client import REGISTRY

    from rocketpy.metrics import METRICS

    assert METRICS is not None, "prometheus_client is installed in the test environment"
    ns, topic, group = dev.namesrv_addr, "ClientMetricsTopic", "client-metrics-group"
    with Producer("client-metrics-producer", client_config=fast_config(ns)) as p:
        client_id = p._client().client_id
        for _ in range(3):
            p.send(Message(topic, b"one"))
        p.send_batch([Message(topic, b"b") for _ in range(4)])
    labels = {"topic": topic, "client_id": client_id}
    assert REGISTRY.get_sample_value("rocketpy_client_messages_sent_total", labels) == 7
    sends = {**labels, "invocation_status": "success"}
    assert REGISTRY.get_sample_value("rocketmq_send_cost_time_count", sends) == 4
    assert REGISTRY.get_sample_value("rocketpy_client_send_failures_total", labels) is None

    release = threading.Event()
    got = Collector()

    def slow(msgs):  # type: ignore[no-untyped-def]
        release.wait(30)
        return got(msgs)

    c = push_consumer(ns, group, topic, slow)
    try:

        def lag() -> float:
            return sum(
                REGISTRY.get_sample_value(
                    "rocketpy_client_consume_lag_messages",
                    {
                        "consumer_group": group,
                        "topic": topic,
                        "broker": "broker-a",
                        "queue_id": str(q),
                        "client_id": c.client_id,
                    },
                )
                or 0
                for q in range(8)
            )

        assert wait_until(lambda: lag() == 7, timeout=20), "held by a blocked listener"
        release.set()
        assert wait_until(lambda: len(got.messages) == 7 and lag() == 0, timeout=20)
        process = {
            "topic": topic,
            "consumer_group": group,
            "client_id": c.client_id,
            "invocation_status": "success",
        }
        calls = REGISTRY.get_sample_value("rocketmq_process_time_count", process)
        assert calls is not None and calls >= 1
    finally:
        c.shutdown()
