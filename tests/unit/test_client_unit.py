"""Client algorithms that need no server: allocation strategies, the latency table, the hash
selector's compatibility with Java."""

from __future__ import annotations

import pytest

from rocketpy import (
    Message,
    MessageQueue,
    allocate_averagely,
    allocate_averagely_by_circle,
    by_config,
    by_machine_room,
    consistent_hash,
    select_by_hash,
)
from rocketpy.client.fault import not_available_ms

MQS = [MessageQueue("T", f"broker-{b}", q) for b in "ab" for q in range(4)]
CIDS = ["10.0.0.1@1", "10.0.0.2@1", "10.0.0.3@1"]


@pytest.mark.parametrize(
    "strategy", [allocate_averagely, allocate_averagely_by_circle, consistent_hash()]
)
def test_strategies_partition_the_queues(strategy):
    shares = [strategy("g", cid, MQS, CIDS) for cid in CIDS]
    flat = [mq for share in shares for mq in share]
    assert sorted(flat) == sorted(MQS), "every queue exactly once"
    assert strategy("g", "stranger", MQS, CIDS) == []


def test_averagely_matches_rocketmq():
    shares = [allocate_averagely("g", cid, MQS, CIDS) for cid in CIDS]
    assert [len(s) for s in shares] == [3, 3, 2]
    assert shares[0] == MQS[0:3] and shares[2] == MQS[6:8]
    assert allocate_averagely_by_circle("g", CIDS[1], MQS, CIDS) == [MQS[1], MQS[4], MQS[7]]


def test_consistent_hash_moves_few_queues():
    big = [MessageQueue("T", "b", q) for q in range(64)]
    cids = [f"c{i}" for i in range(4)]
    before = {mq: cid for cid in cids for mq in consistent_hash()("g", cid, big, cids)}
    after = {mq: cid for cid in cids[:3] for mq in consistent_hash()("g", cid, big, cids[:3])}
    moved = sum(1 for mq in big if before[mq] != after[mq])
    assert moved == sum(1 for mq in big if before[mq] == "c3"), "only the leaver's queues move"


def test_by_config_and_machine_room():
    assert by_config([MQS[2]])("g", CIDS[0], MQS, CIDS) == [MQS[2]]
    rooms = [
        MessageQueue("T", f"{room}@b{i}", q)
        for room in ("east", "west")
        for i in range(2)
        for q in range(2)
    ]
    east = by_machine_room(["east"])
    shares = [east("g", cid, rooms, CIDS[:2]) for cid in CIDS[:2]]
    assert sorted(mq for s in shares for mq in s) == sorted(
        mq for mq in rooms if mq.broker_name.startswith("east")
    )


def test_latency_table():
    assert [not_available_ms(x) for x in (10, 60, 560, 1500, 2500, 3500, 20000)] == [
        0,
        0,
        30000,
        60000,
        120000,
        180000,
        600000,
    ]


def test_select_by_hash_matches_java():
    mqs = [MessageQueue("T", "b", q) for q in range(4)]
    m = Message("T", b"x")
    assert select_by_hash(mqs, m, "abc") == mqs[96354 % 4]  # "abc".hashCode() == 96354
    assert select_by_hash(mqs, m, "polygenelubricants") == mqs[(2**31) % 4]  # Integer.MIN_VALUE
    assert select_by_hash(mqs, m, -7) == mqs[3]  # Java: abs(-7 % 4) == 3


def test_subscription_expressions_are_sent_without_blanks():
    from rocketpy._native import java_string_hash
    from rocketpy.consumer.base import Subscription

    sub = Subscription.parse("T", " TagA || TagB ||TagA ")
    assert sub.expression == "TagA||TagB", "rocketmq-rust's broker hashes untrimmed tags"
    assert sub.tags == frozenset({"TagA", "TagB"})
    assert sub.data()["codeSet"] == [java_string_hash("TagA"), java_string_hash("TagB")]
    assert Subscription.parse("T", " ").expression == "*"


