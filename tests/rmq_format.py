"""RocketMQ 4.x store files written and read by hand from docs/formats.md (sections 10 to 17): an
independent implementation, so the project's own encoder and decoder are checked against the
format and not against themselves. Integers are big-endian."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

MAGIC = 0xDAA320A7
BLANK = 0xCBD43194


def java_hash(s: str) -> int:
    """Java's String.hashCode (UTF-16 code units, wrapping 32-bit)."""
    h = 0
    data = s.encode("utf-16-be")
    for (unit,) in struct.iter_unpack(">H", data):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def encode_properties(props: dict[str, str]) -> bytes:
    return "".join(f"{k}\x01{v}\x02" for k, v in props.items()).encode()


def encode_record(
    *, topic: str, queue_id: int, queue_offset: int, phys: int, body: bytes, props: dict[str, str],
    store_ts: int, born_ts: int, flag: int = 0, sys_flag: int = 0, reconsume: int = 0,
    born=(b"\x0a\x00\x00\x01", 40000), store=(b"\x0a\x00\x00\x02", 10911),
) -> bytes:  # fmt: skip
    """One CommitLog record."""
    t = topic.encode()
    p = encode_properties(props)
    total = 91 + len(body) + len(t) + len(p)
    out = struct.pack(
        ">iIiiiqqiq",
        total,
        MAGIC,
        zlib.crc32(body) & 0x7FFFFFFF,
        queue_id,
        flag,
        queue_offset,
        phys,
        sys_flag,
        born_ts,
    )
    out += born[0] + struct.pack(">iq", born[1], store_ts) + store[0] + struct.pack(">i", store[1])
    out += (
        struct.pack(">iqi", reconsume, 0, len(body))
        + body
        + bytes([len(t)])
        + t
        + struct.pack(">h", len(p))
        + p
    )
    assert len(out) == total
    return out


def parse_record(data: bytes, pos: int) -> dict:
    """The message record at `pos` of `data` (checks sizes and the body CRC)."""
    total, magic = struct.unpack_from(">iI", data, pos)
    assert magic == MAGIC, f"bad magic {magic:#x}"
    (body_crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts) = struct.unpack_from(
        ">iiiqqiq", data, pos + 8
    )
    born_ip = ".".join(str(b) for b in data[pos + 48 : pos + 52])
    (born_port, store_ts) = struct.unpack_from(">iq", data, pos + 52)
    store_ip = ".".join(str(b) for b in data[pos + 64 : pos + 68])
    (store_port, reconsume, prepared, body_len) = struct.unpack_from(">iiqi", data, pos + 68)
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
    props = dict(item.split("\x01", 1) for item in props_raw.split("\x02") if item)
    return dict(
        topic=topic, queue_id=queue_id, flag=flag, queue_offset=queue_offset, phys=phys,
        size=total, sys_flag=sys_flag, born_ts=born_ts, born=f"{born_ip}:{born_port}",
        store_ts=store_ts, store=f"{store_ip}:{store_port}", reconsume=reconsume,
        prepared=prepared, body=body, props=props,
    )  # fmt: skip


def parse_records(data: bytes) -> list[dict]:
    """Concatenated records (a PULL_MESSAGE or QUERY_MESSAGE body)."""
    out, pos = [], 0
    while pos < len(data):
        rec = parse_record(data, pos)
        out.append(rec)
        pos += rec["size"]
    return out


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
            if (total == 0 and magic == 0) or magic == BLANK:
                break
            rec = parse_record(data, pos)
            assert rec["phys"] == base + pos
            records.append(rec)
            pos += total
    return records


def parse_consume_queue(directory: Path) -> list[tuple[int, int, int]]:
    """(commitLogOffset, size, tagsCode) units, in queue-offset order."""
    units = []
    for path in sorted(directory.iterdir()):
        data = path.read_bytes()
        for pos in range(0, len(data) - 19, 20):
            offset, size, tags_code = struct.unpack_from(">qiq", data, pos)
            if offset == 0 and size == 0:
                break
            units.append((offset, size, tags_code))
    return units


def encode_consume_queue(units: list[tuple[int, int, int]], file_units: int) -> list[bytes]:
    """Consume-queue files holding `units`, `file_units` per file (the last zero-padded)."""
    files = []
    for start in range(0, max(len(units), 1), file_units):
        chunk = b"".join(struct.pack(">qiq", *u) for u in units[start : start + file_units])
        files.append(chunk + b"\x00" * (file_units * 20 - len(chunk)))
    return files


def index_lookup(path: Path, slot_num: int, key: str) -> list[int]:
    """Physical offsets for `key` (``topic#key``) in one index file, newest first."""
    data = path.read_bytes()
    _begin_ts, _end_ts, _bpo, _epo, _slots_used, count = struct.unpack_from(">qqqqii", data, 0)
    h = abs(java_hash(key)) if java_hash(key) != -(1 << 31) else 0
    slot = struct.unpack_from(">i", data, 40 + (h % slot_num) * 4)[0]
    out = []
    while 0 < slot < count:
        pos = 40 + slot_num * 4 + slot * 20
        key_hash, phys, _diff, prev = struct.unpack_from(">iqii", data, pos)
        if key_hash == h:
            out.append(phys)
        if prev == slot:
            break
        slot = prev
    return out
