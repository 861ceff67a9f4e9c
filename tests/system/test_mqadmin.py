"""``rocketpy admin`` (mqadmin's commands) against a real ``rocketpy dev``: each command's output
is parsed and compared with the cluster's state, which the test sets up and reads through the
client API."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import Collector, fast_config, wait_until
from rocketpy import ClientError, ConsumeFromWhere, Message, MessageModel, Producer, PushConsumer
from rocketpy.admin import Admin
from rocketpy.admin.message_id import decode_offset_msg_id
from rocketpy.message import MessageQueue
from rocketpy.mqadmin import main as mqadmin


def run(capsys: pytest.CaptureFixture[str], ns: str, *args: str) -> str:
    capsys.readouterr()
    mqadmin([args[0], "-n", ns, *args[1:]])
    return capsys.readouterr().out


def table(out: str) -> list[list[str]]:
    """The rows under a ``#``-header, split on blanks."""
    lines = [line for line in out.splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.startswith("#"))
    return [line.split() for line in lines[start + 1 :] if not line.startswith("#")]


def send(ns: str, topic: str, n: int, key: str | None = None) -> list[str]:
    with Producer("AdmProducer", client_config=fast_config(ns)) as p:
        return [p.send(Message(topic, f"m{i}".encode(), keys=key)).msg_id for i in range(n)]


def consumer(ns: str, group: str, topic: str, model: MessageModel = MessageModel.CLUSTERING):
    c = PushConsumer(
        group,
        client_config=fast_config(ns),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        message_model=model,
    )
    got = Collector()
    c.subscribe(topic, "*")
    c.register_listener(got)
    c.start()
    return c, got


def test_topics_created_listed_routed_counted_and_deleted(shared_dev, capsys):
    ns = shared_dev.namesrv
    out = run(
        capsys, ns, "updateTopic", "-c", "DefaultCluster", "-t", "AdmTopic", "-r", "4", "-w", "4"
    )
    assert f"create topic to {shared_dev.broker} success." in out
    assert "perm=RW-" in out
    assert "AdmTopic" in run(capsys, ns, "topicList").split()
    assert "AdmTopic" in json.loads(run(capsys, ns, "topicList", "--json"))
    route = json.loads(run(capsys, ns, "topicRoute", "-t", "AdmTopic"))
    assert route["queueDatas"][0]["writeQueueNums"] == 4

    send(ns, "AdmTopic", 10)
    rows = table(run(capsys, ns, "topicStatus", "-t", "AdmTopic"))
    assert [int(r[1]) for r in rows] == [0, 1, 2, 3]
    assert sum(int(r[3]) for r in rows) == 10  # #Max Offset
    assert all(r[4].startswith(time.strftime("%Y-")) for r in rows if int(r[3]) > 0)

    with_groups = table(run(capsys, ns, "topicList", "-c"))
    assert ["DefaultCluster", "AdmTopic"] in [r[:2] for r in with_groups]

    out = run(capsys, ns, "deleteTopic", "-t", "AdmTopic", "-c", "DefaultCluster")
    assert "delete topic [AdmTopic] from NameServer success." in out
    with Admin(ns) as admin:
        assert admin.topic_route("AdmTopic") is None
        assert wait_until(lambda: "AdmTopic" not in admin.topic_list(), 10)
    assert not (shared_dev.store / "consumequeue" / "AdmTopic").exists()
    # Created again, the topic starts from offset 0.
    run(capsys, ns, "updateTopic", "-b", shared_dev.broker, "-t", "AdmTopic", "-r", "2", "-w", "2")
    rows = table(run(capsys, ns, "topicStatus", "-t", "AdmTopic"))
    assert [int(r[3]) for r in rows] == [0, 0]


