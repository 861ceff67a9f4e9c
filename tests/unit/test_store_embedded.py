"""The embedded store (``rocketpy.store.MessageStore``): the Rust store in-process."""

from __future__ import annotations

import time

import pytest

from rocketpy import Message, StoreLockedError
from rocketpy._native import InvalidArgumentError
from rocketpy.store import MessageStore

#: CommitLog file size where the test does not care (files are preallocated).
SMALL = 4 * 1024 * 1024


def test_put_get_offsets_and_zero_copy(tmp_path):
    with MessageStore(tmp_path, mapped_file_size_commit_log=64 * 1024) as store:
        results = [
            store.put("T", f"m{i}".encode() * 50, queue_id=i % 2, tags=f"t{i % 3}")
            for i in range(200)
        ]
        assert [r.queue_offset for r in results if r.queue_id == 0] == list(range(100))
        assert all(r.status == "PUT_OK" for r in results)
        got = store.get("T", 1, 0, max_nums=10)
        assert got.status == "FOUND" and got.min_offset == 0 and got.max_offset == 100
        assert [m.queue_offset for m in got.messages] == list(range(10))
        m = got.messages[3]
        view = m.body_view()
        assert isinstance(view, memoryview) and view.readonly
        assert bytes(view) == m.body == b"m7" * 50
        with pytest.raises(TypeError):
            view[0] = 1  # type: ignore[index]
        only = store.get("T", 0, 0, max_nums=32, tags=["t1"])
        assert {x.tags for x in only.messages} == {"t1"}
        assert store.get("T", 0, 100).status == "OFFSET_OVERFLOW_ONE"
        assert store.get("Missing", 0, 0).status == "NO_MATCHED_LOGIC_QUEUE"
        assert (store.min_offset("T", 0), store.max_offset("T", 0)) == (0, 100)
        assert ("T", 0) in store.topic_queues()


def test_batch_query_view_and_time(tmp_path):
    with MessageStore(
        tmp_path, flush_disk_type="SYNC_FLUSH", mapped_file_size_commit_log=SMALL
    ) as store:
        before = int(time.time() * 1000) - 1
        batch = store.put_batch([Message("B", f"b{i}", keys=[f"k{i}", "all"]) for i in range(20)])
        assert [r.queue_offset for r in batch] == list(range(20))
        found = store.query_by_key("B", "k7")
        assert [m.body for m in found] == [b"b7"]
        assert [m.body for m in store.query_by_key("B", batch[3].msg_id)] == [b"b3"], "by UNIQ_KEY"
        assert [m.body for m in store.query_by_key("B", "all", max_num=3)] == [
            b"b19",
            b"b18",
            b"b17",
        ]
        viewed = store.view_by_offset_msg_id(batch[5].offset_msg_id)
        assert viewed is not None and viewed.body == b"b5"
        assert store.offset_by_time("B", 0, before) == 0
        assert store.offset_by_time("B", 0, 2**62) == 20
        earliest = store.earliest_time("B", 0)
        assert earliest is not None and earliest >= before


def test_delay_level(tmp_path):
    with MessageStore(
        tmp_path, message_delay_level="1s 2s", mapped_file_size_commit_log=SMALL
    ) as store:
        r = store.put("D", b"later", delay_level=1, queue_id=3)
        assert r.queue_id == -1, "waits in the schedule topic"
        assert store.max_offset("D", 3) == 0
        deadline = time.time() + 10
        while store.max_offset("D", 3) == 0 and time.time() < deadline:
            time.sleep(0.05)
        got = store.get("D", 3, 0)
        assert [m.body for m in got.messages] == [b"later"]
        assert got.messages[0].get_property("DELAY") is None


def test_lock_bad_input_and_close(tmp_path):
    store = MessageStore(tmp_path, mapped_file_size_commit_log=SMALL)
    with pytest.raises(StoreLockedError):
        MessageStore(tmp_path, mapped_file_size_commit_log=SMALL)
    for topic in ["../x", "a/b", "", "x" * 200]:
        with pytest.raises(InvalidArgumentError):
            store.put(topic, b"x")
    assert not (tmp_path / "x").exists() and not (tmp_path.parent / "x").exists()
    with pytest.raises(InvalidArgumentError):
        store.put("T", b"x" * (4 * 1024 * 1024 + 1))
    store.put("T", b"ok")
    store.close()
    assert store.closed
    with pytest.raises(Exception, match="shut down"):
        store.put("T", b"late")
    with pytest.raises(Exception, match="unknown store setting"):
        MessageStore(tmp_path / "other", no_such_setting=1)
    with MessageStore(tmp_path, mapped_file_size_commit_log=SMALL) as again:
        assert again.max_offset("T", 0) == 1
