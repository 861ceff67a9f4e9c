"""The files a broker writes, read back by a parser written here from the store file formats
(docs/formats.md, sections 10 to 17) — not the project's decoder — so a layout mistake cannot
hide behind a symmetric bug."""

from __future__ import annotations

import json
import struct

from rmq_format import java_hash, parse_commitlog, parse_consume_queue

from helpers import Collector, start_consumer
from rocketpy import ConsumeFromWhere, Message, Producer


def test_files_on_disk_match_rocketmq_layout(dev_factory, tmp_path):
    store = tmp_path / "store"
    dev = dev_factory(store, "--set", "mapedFileSizeCommitLog=65536").start()
    sent = {}
    with Producer("files-producer", dev.namesrv) as producer:
        for i in range(300):
            msg = Message(
                "FileTopic", bytes([i % 251]) * (100 + i * 7), tags=f"T{i % 4}", keys=[f"k{i}"]
            )
            r = producer.send(msg)
            sent[r.msg_id] = (msg, r)
    collector = Collector()
    consumer = start_consumer(
        "files-group",
        dev.namesrv,
        "FileTopic",
        collector,
        from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    collector.wait_for(300)
    consumer.shutdown()
    assert dev.stop() == 0

    files = sorted((store / "commitlog").iterdir())
    assert len(files) > 1, "64 KiB files must have rolled"
    assert [int(f.name) for f in files] == [i * 65536 for i in range(len(files))]
    records = [r for r in parse_commitlog(store / "commitlog") if r["topic"] == "FileTopic"]
    assert len(records) == 300
    for rec in records:
        msg, result = sent[rec["props"]["UNIQ_KEY"]]
        assert rec["body"] == msg.body
        assert rec["props"]["TAGS"] == msg.tags and rec["props"]["KEYS"] == msg.keys
        assert "WAIT" not in rec["props"] and rec["props"]["CLUSTER"] == "DefaultCluster"
        assert (rec["queue_id"], rec["queue_offset"]) == (
            result.message_queue.queue_id,
            result.queue_offset,
        )
        store_ip, store_port = rec["store"].split(":")
        expected_id = bytes(int(x) for x in store_ip.split(".")) + struct.pack(
            ">iq", int(store_port), rec["phys"]
        )
        assert result.offset_msg_id == expected_id.hex().upper()
        assert rec["born"].startswith("127.0.0.1:") and rec["store_ts"] >= rec["born_ts"] > 0

    by_phys = {r["phys"]: r for r in records}
    for queue_id in range(4):
        units = parse_consume_queue(store / "consumequeue" / "FileTopic" / str(queue_id))
        for index, (offset, size, tags_code) in enumerate(units):
            rec = by_phys[offset]
            assert (rec["queue_id"], rec["queue_offset"], rec["size"]) == (queue_id, index, size)
            assert tags_code == java_hash(rec["props"]["TAGS"])

    topics = json.loads((store / "config" / "topics.json").read_text())
    cfg = topics["topicConfigTable"]["FileTopic"]
    assert (cfg["topicName"], cfg["readQueueNums"], cfg["writeQueueNums"], cfg["perm"]) == (
        "FileTopic",
        4,
        4,
        6,
    )
    assert "TBW102" in topics["topicConfigTable"] and "dataVersion" in topics
    offsets = json.loads((store / "config" / "consumerOffset.json").read_text())["offsetTable"]
    committed = offsets["FileTopic@files-group"]
    assert sum(int(v) for v in committed.values()) == 300
    assert (store / "checkpoint").stat().st_size == 4096
    assert not (store / "abort").exists(), "clean shutdown removes abort"
