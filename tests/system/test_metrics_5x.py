"""Broker metrics as RocketMQ 5.x writes them, beyond names: label values (request and
response codes by RocketMQ's constant names, the client's real language), and the 5.x
metrics of the lag family, transactions, creation times and storage — scraped from a real
broker's endpoint and parsed with prometheus_client's OpenMetrics parser."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from metrics_scrape import Samples, value
from metrics_scrape import scrape as scrape_address
from servers import in_process_dev

from helpers import Collector, fast_config, start_consumer, wait_until
from rocketpy import ClientError, ConsumeFromWhere, Message, Producer, _native
from rocketpy.admin import Admin
from rocketpy.protocol import RequestCode, ResponseCode
from rocketpy.server import DevServer
from rocketpy.transaction import LocalTransactionState, TransactionProducer


def scrape(dev: DevServer) -> Samples:
    assert dev.broker is not None and dev.broker.metrics_address
    return scrape_address(dev.broker.metrics_address)


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    store = tmp_path_factory.mktemp("metrics-5x") / "store"
    with in_process_dev(store, metrics_port=0) as d:
        yield d


def consumer(dev: DevServer, group: str, topic: str, listener: Any) -> Any:
    ns = dev.namesrv_addr
    return start_consumer(
        group, ns, topic, listener, "*", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        client_config=fast_config(ns),
    )  # fmt: skip


def test_codes_are_labelled_by_rocketmq_names(dev: DevServer) -> None:
    client = _native.RemotingClient()
    # GET_KV_CONFIG (101) is a name server's request, never a broker's; 4242 has no name.
    for code in (101, 4242):
        resp = client.invoke(dev.broker_addr, code, None, None, 3000)
        assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    with Producer("codes-producer", client_config=fast_config(dev.namesrv_addr)) as p:
        p.send(Message("CodesTopic", b"x"))
    s = scrape(dev)
    rpc = "rocketmq_rpc_latency_milliseconds_count"
    unsupported = "request_code_not_supported"
    assert value(s, rpc, request_code="get_kv_config", response_code=unsupported) == 1
    assert value(s, rpc, request_code="4242", response_code=unsupported) == 1
    sends = value(s, rpc, request_code="send_message_v2", response_code="success")
    assert sends is not None and sends >= 1
    codes = {ls[k] for n, ls, _ in s if n == rpc for k in ("request_code", "response_code")}
    assert {"send_message_v2", "unregister_client", "success"} <= codes
    numbers = {c for c in codes if c.lstrip("-").isdigit()}
    assert numbers == {"4242"}, "every code rocketpy serves or answers has RocketMQ's name"


def test_python_clients_announce_python(dev: DevServer) -> None:
    ns, topic, group = dev.namesrv_addr, "LanguageTopic", "language-group"
    admin = Admin(ns)
    c = consumer(dev, group, topic, Collector())
    try:
        with Producer("language-producer", client_config=fast_config(ns)) as p:
            p.send(Message(topic, b"x"))

            def producers() -> list[str]:
                try:
                    conns = admin.producer_connections("language-producer", topic)
                except ClientError:  # the auto-created topic's route is registered just after
                    return []
                return [conn.language for conn in conns]

            assert wait_until(lambda: producers() == ["PYTHON"], timeout=10), producers()

            def consumers() -> list[str]:
                cc = admin.consumer_connection(group)
                return [conn.language for conn in cc.connections] if cc else []

            assert wait_until(lambda: consumers() == ["PYTHON"], timeout=10), consumers()
            s = scrape(dev)
            labels = {"consumer_group": group, "language": "python", "consume_mode": "push"}
            assert value(s, "rocketmq_consumer_connections", **labels) == 1
            assert value(s, "rocketmq_producer_connections", language="python")
            languages = {ls.get("language") for n, ls, _ in s if n.endswith("_connections")}
            assert languages == {"python"}, "no client says rust"
    finally:
        c.shutdown()
        admin.close()

    # The binary (ROCKETMQ) header carries the language as a byte: PYTHON there too.
    client = _native.RemotingClient()
    heartbeat = {
        "clientID": "127.0.0.1@binary-header",
        "producerDataSet": [{"groupName": "binary-header-producer"}],
        "consumerDataSet": [],
    }
    body = json.dumps(heartbeat).encode()
    resp = client.invoke(dev.broker_addr, int(RequestCode.HEART_BEAT), None, body, 3000, True)
    assert resp.code == ResponseCode.SUCCESS
    header = {"producer_group": "binary-header-producer"}
    code = int(RequestCode.GET_PRODUCER_CONNECTION_LIST)
    resp = client.invoke(dev.broker_addr, code, header, None, 3000, True)
    assert resp.code == ResponseCode.SUCCESS
    conns = json.loads(resp.body)["connectionSet"]
    assert [conn["language"] for conn in conns] == ["PYTHON"]


def test_ready_messages_and_queueing_latency(dev: DevServer) -> None:
    ns, topic, group = dev.namesrv_addr, "ReadyTopic", "ready-group"
    lag = {"consumer_group": group, "topic": topic, "is_retry": "false", "is_system": "false"}
    admin = Admin(ns)
    try:
        with Producer("ready-producer", client_config=fast_config(ns)) as p:
            for _ in range(3):
                p.send(Message(topic, b"read"))
            # The group's progress at the end, as a consumer that read the 3 would leave it
            # (no consumer: none of its pulls may take what follows).
            assert wait_until(lambda: admin.topic_route(topic) is not None, timeout=10)
            for mq, offsets in admin.topic_stats(topic).items():
                admin.commit_offset(group, mq, offsets.max_offset)
            for _ in range(4):
                p.send(Message(topic, b"unread"))
        time.sleep(0.3)
        s = scrape(dev)
        assert value(s, "rocketmq_consumer_ready_messages", **lag) == 4
        assert value(s, "rocketmq_consumer_lag_messages", **lag) == 4
        assert value(s, "rocketmq_consumer_inflight_messages", **lag) == 0
        queueing = value(s, "rocketmq_consumer_queueing_latency_milliseconds", **lag)
        assert queueing is not None and queueing >= 250, "age of the oldest message not pulled"

        # A consumer whose listener holds the messages: pulled (in flight), no longer ready.
        release = threading.Event()
        got = Collector()

        def held(msgs: Any) -> Any:
            release.wait(30)
            return got(msgs)

        c = consumer(dev, group, topic, held)
        try:

            def pulled() -> bool:
                s = scrape(dev)
                return (
                    value(s, "rocketmq_consumer_inflight_messages", **lag) == 4
                    and value(s, "rocketmq_consumer_ready_messages", **lag) == 0
                )

            assert wait_until(pulled, timeout=20)
            s = scrape(dev)
            assert value(s, "rocketmq_consumer_lag_messages", **lag) == 4
            assert value(s, "rocketmq_consumer_queueing_latency_milliseconds", **lag) == 0
        finally:
            release.set()
            c.shutdown()
    finally:
        admin.close()


class _ByArg:
    """Commits or rolls back as the send's argument says."""

    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        return arg  # type: ignore[no-any-return]

    def check_local_transaction(self, msg: Any) -> LocalTransactionState:
        return LocalTransactionState.ROLLBACK_MESSAGE


