"""Writing DataFrames to topics: batch and streaming, at least once. Columns: ``body``
(binary or string, required), and optionally ``topic`` (else the ``topic`` option), ``tags``,
``keys``, ``properties`` (map<string,string>). A failed send fails the Spark task (and so
the job, after Spark's retries); nothing is dropped silently."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import BinaryType, MapType, StringType, StructType

from pyspark_rocketmq.options import OptionError, _get, _int
from rocketpy import Message, Producer

#: Limits of one SEND_BATCH_MESSAGE request built by the sink.
BATCH_MESSAGES, BATCH_BYTES = 256, 1024 * 1024


@dataclass(frozen=True)
class WriteOptions:
    """Sink settings, checked on the driver against the DataFrame's schema."""

    namesrv: str
    topic: str | None
    group: str
    batch_messages: int

    @staticmethod
    def parse(options: Mapping[str, str], schema: StructType) -> WriteOptions:
        namesrv = _get(options, "namesrv")
        if not namesrv:
            raise OptionError("option namesrv is required to write")
        fields = {f.name: f.dataType for f in schema.fields}
        if "body" not in fields:
            raise OptionError("the DataFrame needs a body column (binary or string) to write")
        if not isinstance(fields["body"], (BinaryType, StringType)):
            raise OptionError(f"column body must be binary or string, not {fields['body']}")
        topic = _get(options, "topic")
        if "topic" not in fields and not topic:
            raise OptionError("give the option topic or a topic column")
        for name in ("tags", "keys"):
            if name in fields and not isinstance(fields[name], StringType):
                raise OptionError(f"column {name} must be a string, not {fields[name]}")
        if "properties" in fields and not isinstance(fields["properties"], MapType):
            raise OptionError("column properties must be map<string,string>")
        return WriteOptions(
            namesrv=namesrv,
            topic=topic,
            group=_get(options, "groupId") or "rocketpy-spark-writer",
            batch_messages=min(_int(options, "batchMessages") or BATCH_MESSAGES, BATCH_MESSAGES),
        )


@dataclass
class SentMessages(WriterCommitMessage):
    """What one task sent."""

    count: int


def _column(batch: pa.RecordBatch, name: str) -> list[Any] | None:
    i = batch.schema.get_field_index(name)
    return None if i < 0 else batch.column(i).to_pylist()


def send_batches(opts: WriteOptions, batches: Iterator[pa.RecordBatch]) -> SentMessages:
    """Sends every row; raises on the first failure (after the producer's own retries)."""
    sent = 0
    with Producer(opts.group, opts.namesrv) as producer:
        pending: dict[str, list[Message]] = {}
        size: dict[str, int] = {}

        def flush(topic: str) -> None:
            nonlocal sent
            msgs = pending.pop(topic, [])
            size.pop(topic, None)
            if msgs:
                producer.send_batch(msgs)
                sent += len(msgs)

        for batch in batches:
            n = batch.num_rows
            bodies = _column(batch, "body") or []
            topics = _column(batch, "topic") or [opts.topic] * n
            tags = _column(batch, "tags") or [None] * n
            keys = _column(batch, "keys") or [None] * n
            props = _column(batch, "properties") or [None] * n
            for i in range(n):
                body, topic = bodies[i], topics[i] or opts.topic
                if body is None:
                    raise ValueError(f"row {sent + i} has a null body; every message needs one")
                if not topic:
                    raise ValueError(f"row {sent + i} has no topic (null column, no option)")
                m = Message(
                    topic, body, tags=tags[i], keys=keys[i], properties=dict(props[i] or [])
                )
                pending.setdefault(topic, []).append(m)
                size[topic] = size.get(topic, 0) + len(m.body) + 64
                if len(pending[topic]) >= opts.batch_messages or size[topic] >= BATCH_BYTES:
                    flush(topic)
        for topic in list(pending):
            flush(topic)
    return SentMessages(sent)


class BatchWriter(DataSourceArrowWriter):
    """``df.write.format("rocketmq")``."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return send_batches(self.opts, iterator)


class StreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("rocketmq")``: at least once (a retried micro-batch sends its
    rows again)."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return send_batches(self.opts, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Sent messages are stored already: nothing to do."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Messages already sent stay (at least once); Spark retries the batch."""
