"""Broker and name server requests issued directly with the remoting client."""

from __future__ import annotations

import json

import pytest
from rmq_wire import Wire
from servers import HOST_DISK_SETTINGS

from helpers import wait_until
from rocketpy import Message, Producer
from rocketpy._native import Broker, InvalidArgumentError, NameServer, RemotingClient
from rocketpy.protocol import RequestCode, ResponseCode


def test_topic_admin_and_offset_requests(dev_server):
    client = RemotingClient()
    broker = dev_server.broker
    create = dict(
        topic="AdminTopic",
        default_topic="TBW102",
        read_queue_nums=8,
        write_queue_nums=8,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        topic_sys_flag=0,
        order=False,
    )
    assert (
        client.invoke(broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create).code
        == ResponseCode.SUCCESS
    )
    bad = dict(create, topic="../evil")
    assert (
        client.invoke(broker, RequestCode.UPDATE_AND_CREATE_TOPIC, bad).code != ResponseCode.SUCCESS
    )

    def route_queues() -> int:
        resp = client.invoke(
            dev_server.namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, dict(topic="AdminTopic")
        )
        if resp.code != ResponseCode.SUCCESS:
            return 0
        return int(json.loads(resp.body)["queueDatas"][0]["writeQueueNums"])

    assert wait_until(lambda: route_queues() == 8), "the broker re-registers after a topic change"
    missing = client.invoke(
        dev_server.namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, dict(topic="NoSuchTopic")
    )
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST

    all_topics = client.invoke(broker, RequestCode.GET_ALL_TOPIC_CONFIG)
    assert "AdminTopic" in json.loads(all_topics.body)["topicConfigTable"]

    with Producer("admin-producer", dev_server.namesrv) as p:
        for _ in range(5):
            p.send(Message("AdminTopic", b"x"), queue=p.message_queues("AdminTopic")[7])
    q = dict(topic="AdminTopic", queue_id=7)
    max_offset = client.invoke(broker, RequestCode.GET_MAX_OFFSET, q)
    assert max_offset.header.offset == 5
    assert max_offset.ext_fields == {"offset": "5"}, "wire name as RocketMQ's"
    assert client.invoke(broker, RequestCode.GET_MIN_OFFSET, q).header.offset == 0

    group = dict(consumer_group="g1", topic="AdminTopic", queue_id=7)
    young = client.invoke(broker, RequestCode.QUERY_CONSUMER_OFFSET, group)
    assert (young.code, young.header.offset) == (ResponseCode.SUCCESS, 0), "young queue: start at 0"
    update = dict(group, commit_offset=3)
    assert (
        client.invoke(broker, RequestCode.UPDATE_CONSUMER_OFFSET, update).code
        == ResponseCode.SUCCESS
    )
    assert client.invoke(broker, RequestCode.QUERY_CONSUMER_OFFSET, group).header.offset == 3
    with pytest.raises(InvalidArgumentError, match="consumer_group"):
        client.invoke(broker, RequestCode.QUERY_CONSUMER_OFFSET, dict(topic="AdminTopic"))
    with pytest.raises(InvalidArgumentError, match="no field"):
        client.invoke(broker, RequestCode.GET_MAX_OFFSET, dict(q, queueId=7))
    with pytest.raises(InvalidArgumentError, match="queue_id: expected Int"):
        client.invoke(broker, RequestCode.GET_MAX_OFFSET, dict(q, queue_id="7"))
    with Wire(broker) as w:  # what the native client refuses to send, a broker must refuse too
        missing_field = w.call(RequestCode.QUERY_CONSUMER_OFFSET, {"topic": "AdminTopic"})
    assert missing_field.code == ResponseCode.SYSTEM_ERROR and "consumerGroup" in (
        missing_field.remark or ""
    )
    unknown = client.invoke(broker, 9999)
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    client.shutdown()


def test_broker_registers_and_unregisters_at_shutdown(tmp_path):
    # That periodic registration keeps a broker past the name server's expiry is tested on a
    # manual clock in crates/broker/tests/it/registration.rs.
    namesrv = NameServer.start("127.0.0.1", 0, scan_interval_ms=100, broker_expiry_ms=2500)
    broker = Broker.start(
        None,
        {
            "namesrvAddr": namesrv.address,
            "bindAddress": "127.0.0.1",
            "brokerIP1": "127.0.0.1",
            "listenPort": "0",
            "storePathRootDir": str(tmp_path / "store"),
            "registerNameServerPeriod": "1000",
            **HOST_DISK_SETTINGS,
        },
    )
    try:
        assert wait_until(lambda: namesrv.live_brokers() == [broker.broker_addr])
    finally:
        broker.shutdown()
    assert wait_until(lambda: namesrv.live_brokers() == []), "unregistered at shutdown"
    namesrv.shutdown()