@pytest.mark.parametrize(
    "expression",
    ["a > 5", "TagA && TagB", "TagA ||", "|| TagA", "TagA | TagB", "region IN ('eu')",
     "TagA AND TagB", "NOT TagA", "a = 1", "||"],
)  # fmt: skip
def test_expressions_that_cannot_be_tags_are_refused_at_subscribe(expression):
    from rocketpy import ClientError, PushConsumer
    from rocketpy.consumer.base import Subscription

    with pytest.raises(ClientError, match=r"is not a tag expression.*MessageSelector.by_sql"):
        Subscription.parse("T", expression)
    consumer = PushConsumer("refusing-group", "127.0.0.1:9876")
    with pytest.raises(ClientError, match="is not a tag expression"):
        consumer.subscribe("T", expression)
    assert consumer.subscribed_topics() == set(), "nothing half-subscribed"


def test_selectors_by_tag_and_by_sql():
    from rocketpy import ClientError, MessageSelector, PushConsumer
    from rocketpy.consumer.base import Subscription

    sql = Subscription.parse("T", MessageSelector.by_sql(" a > 5 AND TAGS = 'B' "))
    assert (sql.expression, sql.type, sql.tags) == ("a > 5 AND TAGS = 'B'", "SQL92", frozenset())
    assert sql.data()["expressionType"] == "SQL92" and sql.data()["codeSet"] == []
    tags = Subscription.parse("T", MessageSelector.by_tag("A || B"))
    assert (tags.expression, tags.type) == ("A||B", "TAG")
    with pytest.raises(ClientError, match=r"not an SQL92 filter.*character 5"):
        MessageSelector.by_sql("a > ")
    with pytest.raises(ClientError, match="cannot be empty"):
        MessageSelector.by_sql(" ")
    with pytest.raises(ClientError, match=r"MessageSelector\.by_sql"):
        MessageSelector.by_tag("a > 5")
    # A selector built without its factory is checked at subscribe all the same.
    consumer = PushConsumer("selector-group", "127.0.0.1:9876")
    with pytest.raises(ClientError, match="not an SQL92 filter"):
        consumer.subscribe("T", MessageSelector("a >", "SQL92"))
    consumer.subscribe("T", MessageSelector.by_sql("a IN ('x', 'y')"))
    assert consumer.subscribed_topics() == {"T"}


