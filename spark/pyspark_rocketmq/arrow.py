"""The reader's schema, and Arrow record batches assembled from the column buffers that
``rocketpy._native`` builds in Rust (no Python object per message)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

#: The Spark schema of every read (same for batch, streaming and offline reads).
SCHEMA_DDL = (
    "topic string, brokerName string, queueId int, queueOffset bigint, msgId string, "
    "tags string, keys string, body binary, properties map<string,string>, "
    "bornTimestamp timestamp, storeTimestamp timestamp, reconsumeTimes int"
)

_TS = pa.timestamp("us", tz="UTC")

#: The same schema in Arrow terms.
ARROW_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string()),
        pa.field("brokerName", pa.string()),
        pa.field("queueId", pa.int32()),
        pa.field("queueOffset", pa.int64()),
        pa.field("msgId", pa.string()),
        pa.field("tags", pa.string()),
        pa.field("keys", pa.string()),
        pa.field("body", pa.binary()),
        pa.field("properties", pa.map_(pa.string(), pa.string())),
        pa.field("bornTimestamp", _TS),
        pa.field("storeTimestamp", _TS),
        pa.field("reconsumeTimes", pa.int32()),
    ]
)


def _var(kind: pa.DataType, n: int, buffers: tuple[Any, Any, Any]) -> pa.Array:
    validity, offsets, data = buffers
    return pa.Array.from_buffers(
        kind,
        n,
        [
            pa.py_buffer(validity) if validity is not None else None,
            pa.py_buffer(offsets),
            pa.py_buffer(data),
        ],
    )


def _fixed(kind: pa.DataType, n: int, data: bytes) -> pa.Array:
    return pa.Array.from_buffers(kind, n, [None, pa.py_buffer(data)])


def _timestamps(n: int, millis: bytes) -> pa.Array:
    return _fixed(pa.timestamp("ms", tz="UTC"), n, millis).cast(_TS)


def _column(name: str, n: int, cols: dict[str, Any]) -> pa.Array:
    if name in ("topic", "brokerName", "msgId", "tags", "keys"):
        return _var(pa.string(), n, cols[name])
    if name == "body":
        return _var(pa.binary(), n, cols[name])
    if name in ("queueId", "reconsumeTimes"):
        return _fixed(pa.int32(), n, cols[name])
    if name == "queueOffset":
        return _fixed(pa.int64(), n, cols[name])
    if name in ("bornTimestamp", "storeTimestamp"):
        return _timestamps(n, cols[name])
    assert name == "properties", name
    prop_offsets, prop_keys, prop_values = cols["properties"]
    n_props = len(prop_keys[1]) // 4 - 1  # entries: one offset more than values
    return pa.MapArray.from_arrays(
        _fixed(pa.int32(), n + 1, prop_offsets),
        _var(pa.string(), n_props, prop_keys),
        _var(pa.string(), n_props, prop_values),
    )


def to_record_batch(cols: dict[str, Any], schema: pa.Schema = ARROW_SCHEMA) -> pa.RecordBatch:
    """A record batch from ``read_columns`` / ``pull_columns``, with the columns of
    ``schema`` (all of :data:`ARROW_SCHEMA` by default, or a subset: column pruning)."""
    n = int(cols["rows"])
    arrays = [_column(name, n, cols) for name in schema.names]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def project(names: list[str]) -> pa.Schema:
    """The Arrow schema of a subset of the columns, in the given order; unknown names or a
    type other than the source's are refused by the caller's schema check."""
    unknown = [n for n in names if n not in ARROW_SCHEMA.names]
    if unknown:
        raise ValueError(
            f"the rocketmq source has no column {unknown[0]!r}; columns: {ARROW_SCHEMA.names}"
        )
    return pa.schema([ARROW_SCHEMA.field(n) for n in names])
