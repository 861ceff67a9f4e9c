"""Compatibility with RocketMQ 4.x store files both ways: files written here by hand from
docs/formats.md open and read correctly, and files the store writes parse with the hand-written
reader (CommitLog, ConsumeQueue and IndexFile)."""

from __future__ import annotations

import time
from pathlib import Path

from rmq_format import (
    encode_consume_queue,
    encode_record,
    index_lookup,
    java_hash,
    parse_commitlog,
    parse_consume_queue,
)

from rocketpy.store import MessageStore

FILE = 64 * 1024
CQ_UNITS = 100


def write_store(root: Path, n: int) -> list[dict]:
    """A RocketMQ-layout store holding `n` messages over two queues and several files."""
    (root / "commitlog").mkdir(parents=True)
    now = int(time.time() * 1000) - 60_000
    files: list[bytearray] = [bytearray()]
    units: dict[int, list[tuple[int, int, int]]] = {0: [], 1: []}
    written = []
    for i in range(n):
        q = i % 2
        body = f"hand-written-{i}-".encode() + bytes(i % 400)
        props = {"TAGS": f"T{i % 3}", "KEYS": f"key{i}", "UNIQ_KEY": f"UNIQ{i:028d}"}
        phys = (len(files) - 1) * FILE + len(files[-1])
        rec = encode_record(topic="Hand", queue_id=q, queue_offset=len(units[q]), phys=phys, body=body,
                            props=props, store_ts=now + i, born_ts=now + i - 5)  # fmt: skip
        if len(files[-1]) + len(rec) + 8 > FILE:
            pad = FILE - len(files[-1])
            files[-1] += pad.to_bytes(4, "big") + (0xCBD43194).to_bytes(4, "big") + bytes(pad - 8)
            files.append(bytearray())
            phys = (len(files) - 1) * FILE
            rec = encode_record(topic="Hand", queue_id=q, queue_offset=len(units[q]), phys=phys, body=body,
                                props=props, store_ts=now + i, born_ts=now + i - 5)  # fmt: skip
        files[-1] += rec
        units[q].append((phys, len(rec), java_hash(props["TAGS"])))
        written.append({"q": q, "offset": len(units[q]) - 1, "body": body, "props": props})
    for k, data in enumerate(files):
        (root / "commitlog" / f"{k * FILE:020d}").write_bytes(bytes(data) + bytes(FILE - len(data)))
    for q, us in units.items():
        d = root / "consumequeue" / "Hand" / str(q)
        d.mkdir(parents=True)
        for k, data in enumerate(encode_consume_queue(us, CQ_UNITS)):
            (d / f"{k * CQ_UNITS * 20:020d}").write_bytes(data)
    return written


def test_hand_written_store_opens_and_reads(tmp_path):
    written = write_store(tmp_path, 500)
    assert len(list((tmp_path / "commitlog").iterdir())) > 2
    with MessageStore(
        tmp_path, mapped_file_size_commit_log=FILE, mapped_file_size_consume_queue=CQ_UNITS * 20
    ) as store:
        for q in (0, 1):
            assert store.max_offset("Hand", q) == 250
            expected = [w for w in written if w["q"] == q]
            offset, got = 0, []
            while offset < 250:
                r = store.get("Hand", q, offset, 32)
                got.extend(r.messages)
                offset = r.next_begin_offset
            assert [m.body for m in got] == [w["body"] for w in expected]
            assert [m.keys for m in got] == [w["props"]["KEYS"] for w in expected]
            assert [m.tags for m in got] == [w["props"]["TAGS"] for w in expected]
            assert got[0].born_host == "10.0.0.1:40000" and got[0].store_host == "10.0.0.2:10911"
        only_t1 = store.get("Hand", 0, 0, 32, tags=["T1"]).messages
        assert {m.tags for m in only_t1} == {"T1"}
        # Appending continues the hand-written queues and log.
        r = store.put("Hand", b"appended", queue_id=1)
        assert r.queue_offset == 250
        # No index files were written by hand: the store builds them from the log.
        assert [m.body for m in store.query_by_key("Hand", "key77")] == [written[77]["body"]]


def test_store_written_files_parse_by_hand(tmp_path):
    with MessageStore(
        tmp_path, mapped_file_size_commit_log=FILE, max_hash_slot_num=97, max_index_num=4000
    ) as store:
        results = [
            store.put("Own", f"own-{i}".encode() * 20, queue_id=i % 3, tags="X", keys=[f"key{i}"])
            for i in range(300)
        ]
        store.query_by_key("Own", "key0")  # waits for the index to catch up
    records = [r for r in parse_commitlog(tmp_path / "commitlog") if r["topic"] == "Own"]
    assert [r["body"] for r in records] == [f"own-{i}".encode() * 20 for i in range(300)]
    for rec, res in zip(records, results, strict=True):
        assert (rec["queue_id"], rec["queue_offset"], rec["phys"]) == (
            res.queue_id,
            res.queue_offset,
            res.commit_log_offset,
        )
        assert rec["props"]["KEYS"] == f"key{records.index(rec)}"
    for q in range(3):
        units = parse_consume_queue(tmp_path / "consumequeue" / "Own" / str(q))
        assert [u[0] for u in units] == [r.commit_log_offset for r in results if r.queue_id == q]
        assert all(u[2] == java_hash("X") for u in units)
    index_files = sorted((tmp_path / "index").iterdir())
    assert index_files and all(len(f.name) == 17 and f.name.isdigit() for f in index_files)
    assert index_files[0].stat().st_size == 40 + 97 * 4 + 4000 * 20
    assert index_lookup(index_files[-1], 97, "Own#key42") == [results[42].commit_log_offset]
    assert index_lookup(index_files[-1], 97, f"Own#{results[9].msg_id}") == [
        results[9].commit_log_offset
    ]