def test_cluster_broker_status_config_and_stats(shared_dev, capsys):
    ns = shared_dev.namesrv
    run(capsys, ns, "updateTopic", "-c", "DefaultCluster", "-t", "AdmStats", "-r", "2", "-w", "2")
    send(ns, "AdmStats", 6)
    rows = table(run(capsys, ns, "clusterList"))
    [mine] = [r for r in rows if r[3] == shared_dev.broker]
    assert mine[:3] == ["DefaultCluster", "broker-a", "0"] and mine[4] == "V5_0_0"
    listed = json.loads(run(capsys, ns, "clusterList", "--json"))
    assert listed[0]["addr"] == shared_dev.broker

    status = dict(
        (line.split(":", 1)[0].strip(), line.split(":", 1)[1].strip())
        for line in run(capsys, ns, "brokerStatus", "-b", shared_dev.broker).splitlines()
    )
    assert int(status["msgPutTotalTodayNow"]) >= 6
    assert len(status["putTps"].split()) == 3
    assert status["brokerVersionDesc"] == "V5_0_0"

    config = run(capsys, ns, "getBrokerConfig", "-b", shared_dev.broker)
    assert f"============{shared_dev.broker}============" in config
    assert any(line.split("=")[0].strip() == "brokerName" for line in config.splitlines())

    c, got = consumer(ns, "AdmStatsGroup", "AdmStats")
    try:
        got.wait_for(6)
    finally:
        c.shutdown()
    stats = json.loads(run(capsys, ns, "statsAll", "-t", "AdmStats", "--json"))
    [row] = [r for r in stats if r["group"] == "AdmStatsGroup"]
    assert row["inMsg24Hour"] == 6 and row["outMsg24Hour"] >= 6 and row["accumulation"] == 0
    assert "#Accumulation" in run(capsys, ns, "statsAll", "-t", "AdmStats")


def test_lagging_group_progress_connections_and_reset(shared_dev, capsys):
    ns = shared_dev.namesrv
    run(capsys, ns, "updateTopic", "-c", "DefaultCluster", "-t", "AdmLag", "-r", "2", "-w", "2")
    send(ns, "AdmLag", 8)
    c, got = consumer(ns, "AdmLagGroup", "AdmLag")
    try:
        got.wait_for(8)
        out = run(capsys, ns, "consumerConnection", "-g", "AdmLagGroup")
        lines = out.splitlines()
        assert lines[0].split() == ["#ClientId", "#ClientAddr", "#Language", "#Version"]
        # rocketpy's Python clients say PYTHON (docs/formats.md)
        assert lines[1].split()[2:] == ["PYTHON", "V5_0_0"]
        assert ["AdmLag", "*"] in [line.split() for line in lines]
        assert "MessageModel: CLUSTERING" in out
        groups = table(run(capsys, ns, "consumerProgress"))
        [mine] = [r for r in groups if r[0] == "AdmLagGroup"]
        assert mine[1] == "1" and mine[3:5] == ["PUSH", "CLUSTERING"]

        # Offsets are committed within a second (fast_config); until the first commit the
        # group has no queues to show. The group's retry queue is listed too once the
        # member has committed an offset there (as mqadmin lists it): not counted here.
        last = [""]

        def caught_up() -> bool:
            last[0] = run(capsys, ns, "consumerProgress", "-g", "AdmLagGroup")
            rows = [r for r in table(last[0].split("\n\n")[0]) if r[0] == "AdmLag"]
            return len(rows) == 2 and "Diff Total: 0" in last[0]

        assert wait_until(caught_up, 30), last[0]

        # mqadmin resetOffsetByTime to the start: the online member consumes everything again.
        out = run(capsys, ns, "resetOffsetByTime", "-g", "AdmLagGroup", "-t", "AdmLag", "-s", "0")
        assert [r[2] for r in table(out)] == ["0", "0"]
        assert len(got.wait_for(16, timeout=30)) >= 16
    finally:
        c.shutdown()

    send(ns, "AdmLag", 5)
    out = run(capsys, ns, "consumerProgress", "-g", "AdmLagGroup")
    assert "Diff Total: 5" in out
    rows = table(out.split("\n\n")[0])
    assert sum(int(r[5]) for r in rows) == 5  # #Diff
    [offline] = [r for r in table(run(capsys, ns, "consumerProgress")) if r[0] == "AdmLagGroup"]
    assert offline[1:3] == ["0", "OFFLINE"]
    # Offline group: offsets committed directly (mqadmin's fallback), to the end here.
    run(capsys, ns, "resetOffsetByTime", "-g", "AdmLagGroup", "-t", "AdmLag", "-s", "-1")
    assert "Diff Total: 0" in run(capsys, ns, "consumerProgress", "-g", "AdmLagGroup")


