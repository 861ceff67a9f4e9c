"""RocketMQ 4.x ACL (``aclEnable=true``) on a real name server and broker: requests signed as
RocketMQ's ``AclClientRPCHook`` signs them pass; unsigned and wrongly signed ones, and ones
without the account's rights, get NO_PERMISSION (16) with a remark naming what was refused;
the connection stays usable; the file is read again when it changes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from servers import Cluster, acl_settings

from helpers import Collector, fast_config, wait_until
from rocketpy import (
    ConsumeFromWhere,
    LocalTransactionState,
    Message,
    MessageQueue,
    Producer,
    PushConsumer,
    SessionCredentials,
    TransactionProducer,
)
from rocketpy._native import RemotingClient
from rocketpy.admin import Admin
from rocketpy.errors import BrokerResponseError
from rocketpy.mqadmin import main
from rocketpy.protocol import RequestCode, ResponseCode

ACL = """
globalWhiteRemoteAddresses: []
accounts:
  - accessKey: admin-account
    secretKey: admin-secret
    admin: true
  - accessKey: producer-account
    secretKey: producer-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: ["AclOrders=PUB", "AclShared=PUB|SUB"]
  - accessKey: consumer-account
    secretKey: consumer-secret
    defaultTopicPerm: SUB
    defaultGroupPerm: DENY
    topicPerms: ["AclSecret=DENY"]
    groupPerms: ["acl-readers=SUB"]
