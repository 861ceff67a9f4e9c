"""A RocketMQ 4.x remoting client written here from docs/formats.md ("Remoting frame") with raw
sockets and `struct`, independent of the project's codec, to check servers byte for byte.

Frame: [length i32][(serializeType << 24) | headerLen i32][header][body], big-endian;
length = 4 + headerLen + bodyLen. JSON header or ROCKETMQ binary header:
code i16 | language u8 | version i16 | opaque i32 | flag i32 | remarkLen i32 + remark |
extLen i32 + {keyLen i16 + key, valLen i32 + val}*.
"""

from __future__ import annotations

import itertools
import json
import socket
import struct
from dataclasses import dataclass, field

JSON, ROCKETMQ = 0, 1
FLAG_RESPONSE, FLAG_ONEWAY = 1, 2
_opaque = itertools.count(1000)


@dataclass
class Frame:
    code: int
    fields: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    language: int | str = "PYTHON"
    version: int = 413
    serialize_type: int = JSON

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)


def encode(f: Frame) -> bytes:
    if f.serialize_type == JSON:
        header = {"code": f.code, "flag": f.flag, "language": "PYTHON", "opaque": f.opaque,
                  "serializeTypeCurrentRPC": "JSON", "version": f.version}  # fmt: skip
        if f.fields:
            header["extFields"] = f.fields
        if f.remark is not None:
            header["remark"] = f.remark
        h = json.dumps(header).encode()
    else:
        remark = (f.remark or "").encode()
        ext = b"".join(
            struct.pack(">h", len(k.encode()))
            + k.encode()
            + struct.pack(">i", len(v.encode()))
            + v.encode()
            for k, v in f.fields.items()
        )
        h = struct.pack(">hBhii", f.code, 3, f.version, f.opaque, f.flag)
        h += struct.pack(">i", len(remark)) + remark + struct.pack(">i", len(ext)) + ext
    return (
        struct.pack(">ii", 4 + len(h) + len(f.body), (f.serialize_type << 24) | len(h)) + h + f.body
    )


def decode_header(kind: int, h: bytes) -> Frame:
    if kind == JSON:
        d = json.loads(h)
        return Frame(
            code=d["code"], fields={k: str(v) for k, v in (d.get("extFields") or {}).items()},
            opaque=d.get("opaque", 0), flag=d.get("flag", 0), remark=d.get("remark"),
            language=d.get("language", ""), version=d.get("version", 0), serialize_type=JSON,
        )  # fmt: skip
    code, lang, version, opaque, flag = struct.unpack_from(">hBhii", h, 0)
    pos = 13
    (rlen,) = struct.unpack_from(">i", h, pos)
    remark = h[pos + 4 : pos + 4 + rlen].decode() if rlen > 0 else None
    pos += 4 + max(rlen, 0)
    (elen,) = struct.unpack_from(">i", h, pos)
    pos += 4
    end = pos + elen
    fields = {}
    while pos < end:
        (klen,) = struct.unpack_from(">h", h, pos)
        key = h[pos + 2 : pos + 2 + klen].decode()
        pos += 2 + klen
        (vlen,) = struct.unpack_from(">i", h, pos)
        fields[key] = h[pos + 4 : pos + 4 + vlen].decode()
        pos += 4 + vlen
    assert pos == len(h), "binary header has trailing bytes"
    return Frame(code=code, fields=fields, opaque=opaque, flag=flag, remark=remark, language=lang,
                 version=version, serialize_type=ROCKETMQ)  # fmt: skip


class Wire:
    """One connection."""

    def __init__(
        self, addr: str, serialize_type: int = JSON, timeout: float = 10, rcvbuf: int = 0
    ) -> None:
        host, port = addr.rsplit(":", 1)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            # Before connect, so the advertised window stays small.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect((host, int(port)))
        self.serialize_type = serialize_type
        self.buf = b""
        self.inbox: list[Frame] = []

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _read_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed by peer")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_frame(self) -> Frame:
        length, mark = struct.unpack(">ii", self._read_exact(8))
        kind, hlen = (mark >> 24) & 0xFF, mark & 0xFFFFFF
        header = self._read_exact(hlen)
        body = self._read_exact(length - 4 - hlen)
        f = decode_header(kind, header)
        f.body = body
        return f

    def request(
        self,
        code: int,
        fields: dict[str, str] | None = None,
        body: bytes = b"",
        oneway: bool = False,
    ) -> Frame | None:
        f = Frame(code=code, fields={k: str(v) for k, v in (fields or {}).items()}, body=body,
                  opaque=next(_opaque), flag=FLAG_ONEWAY if oneway else 0, serialize_type=self.serialize_type)  # fmt: skip
        self.sock.sendall(encode(f))
        if oneway:
            return None
        while True:
            got = self.read_frame()
            if got.is_response and got.opaque == f.opaque:
                return got
            self.inbox.append(got)

    def call(self, code: int, fields: dict[str, str] | None = None, body: bytes = b"") -> Frame:
        """A request that must be answered."""
        resp = self.request(code, fields, body)
        assert resp is not None
        return resp

    def is_closed_by_peer(self, wait: float = 5) -> bool:
        self.sock.settimeout(wait)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False


def batch_body(items: list[tuple[int, bytes, dict[str, str]]]) -> bytes:
    """SEND_BATCH_MESSAGE body: [totalSize][magic 0][bodyCRC 0][flag][bodyLen][body][propLen i16][props]."""
    out = b""
    for flag, body, props in items:
        p = "".join(f"{k}\x01{v}\x02" for k, v in props.items()).encode()
        total = 22 + len(body) + len(p)
        out += (
            struct.pack(">iiiii", total, 0, 0, flag, len(body))
            + body
            + struct.pack(">h", len(p))
            + p
        )
    return out