def test_producer_connection_lists_live_producers(shared_dev, capsys):
    ns = shared_dev.namesrv
    run(capsys, ns, "updateTopic", "-c", "DefaultCluster", "-t", "AdmProd", "-r", "1", "-w", "1")
    with Producer("AdmLiveProducer", client_config=fast_config(ns)) as p:
        p.send(Message("AdmProd", b"x"))
        with Admin(ns) as admin:  # the producer's first heartbeat follows within a second

            def listed() -> object:
                try:
                    return admin.producer_connections("AdmLiveProducer", "AdmProd")
                except ClientError:  # the name server has no route for it yet
                    return None

            assert wait_until(listed, 10)
        out = run(capsys, ns, "producerConnection", "-g", "AdmLiveProducer", "-t", "AdmProd")
        row = out.split()
        assert row[0] == "0001" and row[3] == "PYTHON"


def test_messages_found_by_key_id_unique_key_and_offset(shared_dev, capsys, tmp_path):
    ns = shared_dev.namesrv
    run(capsys, ns, "updateTopic", "-c", "DefaultCluster", "-t", "AdmMsg", "-r", "1", "-w", "1")
    [msg_id] = send(ns, "AdmMsg", 1, key="order-42")
    rows = table(run(capsys, ns, "queryMsgByKey", "-t", "AdmMsg", "-k", "order-42"))
    assert rows == [[msg_id, "0", "0"]]

    out = run(capsys, ns, "queryMsgByUniqueKey", "-t", "AdmMsg", "-i", msg_id)
    fields = {line[:20].strip(): line[21:] for line in out.splitlines() if line[:1].isupper()}
    assert fields["Topic:"] == "AdmMsg" and fields["Keys:"] == "[order-42]"
    assert Path(fields["Message Body Path:"]).read_bytes() == b"m0"
    assert "OffsetID:" not in fields  # queryMsgByUniqueKey starts at Topic, as mqadmin's
    offset_id = json.loads(
        run(capsys, ns, "queryMsgByUniqueKey", "-t", "AdmMsg", "-i", msg_id, "--json")
    )["offsetMsgId"]

    by_id = run(capsys, ns, "queryMsgById", "-i", offset_id)
    assert "Queue Offset:        0" in by_id
    # The id the producer returned (what applications log) works too, as in mqadmin: in the
    # topic given, or in every topic.
    for extra in (["-t", "AdmMsg"], []):
        by_msg_id = json.loads(run(capsys, ns, "queryMsgById", "-i", msg_id, "--json", *extra))
        assert by_msg_id["offsetMsgId"] == offset_id and by_msg_id["msgId"] == msg_id
    with Admin(ns) as admin:
        assert admin.view_message(msg_id).offset_msg_id == offset_id  # type: ignore[union-attr]
        assert admin.view_message(offset_id).msg_id == msg_id  # type: ignore[union-attr]
        assert admin.view_message("00" * 16) is None
        with pytest.raises(ClientError, match="hex digits"):
            admin.view_message("not-an-id")
    by_offset = json.loads(
        run(
            capsys,
            ns,
            "queryMsgByOffset",
            "-t",
            "AdmMsg",
            "-b",
            "broker-a",
            "-i",
            "0",
            "-o",
            "0",
            "--json",
        )
    )
    assert by_offset["body"] == "m0" and by_offset["offsetMsgId"] == offset_id

    # queryCq: the consume queue's unit points at the message's CommitLog offset.
    cq = run(capsys, ns, "queryCq", "-t", "AdmMsg", "-q", "0", "-i", "0", "-g", "nobody")
    _, physic_offset = decode_offset_msg_id(offset_id)
    assert "Filter data: \nnobody@AdmMsg is not online!\n" in cq
    assert "Queue data: \nmax: 1, min: 0\n" in cq
    assert f"idx: 0\nConsumeQueueData{{physicOffset={physic_offset}, physicSize=" in cq
    assert "idx: 1" not in cq
    with Admin(ns) as admin:
        mq = MessageQueue("AdmMsg", "broker-a", 0)
        [unit] = admin.query_consume_queue(mq, 0, 10).units
        assert unit.physic_offset == physic_offset and unit.physic_size > len(b"m0")
        assert admin.query_consume_queue(mq, 5).units == []