def test_transactions_creations_and_storage(dev: DevServer) -> None:
    ns, topic = dev.namesrv_addr, "TxMetricsTopic"
    admin = Admin(ns)
    try:
        admin.create_topic("CreatedTopic", queues=2)
        with pytest.raises(Exception, match="readQueueNums"):
            admin.create_topic("RefusedTopic", queues=0)
        admin.update_subscription_group(dev.broker_addr, {"groupName": "created-group"})
    finally:
        admin.close()
    with TransactionProducer("tx-metrics", listener=_ByArg(), client_config=fast_config(ns)) as tp:
        tp.send_message_in_transaction(Message(topic, b"c"), LocalTransactionState.COMMIT_MESSAGE)
        tp.send_message_in_transaction(Message(topic, b"r"), LocalTransactionState.ROLLBACK_MESSAGE)

    def ended() -> bool:
        s = scrape(dev)
        return (
            value(s, "rocketmq_commit_messages_total", topic=topic) == 1
            and value(s, "rocketmq_rollback_messages_total", topic=topic) == 1
        )

    assert wait_until(ended, timeout=10), "END_TRANSACTION is oneway: counted when handled"
    s = scrape(dev)
    assert value(s, "rocketmq_finish_message_latency_milliseconds_count", topic=topic) == 1
    assert (
        value(s, "rocketmq_finish_message_latency_milliseconds_bucket", topic=topic, le="5.0") == 1
    )
    created = "rocketmq_topic_create_execution_time_milliseconds_count"
    ok = value(s, created, invocation_status="success", is_system="false")
    assert ok is not None and ok >= 1
    assert value(s, created, invocation_status="failure", is_system="false") == 1
    groups = value(s, "rocketmq_consumer_group_create_execution_time_milliseconds_count")
    assert groups is not None and groups >= 1
    reserve = value(s, "rocketmq_storage_message_reserve_time_milliseconds")
    assert reserve is not None and reserve >= 0
