"""Compares rocketpy's protocol file (crates/proxy/proto/messaging.proto, written for
rocketpy) with the descriptors the official RocketMQ 5.x Python client ships: every message,
field (name, number, type, label, oneof) and enum value, and the service's methods. Run with
the Python of the ``make compat-py5`` venv (it has grpc_tools to compile ours); prints one
JSON line: ``{"differences": [...]}``.

    python py5_descriptors.py path/to/messaging.proto
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

import grpc_tools
from google.protobuf import descriptor_pb2
from grpc_tools import protoc
from rocketmq.grpc_protocol import definition_pb2, service_pb2


def theirs() -> list[descriptor_pb2.FileDescriptorProto]:
    out = []
    for mod in (definition_pb2, service_pb2):
        fd = descriptor_pb2.FileDescriptorProto()
        mod.DESCRIPTOR.CopyToProto(fd)
        out.append(fd)
    return out


def ours(path: str) -> list[descriptor_pb2.FileDescriptorProto]:
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.pb")
        code = protoc.main(
            ["protoc", f"-I{os.path.dirname(path)}", f"-I{include}",
             f"--descriptor_set_out={out}", os.path.basename(path)]
        )  # fmt: skip
        if code != 0:
            raise SystemExit(f"protoc failed on {path}")
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            fds.ParseFromString(f.read())
    return list(fds.file)


def table(files: list[descriptor_pb2.FileDescriptorProto]) -> dict[str, Any]:
    """Everything on the wire, by full name."""
    t: dict[str, Any] = {}

    def message(prefix: str, m: descriptor_pb2.DescriptorProto) -> None:
        name = f"{prefix}.{m.name}"
        for f in m.field:
            oneof = m.oneof_decl[f.oneof_index].name if f.HasField("oneof_index") else None
            if f.proto3_optional:
                oneof = "(optional)"
            t[f"{name}.{f.name}"] = (f.number, f.type, f.label, f.type_name, oneof)
        for n in m.nested_type:
            message(name, n)
        for e in m.enum_type:
            for v in e.value:
                t[f"{name}.{e.name}.{v.name}"] = v.number

    for fd in files:
        pkg = "." + fd.package
        for m in fd.message_type:
            message(pkg, m)
        for e in fd.enum_type:
            for v in e.value:
                t[f"{pkg}.{e.name}.{v.name}"] = v.number
        for s in fd.service:
            for m in s.method:
                t[f"{pkg}.{s.name}/{m.name}"] = (
                    m.input_type, m.output_type, m.client_streaming, m.server_streaming,
                )  # fmt: skip
    return t


def main() -> None:
    a, b = table(theirs()), table(ours(sys.argv[1]))
    diffs = [
        f"{k}: theirs {a.get(k)!r}, ours {b.get(k)!r}"
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k)
    ]
    print(json.dumps({"differences": diffs, "compared": len(a)}))


if __name__ == "__main__":
    main()