def test_subscription_groups_and_write_permission(shared_dev, capsys):
    ns = shared_dev.namesrv
    out = run(capsys, ns, "updateSubGroup", "-c", "DefaultCluster", "-g", "AdmSub", "-r", "3")
    assert "create subscription group to" in out and "retryMaxTimes=3" in out

    def groups() -> dict:
        from rocketpy._native import RemotingClient
        from rocketpy.protocol import RequestCode

        client = RemotingClient()
        try:
            resp = client.invoke(
                shared_dev.broker, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, None, None, 3000
            )
            return json.loads(resp.body)["subscriptionGroupTable"]
        finally:
            client.shutdown()

    assert groups()["AdmSub"]["retryMaxTimes"] == 3
    out = run(capsys, ns, "deleteSubGroup", "-c", "DefaultCluster", "-g", "AdmSub")
    assert "delete subscription group [AdmSub]" in out
    assert "AdmSub" not in groups()

    run(capsys, ns, "updateTopic", "-c", "DefaultCluster", "-t", "AdmPerm", "-r", "1", "-w", "1")
    out = run(capsys, ns, "wipeWritePerm", "-b", "broker-a")
    assert out.startswith(f"wipe write perm of broker[broker-a] in name server[{ns}] OK, ")
    route = json.loads(run(capsys, ns, "topicRoute", "-t", "AdmPerm"))
    assert route["queueDatas"][0]["perm"] == 4
    run(capsys, ns, "addWritePerm", "-b", "broker-a")
    route = json.loads(run(capsys, ns, "topicRoute", "-t", "AdmPerm"))
    assert route["queueDatas"][0]["perm"] == 6


def test_errors_are_one_line_without_traceback(shared_dev, tmp_path):
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rocketpy", "admin", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )

    ns = shared_dev.namesrv
    for args, code, needle in [
        (["topicStatus", "-n", ns, "-t", "NoSuchTopic"], 1, "NoSuchTopic"),
        (["consumerConnection", "-n", ns, "-g", "NoSuchGroup"], 1, "not online"),
        (["topicList", "-n", "127.0.0.1:1"], 1, "no name server answered"),
        (["topicStatus", "-n", ns, "-t", "T", "--bogus"], 2, "--bogus"),
        (["noSuchCommand"], 2, "noSuchCommand"),
    ]:
        r = cli(*args)
        assert r.returncode == code, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and needle in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr
    assert "consumerProgress" in cli("-h").stdout


def test_a_created_topic_is_routed_when_the_answer_comes(shared_dev):
    """As RocketMQ's broker, UPDATE_AND_CREATE_TOPIC is answered once the name servers know
    the topic: a producer right after `updateTopic` gets its route, not the TBW102
    template's queues (which a one-queue topic refuses)."""
    with Admin(shared_dev.namesrv) as admin:
        for i in range(10):
            topic = f"RoutedAtOnce{i}"
            admin.create_topic(topic, queues=1)
            route = admin.topic_route(topic)
            assert route is not None, f"{topic} has no route right after its creation"
            assert [q.write_queue_nums for q in route.queue_datas] == [1]
