"""Vectorised decoding helpers for the ``body`` and ``properties`` columns: Arrow UDFs, so
each call gets a whole batch as a ``pyarrow.Array``."""

from __future__ import annotations

import json
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column
from pyspark.sql.functions import lit
from pyspark.sql.pandas.functions import arrow_udf as _untyped_arrow_udf
from pyspark.sql.types import StringType

# The stubs' overloads do not cover a DataType return type without a function type; a
# DataType (not a DDL string) keeps module import free of any Spark session.
arrow_udf: Any = _untyped_arrow_udf


def _binary_to_utf8(values: pa.Array) -> pa.Array:
    try:
        return pc.cast(values, pa.string())  # validates: the fast path for UTF-8 bodies
    except pa.ArrowInvalid:
        return pa.array(
            [None if v is None else v.decode("utf-8", "replace") for v in values.to_pylist()],
            pa.string(),
        )


def _body_as_string_arrow(body: pa.Array) -> pa.Array:
    return _binary_to_utf8(body)


_body_as_string: Any = arrow_udf(_body_as_string_arrow, StringType())


def body_as_string(body: Column | str) -> Column:
    """``body`` decoded as UTF-8 (invalid bytes replaced by U+FFFD)."""
    return cast(Column, _body_as_string(body))


def _walk(doc: Any, path: list[str]) -> str | None:
    for part in path:
        if isinstance(doc, dict):
            doc = doc.get(part)
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            return None
    if doc is None:
        return None
    return doc if isinstance(doc, str) else json.dumps(doc)


def _json_field_arrow(body: pa.Array, path: pa.Array) -> pa.Array:
    parts = path[0].as_py().split(".") if len(path) else []
    out = []
    for raw in body.to_pylist():
        try:
            doc = json.loads(raw) if raw is not None else None
        except ValueError:
            doc = None
        out.append(_walk(doc, parts) if doc is not None else None)
    return pa.array(out, pa.string())


_json_field: Any = arrow_udf(_json_field_arrow, StringType())


def json_field(body: Column | str, path: str) -> Column:
    """The field at dotted ``path`` (``a.b.0``) of a JSON ``body``: strings as they are,
    other values as JSON text; null when absent or not JSON."""
    return cast(Column, _json_field(body, lit(path)))


def _property_arrow(props: pa.Array, name: pa.Array) -> pa.Array:
    key = name[0].as_py() if len(name) else ""
    return pc.map_lookup(props, pa.scalar(key, pa.string()), "first")


_property: Any = arrow_udf(_property_arrow, StringType())


def property_value(properties: Column | str, name: str) -> Column:
    """The value of property ``name`` (null when absent), looked up per batch in Arrow."""
    return cast(Column, _property(properties, lit(name)))
