"""Protocol conformance: every request code of the name server and broker, in both header
serialisations, through the hand-written client in ``rmq_wire`` (not the project's codec),
with response codes and fields checked against docs/formats.md."""

from __future__ import annotations

import contextlib
import json
import struct
import time

import pytest
from rmq_format import java_hash, parse_records
from rmq_wire import FLAG_ONEWAY, FLAG_RESPONSE, JSON, ROCKETMQ, Wire, batch_body

# Request codes (docs/formats.md).
SEND_MESSAGE, PULL_MESSAGE, QUERY_MESSAGE = 10, 11, 12
QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET, UPDATE_AND_CREATE_TOPIC = 14, 15, 17
GET_ALL_TOPIC_CONFIG, SEARCH_OFFSET_BY_TIMESTAMP, GET_MAX_OFFSET, GET_MIN_OFFSET = 21, 29, 30, 31
GET_EARLIEST_MSG_STORETIME, VIEW_MESSAGE_BY_ID, HEART_BEAT, UNREGISTER_CLIENT = 32, 33, 34, 35
CONSUMER_SEND_MSG_BACK, GET_CONSUMER_LIST_BY_GROUP, NOTIFY_CONSUMER_IDS_CHANGED = 36, 38, 40
LOCK_BATCH_MQ, UNLOCK_BATCH_MQ, REGISTER_BROKER, UNREGISTER_BROKER = 41, 42, 103, 104
GET_ROUTEINFO_BY_TOPIC, GET_BROKER_CLUSTER_INFO, GET_ALL_TOPIC_LIST = 105, 106, 206
SEND_MESSAGE_V2, SEND_BATCH_MESSAGE = 310, 320
# Response codes.
SUCCESS, SYSTEM_ERROR, NOT_SUPPORTED, NO_PERMISSION, TOPIC_NOT_EXIST = 0, 1, 3, 16, 17
PULL_NOT_FOUND, PULL_RETRY_IMMEDIATELY, PULL_OFFSET_MOVED, QUERY_NOT_FOUND = 19, 20, 21, 22
SUBSCRIPTION_NOT_EXIST = 24

KINDS = pytest.mark.parametrize("kind", [JSON, ROCKETMQ], ids=["json", "rocketmq"])


def props(**kv: str) -> str:
    return "".join(f"{k}\x01{v}\x02" for k, v in kv.items())


def send_v2(w: Wire, topic: str, body: bytes, queue_id: int = 0, **p: str):
    fields = {
        "a": "conf-producer", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
        "g": str(int(time.time() * 1000)), "h": "0", "i": props(**p), "j": "0", "k": "false", "m": "false",
    }  # fmt: skip
    return w.call(SEND_MESSAGE_V2, fields, body)


def pull(
    w: Wire,
    topic: str,
    queue_id: int,
    offset: int,
    sub: str = "*",
    sys_flag: int = 0x4,
    suspend_ms: int = 1000,
    group: str = "conf-group",
):
    return w.call(
        PULL_MESSAGE,
        {"consumerGroup": group, "topic": topic, "queueId": str(queue_id), "queueOffset": str(offset),
         "maxMsgNums": "32", "sysFlag": str(sys_flag), "commitOffset": "0",
         "suspendTimeoutMillis": str(suspend_ms), "subscription": sub, "subVersion": "0",
         "expressionType": "TAG"},
    )  # fmt: skip


def create_topic(w: Wire, topic: str, queues: int = 4, perm: int = 6):
    return w.call(
        UPDATE_AND_CREATE_TOPIC,
        {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(queues), "writeQueueNums": str(queues),
         "perm": str(perm), "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"},
    )  # fmt: skip