"""

ADMIN = SessionCredentials("admin-account", "admin-secret")
PRODUCER = SessionCredentials("producer-account", "producer-secret")
CONSUMER = SessionCredentials("consumer-account", "consumer-secret")


@dataclass
class AclCluster:
    namesrv: str
    broker: str
    acl_file: Path


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclCluster]:
    home = tmp_path_factory.mktemp("acl")
    acl_file = home / "plain_acl.yml"
    acl_file.write_text(ACL)
    cluster = Cluster(
        home / "store",
        # The broker signs its registrations: an admin account of the name server's ACL.
        acl_settings(acl_file, signer=(ADMIN.access_key, ADMIN.secret_key)),
        namesrv_settings=acl_settings(acl_file),
    )
    try:
        with Admin(cluster.namesrv, credentials=ADMIN) as admin:
            assert wait_until(lambda: admin.master_addrs(), timeout=10), "never registered"
            for topic in ("AclOrders", "AclShared", "AclOther", "AclSecret"):
                admin.create_topic(topic, queues=2)
        yield AclCluster(cluster.namesrv, cluster.broker, acl_file)
    finally:
        cluster.stop()


def send_header(topic: str) -> dict[str, object]:
    return dict(
        producer_group="acl-raw", topic=topic, default_topic="TBW102",
        default_topic_queue_nums=4, queue_id=0, sys_flag=0, born_timestamp=0, flag=0,
    )  # fmt: skip


def test_unsigned_and_wrongly_signed_requests_are_refused(acl_cluster: AclCluster):
    for credentials, remark in [
        (None, "No accessKey is configured"),
        (("producer-account", "wrong-secret", None), "Check signature failed for accessKey=producer-account"),
        (("nobody-at-all", "whatever", None), "No acl config for nobody-at-all"),
    ]:  # fmt: skip
        c = RemotingClient(credentials=credentials)
        try:
            resp = c.invoke(
                acl_cluster.broker, RequestCode.SEND_MESSAGE, send_header("AclOrders"), b"x", 3000
            )
            assert resp.code == ResponseCode.NO_PERMISSION
            assert remark in (resp.remark or "")
            assert "secret" not in (resp.remark or "").replace("wrong-secret", "")
            route = c.invoke(
                acl_cluster.namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, dict(topic="AclOrders"),
                None, 3000,
            )  # fmt: skip
            assert route.code == ResponseCode.NO_PERMISSION, "the name server checks too"
        finally:
            c.shutdown()
    # A refusal leaves the connection usable: the same client, now with the right account.
    good = RemotingClient(credentials=PRODUCER.native())
    try:
        for topic, code in [("AclOther", ResponseCode.NO_PERMISSION), ("AclOrders", 0)]:
            resp = good.invoke(
                acl_cluster.broker, RequestCode.SEND_MESSAGE, send_header(topic), b"x", 3000
            )
            assert resp.code == code, resp.remark
    finally:
        good.shutdown()


def test_rights_per_topic_group_and_admin(acl_cluster: AclCluster):
    with Producer("acl-producer", acl_cluster.namesrv, credentials=PRODUCER) as p:
        p.send(Message("AclOrders", b"order-1"))
        p.send(Message("AclShared", b"shared-1"))
        # NO_PERMISSION is one of the codes producers retry (a broker's write permission can
        # come back); each attempt is refused the same way.
        # The error keeps each attempt's answer: the broker's code, not only its text.
        with pytest.raises(BrokerResponseError, match="No PUB permission on topic AclOther") as e:
            p.send(Message("AclOther", b"nope"))
        assert e.value.code == ResponseCode.NO_PERMISSION
        attempts = e.value.errors  # type: ignore[attr-defined]
        assert len(attempts) == 3, attempts  # retryTimesWhenSendFailed (2) + 1
        assert [a.code for a in attempts] == [ResponseCode.NO_PERMISSION] * 3
        assert e.value.__cause__ is attempts[-1]
        assert "failed after 3 attempt(s)" in str(e.value)
    got = Collector()
    c = PushConsumer(
        "acl-readers",
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        client_config=fast_config(acl_cluster.namesrv),
        credentials=CONSUMER,
    )
    c.subscribe("AclOrders")
    c.register_listener(got)
    c.start()
    try:
        assert wait_until(lambda: b"order-1" in [m.body for m in got.messages], timeout=30)
    finally:
        c.shutdown()
    with Admin(acl_cluster.namesrv, credentials=CONSUMER) as admin:
        mq = next(iter(admin.topic_stats("AclOrders")))
        # Pulls need SUB on the topic and on the group.
        assert admin.pull_messages(mq, 0, 32, group="acl-readers") is not None
        with pytest.raises(BrokerResponseError, match="No SUB permission on group others"):
            admin.consumer_offset("others", mq)
        # A topic it may not read: not even its queues' offsets.
        with pytest.raises(BrokerResponseError, match="No SUB permission on topic AclSecret"):
            admin.topic_stats("AclSecret")
        secret = MessageQueue("AclSecret", mq.broker_name, 0)
        with pytest.raises(BrokerResponseError, match="No SUB permission on topic AclSecret"):
            admin.consumer_offset("acl-readers", secret)
        with pytest.raises(BrokerResponseError, match="Need admin permission for request code=17"):
            admin.create_topic("AclNew", queues=1)
    with Admin(acl_cluster.namesrv, credentials=ADMIN) as admin:
        admin.create_topic("AclNew", queues=1)


def commit_log_offset(offset_msg_id: str) -> int:
    """The CommitLog offset in an offset message id (store ip 4 + port 4 + offset 8 bytes)."""
    return int(offset_msg_id[16:], 16)


class _Undecided:
    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        return LocalTransactionState.UNKNOW

    def check_local_transaction(self, msg: object) -> LocalTransactionState:
        return LocalTransactionState.UNKNOW


def test_rights_follow_the_stored_message_not_optional_fields(acl_cluster: AclCluster):
    """VIEW_MESSAGE_BY_ID, CONSUMER_SEND_MSG_BACK and END_TRANSACTION need the right on the
    topic of the message they name (read from the store, whatever fields the caller sent);
    QUERY_CONSUME_QUEUE needs SUB on its topic."""
    with Producer("acl-admin-feed", acl_cluster.namesrv, credentials=ADMIN) as p:
        secret = commit_log_offset(p.send(Message("AclSecret", b"secret")).offset_msg_id)
        orders = commit_log_offset(p.send(Message("AclOrders", b"order")).offset_msg_id)
    with TransactionProducer("acl-tx", acl_cluster.namesrv, _Undecided(), credentials=ADMIN) as tp:
        half = tp.send_message_in_transaction(Message("AclSecret", b"half"))
    consumer = RemotingClient(credentials=CONSUMER.native())
    producer = RemotingClient(credentials=PRODUCER.native())
    try:

        def call(client: RemotingClient, code: int, header: dict[str, object]):
            return client.invoke(acl_cluster.broker, code, header, None, 3000)

        # No topic named: the stored message's topic decides.
        view = call(consumer, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": secret})
        assert view.code == ResponseCode.NO_PERMISSION
        assert "No SUB permission on topic AclSecret" in (view.remark or "")
        named_other = call(
            consumer, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": secret, "topic": "AclOrders"}
        )
        assert named_other.code == ResponseCode.NO_PERMISSION, "the named topic does not decide"
        assert call(consumer, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": orders}).code == 0
        # Its own group, another topic's message: nothing is copied into the retry topic.
        back = call(consumer, RequestCode.CONSUMER_SEND_MSG_BACK,
                    {"offset": secret, "group": "acl-readers", "delay_level": 0})  # fmt: skip
        assert back.code == ResponseCode.NO_PERMISSION, back.remark
        assert "AclSecret" in (back.remark or "")
        # Another producer's half message on a topic this account cannot write.
        end = call(producer, RequestCode.END_TRANSACTION, {
            "producer_group": "acl-tx", "tran_state_table_offset": half.queue_offset,
            "commit_log_offset": commit_log_offset(half.offset_msg_id), "commit_or_rollback": 8,
            "from_transaction_check": False, "msg_id": half.msg_id,
        })  # fmt: skip
        assert end.code == ResponseCode.NO_PERMISSION, end.remark
        assert "No PUB permission on topic AclSecret" in (end.remark or "")
        queue = {"topic": "AclSecret", "queue_id": 0, "index": 0, "count": 1}
        cq = call(consumer, RequestCode.QUERY_CONSUME_QUEUE, queue)
        assert cq.code == ResponseCode.NO_PERMISSION, cq.remark
        assert (
            call(consumer, RequestCode.QUERY_CONSUME_QUEUE, {**queue, "topic": "AclOrders"}).code
            == 0
        )
    finally:
        consumer.shutdown()
        producer.shutdown()


def test_mqadmin_signs_with_flags_or_tools_yml(
    acl_cluster: AclCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    def mqadmin(*args: str) -> tuple[int, str]:
        capsys.readouterr()
        try:
            main([args[0], "-n", acl_cluster.namesrv, *args[1:]])
            code = 0
        except SystemExit as e:
            code = int(e.code or 0)
        out = capsys.readouterr()
        return code, out.out + out.err

    for name in ("ROCKETMQ_HOME", "ROCKETMQ_ACCESS_KEY", "ROCKETMQ_SECRET_KEY"):
        monkeypatch.delenv(name, raising=False)
    code, out = mqadmin("updateTopic", "-c", "DefaultCluster", "-t", "AclByCli")
    assert code == 1 and "CODE: 16 DESC: No accessKey is configured" in out, out
    code, out = mqadmin(
        "updateTopic", "-c", "DefaultCluster", "-t", "AclByCli",
        "--accessKey", ADMIN.access_key, "--secretKey", ADMIN.secret_key,
    )  # fmt: skip
    assert code == 0, out
    # RocketMQ's mqadmin signs with $ROCKETMQ_HOME/conf/tools.yml.
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "tools.yml").write_text(
        f"accessKey: {CONSUMER.access_key}\nsecretKey: '{CONSUMER.secret_key}'\n"
    )
    monkeypatch.setenv("ROCKETMQ_HOME", str(tmp_path))
    code, out = mqadmin("topicStatus", "-t", "AclByCli")
    assert code == 0 and "#Broker Name" in out, out
    code, out = mqadmin("updateTopic", "-c", "DefaultCluster", "-t", "AclByCli2")
    assert code == 1 and "Need admin permission" in out, out
    monkeypatch.setenv("ROCKETMQ_ACCESS_KEY", ADMIN.access_key)
    monkeypatch.setenv("ROCKETMQ_SECRET_KEY", ADMIN.secret_key)
    code, out = mqadmin("updateTopic", "-c", "DefaultCluster", "-t", "AclByCli2")
    assert code == 0, out


def test_a_changed_file_takes_effect(acl_cluster: AclCluster):
    with Producer("acl-reload", acl_cluster.namesrv, credentials=PRODUCER) as p:
        with pytest.raises(BrokerResponseError, match="No PUB permission"):
            p.send(Message("AclOther", b"before"))
        text = acl_cluster.acl_file.read_text()
        acl_cluster.acl_file.write_text(
            text.replace('"AclOrders=PUB"', '"AclOrders=PUB", "AclOther=PUB"')
        )
        try:

            def allowed() -> bool:
                try:
                    p.send(Message("AclOther", b"after"))
                    return True
                except BrokerResponseError:
                    return False

            assert wait_until(allowed, timeout=15), "read again within the 5 s watch"
        finally:
            acl_cluster.acl_file.write_text(text)
            time.sleep(0.01)


@pytest.mark.spark
def test_spark_reads_and_writes_with_an_account(acl_cluster: AclCluster, spark):
    with Producer("acl-spark-feed", acl_cluster.namesrv, credentials=PRODUCER) as p:
        for i in range(5):
            p.send(Message("AclOrders", f"spark-{i}".encode()))

    def read(**account: str) -> list[bytes]:
        reader = (
            spark.read.format("rocketmq")
            .option("namesrv", acl_cluster.namesrv)
            .option("topic", "AclOrders")
            .option("groupId", "acl-readers")
        )
        for k, v in account.items():
            reader = reader.option(k, v)
        return [r.body for r in reader.load().select("body").collect()]

    bodies = read(accessKey=CONSUMER.access_key, secretKey=CONSUMER.secret_key)
    assert {f"spark-{i}".encode() for i in range(5)} <= set(bodies)
    with pytest.raises(Exception, match=r"No accessKey is configured|NO_PERMISSION|16"):
        read()
    (
        spark.createDataFrame([(b"from-spark",)], "body binary")
        .write.format("rocketmq")
        .option("namesrv", acl_cluster.namesrv)
        .option("topic", "AclShared")
        .option("accessKey", PRODUCER.access_key)
        .option("secretKey", PRODUCER.secret_key)
        .mode("append")
        .save()
    )
    with Admin(acl_cluster.namesrv, credentials=ADMIN) as admin:
        stored = [
            m.body for mq in admin.topic_stats("AclShared") for m in admin.pull_messages(mq, 0, 32)
        ]
    assert b"from-spark" in stored