def test_a_callback_given_to_subscribe_names_register_listener():
    from rocketpy import PushConsumer

    consumer = PushConsumer("callback-group", "127.0.0.1:9876")
    with pytest.raises(TypeError, match="register_listener"):
        consumer.subscribe("T", lambda msg: None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not int"):
        consumer.subscribe("T", 5)  # type: ignore[arg-type]
    assert consumer.subscribed_topics() == set()


def test_tags_with_blanks_and_single_keywords_stay_tags():
    from rocketpy.consumer.base import Subscription

    assert Subscription.parse("T", "Order Created || IN").tags == {"Order Created", "IN"}
    assert Subscription.parse("T", "%RETRY%_x || a.b-c:d").tags == {"%RETRY%_x", "a.b-c:d"}


def test_process_queue_keeps_offsets_in_order_and_commits_the_smallest_held(tmp_path):
    from rocketpy.consumer.process_queue import ProcessQueue
    from rocketpy.store import MessageStore

    with MessageStore(tmp_path / "s") as store:
        for i in range(6):
            store.put("PQ", b"x" * (i + 1))
        msgs = store.get("PQ", queue_id=0, offset=0, max_nums=6).messages
    pq = ProcessQueue()
    assert pq.remove(msgs[:1]) == -1, "nothing was ever held"
    pq.put(msgs[:4])
    pq.put(msgs[2:6])  # offsets held already are skipped
    assert (pq.count, pq.pending, pq.size, pq.max_offset, pq.span()) == (6, 6, 21, 5, 5)
    # Consumed out of order: the offset to commit is the smallest still held.
    assert pq.remove([msgs[1], msgs[3]]) == 0
    assert pq.remove([msgs[0]]) == 2
    assert pq.remove([msgs[2], msgs[4], msgs[5]]) == 6
    assert (pq.count, pq.size, pq.span()) == (0, 0, 0)
    # Orderly: taken messages leave the waiting set; commit gives one past the largest.
    pq = ProcessQueue()
    pq.put(msgs)
    taken = pq.take(4)
    assert [m.queue_offset for m in taken] == [0, 1, 2, 3]
    assert (pq.pending, pq.count) == (2, 6)
    pq.consume_again(taken[2:])
    assert (pq.pending, pq.count) == (4, 6)
    assert [m.queue_offset for m in pq.take(2)] == [2, 3]
    assert pq.commit() == 4 and pq.commit() == -1
    assert (pq.count, pq.size) == (2, 11)
    with pytest.raises(TypeError):
        pq.put(["not a message"])  # type: ignore[list-item]


def test_message_fields_properties_and_pickling():
    import copy
    import pickle

    m = Message("T", "hé", tags="A", keys=["k1", "k2"], properties={"x": "1"}, flag=3)
    assert (m.topic, m.body, m.flag, m.tags, m.keys) == ("T", "hé".encode(), 3, "A", "k1 k2")
    assert m.properties == {"x": "1", "TAGS": "A", "KEYS": "k1 k2"}
    m.delay_level = 2
    assert m.properties["DELAY"] == "2" and m.delay_level == 2
    m.delay_level = 0
    m.tags = None
    assert "DELAY" not in m.properties and m.tags is None
    m.properties["y"] = "2"  # the dict is the message's own
    assert m.properties["y"] == "2"
    for other in (pickle.loads(pickle.dumps(m)), copy.copy(m)):
        assert (other.topic, other.body, other.flag) == (m.topic, m.body, m.flag)
        assert other.properties == m.properties
    assert (
        repr(Message("T", b"ab", tags="t"))
        == "Message(topic='T', tags='t', keys=None, body=2 bytes)"
    )
    assert Message("T", bytearray(b"ab")).body == b"ab"
    assert Message("T", memoryview(b"cd")).body == b"cd"
    assert Message("T", b"x", properties=[("a", "b")]).properties == {"a": "b"}
    assert Message("T", b"x").properties == {} and Message("T", b"x").delay_level == 0
    with pytest.raises(TypeError):
        Message(None, b"x")  # type: ignore[arg-type]


def test_server_bodies_beyond_the_bounds_are_corrupt_data_not_recursion():
    from rocketpy._util import json_body
    from rocketpy.errors import CorruptDataError

    deep = b"[" * 100_000 + b"]" * 100_000
    nested_keys = b"{" * 40 + b"{}" + b":1}" * 40
    for body in (deep, nested_keys, b"{" * 1_000_000):
        with pytest.raises(CorruptDataError):
            json_body(body, "route")
    assert json_body(b'{"brokerAddrs":{0:"a:1"}}', "route") == {"brokerAddrs": {"0": "a:1"}}


def test_local_offsets_fall_back_to_their_backup_and_keep_damaged_files(tmp_path):
    from rocketpy import MessageQueue
    from rocketpy.consumer.offset_store import LocalFileOffsetStore

    mq = MessageQueue("T", "b", 0)
    store = LocalFileOffsetStore(tmp_path, "c@1", "g")
    for offset in (5, 9):
        store.update(mq, offset, increase_only=False)
        store.persist_all({mq})
    store.path.write_text('{"offsetTable": [{"topic"')  # torn
    again = LocalFileOffsetStore(tmp_path, "c@1", "g")
    assert again.read_store(mq) == 5, "the backup's offset"
    kept = list(store.path.parent.glob("offsets.json.damaged-*"))
    assert [p.read_text() for p in kept] == ['{"offsetTable": [{"topic"']
    again.persist_all({mq})
    # The damaged file did not become the backup.
    assert '"offset": 5' in store.path.with_name("offsets.json.bak").read_text()
    assert LocalFileOffsetStore(tmp_path, "c@1", "g").read_store(mq) == 5