def wait_route(ns: Wire, topic: str, timeout: float = 10) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = ns.call(GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        if r.code == SUCCESS:
            return json.loads(r.body)
        time.sleep(0.05)
    raise AssertionError(f"no route for {topic}")


@KINDS
def test_name_server_requests(shared_dev, kind):
    with Wire(shared_dev.namesrv, kind) as ns:
        route = wait_route(ns, "TBW102")
        assert route["brokerDatas"][0]["brokerAddrs"] == {"0": shared_dev.broker}
        assert route["queueDatas"][0]["perm"] == 7, "template topic: inherit | read | write"
        missing = ns.call(GET_ROUTEINFO_BY_TOPIC, {"topic": f"Missing{kind}"})
        assert missing.code == TOPIC_NOT_EXIST and "Missing" in (missing.remark or "")
        assert missing.serialize_type == kind, "the response uses the request's serialisation"
        cluster = json.loads(ns.call(GET_BROKER_CLUSTER_INFO).body)
        assert cluster["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}
        assert cluster["brokerAddrTable"]["broker-a"]["brokerAddrs"]["0"] == shared_dev.broker
        assert "TBW102" in json.loads(ns.call(GET_ALL_TOPIC_LIST).body)["topicList"]

        # A broker registering over this connection: its topics get routes; unregistering
        # or closing the connection removes them.
        fake = f"fake-{kind}"
        body = json.dumps({"topicConfigSerializeWrapper": {"topicConfigTable": {f"FakeTopic{kind}": {
            "topicName": f"FakeTopic{kind}", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6,
            "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False}},
            "dataVersion": {"counter": 1, "timestamp": 1}}, "filterServerList": []}).encode()  # fmt: skip
        reg = {"brokerName": fake, "brokerAddr": f"127.0.0.1:{9 + kind}", "clusterName": "FakeCluster",
               "haServerAddr": "127.0.0.1:1", "brokerId": "0", "compressed": "false",
               "bodyCrc32": str(__import__("zlib").crc32(body) & 0x7FFFFFFF)}  # fmt: skip
        r = ns.call(REGISTER_BROKER, reg, body)
        assert r.code == SUCCESS and "masterAddr" in r.fields
        route = wait_route(ns, f"FakeTopic{kind}")
        assert route["queueDatas"] == [
            {
                "brokerName": fake,
                "readQueueNums": 2,
                "writeQueueNums": 2,
                "perm": 6,
                "topicSysFlag": 0,
            }
        ]
        bad_crc = ns.call(REGISTER_BROKER, dict(reg, bodyCrc32="12345"), body)
        assert bad_crc.code == SYSTEM_ERROR
        unreg = {k: reg[k] for k in ("brokerName", "brokerAddr", "clusterName", "brokerId")}
        assert ns.call(UNREGISTER_BROKER, unreg).code == SUCCESS
        assert (
            ns.call(GET_ROUTEINFO_BY_TOPIC, {"topic": f"FakeTopic{kind}"}).code == TOPIC_NOT_EXIST
        )
        assert ns.call(9999).code == NOT_SUPPORTED


@KINDS
def test_topic_send_pull_and_offsets(shared_dev, kind):
    topic = f"ConfTopic{kind}"
    with Wire(shared_dev.broker, kind) as w:
        assert create_topic(w, topic).code == SUCCESS
        configs = json.loads(w.call(GET_ALL_TOPIC_CONFIG).body)["topicConfigTable"]
        assert configs[topic]["readQueueNums"] == 4
        before = int(time.time() * 1000) - 5
        sent = []
        for i in range(6):
            r = send_v2(
                w,
                topic,
                f"v2-{i}".encode(),
                queue_id=1,
                TAGS="TagB" if i % 2 else "TagA",
                KEYS=f"conf-key-{i}",
            )
            assert r.code == SUCCESS and r.is_response and r.serialize_type == kind
            assert len(r.fields["msgId"]) == 32 and r.fields["queueId"] == "1"
            assert int(r.fields["queueOffset"]) == i
            sent.append(r.fields["msgId"])
        v1 = w.call(SEND_MESSAGE, {
            "producerGroup": "conf-producer", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
            "queueId": "1", "sysFlag": "0", "bornTimestamp": "1", "flag": "7", "properties": props(TAGS="TagA")}, b"v1")  # fmt: skip
        assert v1.code == SUCCESS and v1.fields["queueOffset"] == "6"
        batch = w.call(SEND_BATCH_MESSAGE, {
            "a": "conf-producer", "b": topic, "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1", "h": "0",
            "i": "", "j": "0", "m": "true"}, batch_body([(0, b"b0", {"TAGS": "TagA"}), (0, b"b1", {"TAGS": "TagB"})]))  # fmt: skip
        assert batch.code == SUCCESS and batch.fields["queueOffset"] == "7"
        assert len(batch.fields["msgId"].split(",")) == 2

        got = pull(w, topic, 1, 0)
        assert got.code == SUCCESS
        assert {"nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId"} <= set(
            got.fields
        )
        assert (
            got.fields["nextBeginOffset"],
            got.fields["minOffset"],
            got.fields["maxOffset"],
        ) == ("9", "0", "9")
        records = parse_records(got.body)
        assert [r["body"] for r in records] == [f"v2-{i}".encode() for i in range(6)] + [
            b"v1",
            b"b0",
            b"b1",
        ]
        assert [r["queue_offset"] for r in records] == list(range(9))
        assert records[6]["flag"] == 7 and records[0]["props"]["KEYS"] == "conf-key-0"
        only_b = parse_records(pull(w, topic, 1, 0, sub="TagB").body)
        assert [r["props"]["TAGS"] for r in only_b] == ["TagB"] * 4
        assert pull(w, topic, 1, 9).code == PULL_NOT_FOUND
        assert pull(w, topic, 1, 50).code == PULL_OFFSET_MOVED
        no_sub = pull(w, topic, 1, 0, sys_flag=0, group=f"unknown-{kind}")
        assert no_sub.code == SUBSCRIPTION_NOT_EXIST

        q = {"topic": topic, "queueId": "1"}
        assert w.call(GET_MAX_OFFSET, q).fields["offset"] == "9"
        assert w.call(GET_MIN_OFFSET, q).fields["offset"] == "0"
        earliest = int(w.call(GET_EARLIEST_MSG_STORETIME, q).fields["timestamp"])
        assert earliest >= before
        assert (
            w.call(SEARCH_OFFSET_BY_TIMESTAMP, dict(q, timestamp=str(before))).fields["offset"]
            == "0"
        )
        assert (
            w.call(SEARCH_OFFSET_BY_TIMESTAMP, dict(q, timestamp=str(2**50))).fields["offset"]
            == "9"
        )
        group = {"consumerGroup": f"g-{kind}", "topic": topic, "queueId": "1"}
        assert w.call(QUERY_CONSUMER_OFFSET, group).fields["offset"] == "0"
        assert w.call(UPDATE_CONSUMER_OFFSET, dict(group, commitOffset="4")).code == SUCCESS
        assert w.call(QUERY_CONSUMER_OFFSET, group).fields["offset"] == "4"
        # Oneway: no answer; the next answer read is the next request's.
        assert w.request(UPDATE_CONSUMER_OFFSET, dict(group, commitOffset="5"), oneway=True) is None
        assert w.call(QUERY_CONSUMER_OFFSET, group).fields["offset"] == "5"

        found = w.call(QUERY_MESSAGE, {"topic": topic, "key": "conf-key-3", "maxNum": "10",
                                       "beginTimestamp": "0", "endTimestamp": str(2**62)})  # fmt: skip
        assert found.code == SUCCESS
        assert [r["body"] for r in parse_records(found.body)] == [b"v2-3"]
        nothing = w.call(
            QUERY_MESSAGE,
            {
                "topic": topic,
                "key": "none",
                "maxNum": "10",
                "beginTimestamp": "0",
                "endTimestamp": "1",
            },
        )
        assert nothing.code == QUERY_NOT_FOUND
        offset = int(sent[2][-16:], 16)
        viewed = w.call(VIEW_MESSAGE_BY_ID, {"offset": str(offset)})
        assert viewed.code == SUCCESS and parse_records(viewed.body)[0]["body"] == b"v2-2"


@KINDS
def test_clients_locks_and_send_back(shared_dev, kind):
    group = f"conf-consumers-{kind}"
    topic = f"BackTopic{kind}"

    def heartbeat(w: Wire, client: str) -> None:
        hb = {"clientID": client, "producerDataSet": [], "consumerDataSet": [{
            "groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
            "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": False,
            "subscriptionDataSet": [{"classFilterMode": False, "topic": topic, "subString": "TagA",
                                     "tagsSet": ["TagA"], "codeSet": [java_hash("TagA")], "subVersion": 1,
                                     "expressionType": "TAG"}]}]}  # fmt: skip
        assert w.call(HEART_BEAT, None, json.dumps(hb).encode()).code == SUCCESS

    with Wire(shared_dev.broker, kind) as a, Wire(shared_dev.broker, kind) as b:
        heartbeat(a, "client-a")
        ids = json.loads(a.call(GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group}).body)[
            "consumerIdList"
        ]
        assert ids == ["client-a"]
        heartbeat(b, "client-b")
        # The broker tells the other member about the change (a oneway request to the client).
        deadline = time.time() + 5
        while not a.inbox and time.time() < deadline:
            a.sock.settimeout(0.2)
            with contextlib.suppress(TimeoutError):
                a.inbox.append(a.read_frame())
        a.sock.settimeout(10)
        notify = next(f for f in a.inbox if f.code == NOTIFY_CONSUMER_IDS_CHANGED)
        assert (
            notify.fields["consumerGroup"] == group
            and notify.flag & FLAG_ONEWAY
            and not notify.flag & FLAG_RESPONSE
        )
        ids = json.loads(a.call(GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group}).body)[
            "consumerIdList"
        ]
        assert ids == ["client-a", "client-b"]
        # Pull without a subscription in the request uses the heartbeat's (TagA only).
        send_v2(a, topic, b"a-msg", TAGS="TagA")
        send_v2(a, topic, b"b-msg", TAGS="TagB")
        got = parse_records(pull(a, topic, 0, 0, sys_flag=0, group=group).body)
        assert [r["body"] for r in got] == [b"a-msg"]

        mqs = [{"topic": topic, "brokerName": "broker-a", "queueId": i} for i in range(2)]

        def lock(w: Wire, client: str) -> list[dict]:
            body = json.dumps({"consumerGroup": group, "clientId": client, "mqSet": mqs}).encode()
            return json.loads(w.call(LOCK_BATCH_MQ, None, body).body)["lockOKMQSet"]

        assert sorted(m["queueId"] for m in lock(a, "client-a")) == [0, 1]
        assert lock(b, "client-b") == []
        assert (
            a.call(
                UNLOCK_BATCH_MQ,
                None,
                json.dumps(
                    {"consumerGroup": group, "clientId": "client-a", "mqSet": mqs[:1]}
                ).encode(),
            ).code
            == SUCCESS
        )
        assert [m["queueId"] for m in lock(b, "client-b")] == [0]

        # Send-back: to %RETRY%group with the original topic and id kept; then the DLQ.
        original = got[0]
        back = {"offset": str(original["phys"]), "group": group, "delayLevel": "0",
                "originMsgId": "", "originTopic": topic, "unitMode": "false", "maxReconsumeTimes": "1"}  # fmt: skip
        assert a.call(CONSUMER_SEND_MSG_BACK, back).code == SUCCESS
        retry = f"%RETRY%{group}"
        deadline = time.time() + 15
        while (
            time.time() < deadline
            and a.call(GET_MAX_OFFSET, {"topic": retry, "queueId": "0"}).fields.get("offset") == "0"
        ):
            time.sleep(0.1)
        again = pull(a, retry, 0, 0, group=group)
        assert again.code == SUCCESS, again
        retried = parse_records(again.body)[0]
        assert retried["body"] == b"a-msg" and retried["reconsume"] == 1
        assert retried["props"]["RETRY_TOPIC"] == topic and "ORIGIN_MESSAGE_ID" in retried["props"]
        back2 = dict(back, offset=str(retried["phys"]))
        assert a.call(CONSUMER_SEND_MSG_BACK, back2).code == SUCCESS
        dlq = {"topic": f"%DLQ%{group}", "queueId": "0"}
        assert a.call(GET_MAX_OFFSET, dlq).fields["offset"] == "1", (
            "reconsumed maxReconsumeTimes times: DLQ"
        )
        dead = pull(a, f"%DLQ%{group}", 0, 0, group=group)
        assert dead.code == SUCCESS, "DLQ topics are readable, as in RocketMQ 4.9.4 and later"
        assert parse_records(dead.body)[0]["body"] == b"a-msg"

        assert (
            a.call(UNREGISTER_CLIENT, {"clientID": "client-b", "consumerGroup": group}).code
            == SUCCESS
        )
        ids = json.loads(a.call(GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group}).body)[
            "consumerIdList"
        ]
        assert ids == ["client-a"]


def test_binary_header_bytes_exact(shared_dev):
    """A ROCKETMQ-serialised request built byte by byte gets a byte-exact binary answer."""
    with Wire(shared_dev.broker, ROCKETMQ) as w:
        ext = b"".join(struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v
                       for k, v in [(b"topic", b"TBW102"), (b"queueId", b"0")])  # fmt: skip
        header = (
            struct.pack(">hBhii", GET_MAX_OFFSET, 0, 413, 77, 0)
            + struct.pack(">i", 0)
            + struct.pack(">i", len(ext))
            + ext
        )
        w.send_raw(struct.pack(">ii", 4 + len(header), (1 << 24) | len(header)) + header)
        length, mark = struct.unpack(">ii", w._read_exact(8))
        assert mark >> 24 == 1
        raw = w._read_exact(mark & 0xFFFFFF)
        code, _lang, _version, opaque, flag = struct.unpack_from(">hBhii", raw, 0)
        assert (code, opaque, flag) == (SUCCESS, 77, FLAG_RESPONSE)
        assert length == 4 + len(raw)
