"""The files a broker writes, read back by a parser written here from DESIGN.md ("Store
files") — not the project's decoder — so a layout mistake cannot hide behind a symmetric bug."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

from helpers import Collector, start_consumer
from rocketpy import ConsumeFromWhere, Message, Producer

MAGIC = 0xDAA320A7
BLANK = 0xCBD43194


def parse_commitlog(directory: Path) -> list[dict]:
    """Every message record of every CommitLog file, in order."""
    records = []
    for path in sorted(directory.iterdir()):
        assert len(path.name) == 20 and path.name.isdigit(), path.name
        base = int(path.name)
        data = path.read_bytes()
        pos = 0
        while pos + 8 <= len(data):
            total, magic = struct.unpack_from(">iI", data, pos)
            if total == 0 and magic == 0:
                break
            if magic == BLANK:
                break
            assert magic == MAGIC, f"bad magic {magic:#x} at {base + pos}"
            (body_crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts) = struct.unpack_from(
                ">iiiqqiq", data, pos + 8
            )
            born_ip = ".".join(str(b) for b in data[pos + 48 : pos + 52])
            (born_port, store_ts) = struct.unpack_from(">iq", data, pos + 52)
            store_ip = ".".join(str(b) for b in data[pos + 64 : pos + 68])
            (store_port, reconsume, prepared, body_len) = struct.unpack_from(
                ">iiqi", data, pos + 68
            )
            p = pos + 88
            body = data[p : p + body_len]
            p += body_len
            topic_len = data[p]
            topic = data[p + 1 : p + 1 + topic_len].decode()
            p += 1 + topic_len
            (prop_len,) = struct.unpack_from(">h", data, p)
            props_raw = data[p + 2 : p + 2 + prop_len].decode()
            p += 2 + prop_len
            assert p - pos == total == 91 + body_len + topic_len + prop_len
            assert body_crc == zlib.crc32(body) & 0x7FFFFFFF
            assert phys == base + pos
            props = dict(item.split("\x01", 1) for item in props_raw.split("\x02") if item)
            records.append(
                dict(
                    topic=topic, queue_id=queue_id, flag=flag, queue_offset=queue_offset, phys=phys,
                    size=total, sys_flag=sys_flag, born_ts=born_ts, born=f"{born_ip}:{born_port}",
                    store_ts=store_ts, store=f"{store_ip}:{store_port}", reconsume=reconsume,
                    prepared=prepared, body=body, props=props,
                )
            )  # fmt: skip
            pos += total
    return records


def parse_consume_queue(directory: Path) -> list[tuple[int, int, int]]:
    units = []
    for path in sorted(directory.iterdir()):
        data = path.read_bytes()
        for pos in range(0, len(data) - 19, 20):
            offset, size, tags_code = struct.unpack_from(">qiq", data, pos)
            if offset == 0 and size == 0:
                break
            units.append((offset, size, tags_code))
    return units


def java_hash(s: str) -> int:
    h = 0
    for unit in struct.unpack(f">{len(s.encode('utf-16-be')) // 2}H", s.encode("utf-16-be")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


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
