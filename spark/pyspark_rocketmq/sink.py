"""Writing DataFrames to topics: batch and streaming, at least once, or exactly once and all
at once with ``option("transactional", "true")`` (see :mod:`pyspark_rocketmq.transactional`).
Columns: ``body`` (binary or string, required), and optionally ``topic`` (else the ``topic``
option), ``tags``, ``keys``, ``properties`` (map<string,string>). A failed send fails the Spark
task (and so the job, after Spark's retries); nothing is dropped silently."""

from __future__ import annotations

import uuid
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

from pyspark_rocketmq import transactional
from pyspark_rocketmq.access import PLAIN, Access
from pyspark_rocketmq.options import OptionError, _bool, _get, _int, access_of, check_known
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
    transactional: bool = False
    #: The ACL account the sink signs with and its TLS (``access_of``).
    access: Access = PLAIN

    @staticmethod
    def parse(
        options: Mapping[str, str], schema: StructType, streaming: bool = False
    ) -> WriteOptions:
        """Validates ``options`` against ``schema``; raises :class:`OptionError`."""
        check_known(options, "streaming write" if streaming else "write")
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
            transactional=_bool(options, "transactional", False),
            access=access_of(options),
        )


@dataclass
class SentMessages(WriterCommitMessage):
    """What one task sent."""

    count: int


def _column(batch: pa.RecordBatch, name: str) -> list[Any] | None:
    i = batch.schema.get_field_index(name)
    return None if i < 0 else batch.column(i).to_pylist()


def messages_of(opts: WriteOptions, batches: Iterator[pa.RecordBatch]) -> Iterator[Message]:
    """The rows as messages; raises on a row without body or topic."""
    row = 0
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
                raise ValueError(f"row {row + i} has a null body; every message needs one")
            if not topic:
                raise ValueError(f"row {row + i} has no topic (null column, no option)")
            yield Message(topic, body, tags=tags[i], keys=keys[i], properties=dict(props[i] or []))
        row += n


#: Bytes of Arrow data a bulk send of the sink takes at most (one ``send_arrow`` call).
BULK_BYTES = 32 * 1024 * 1024


def _bulk_ready(opts: WriteOptions, batch: pa.RecordBatch) -> bool:
    """Whether every row of ``batch`` goes to the option's topic with nothing per row but a
    body and a key: then the rows go as a bulk send (no Python object per row)."""
    names = batch.schema.names
    return opts.topic is not None and not {"topic", "tags", "properties"} & set(names)


def _send_bulk(producer: Producer, opts: WriteOptions, batches: list[pa.RecordBatch]) -> int:
    assert opts.topic is not None
    table = pa.Table.from_batches(batches)
    cols = [c for c in ("body", "keys") if c in table.schema.names]
    return producer.send_arrow(table.select(cols), opts.topic).count


def send_batches(opts: WriteOptions, batches: Iterator[pa.RecordBatch]) -> SentMessages:
    """Sends every row; raises on the first failure (after the producer's own retries).
    Batches of bodies and keys only go as bulk sends of up to :data:`BULK_BYTES`; rows
    with their own topic, tags or properties as batches of messages."""
    sent = 0
    with Producer(opts.group, opts.namesrv, **opts.access.client_kwargs()) as producer:
        pending: dict[str, list[Message]] = {}
        size: dict[str, int] = {}
        bulk: list[pa.RecordBatch] = []
        bulk_bytes = 0

        def flush(topic: str) -> None:
            nonlocal sent
            msgs = pending.pop(topic, [])
            size.pop(topic, None)
            if msgs:
                producer.send_batch(msgs)
                sent += len(msgs)

        def flush_bulk() -> None:
            nonlocal sent, bulk_bytes
            if bulk:
                sent += _send_bulk(producer, opts, bulk)
            bulk.clear()
            bulk_bytes = 0

        def rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            nonlocal bulk_bytes
            for batch in batches:
                if not _bulk_ready(opts, batch):
                    yield batch
                    continue
                bulk.append(batch)
                bulk_bytes += batch.nbytes
                if bulk_bytes >= BULK_BYTES:
                    flush_bulk()

        for m in messages_of(opts, rows(batches)):
            pending.setdefault(m.topic, []).append(m)
            size[m.topic] = size.get(m.topic, 0) + len(m.body) + 64
            if len(pending[m.topic]) >= opts.batch_messages or size[m.topic] >= BATCH_BYTES:
                flush(m.topic)
        for topic in list(pending):
            flush(topic)
        flush_bulk()
    return SentMessages(sent)


def _stream_write_id() -> str:
    """``queryId:batchId`` of the micro-batch this task belongs to."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    query = ctx.getLocalProperty("sql.streaming.queryId") if ctx else None
    batch = ctx.getLocalProperty("streaming.sql.batchId") if ctx else None
    if not query or batch is None:
        raise RuntimeError("a transactional streaming write needs Spark's micro-batch ids")
    return f"{query}:{batch}"


def _decide(
    opts: WriteOptions,
    messages: list[WriterCommitMessage | None],
    outcome: str,
    write_id: str | None = None,
) -> None:
    """Records ``outcome`` for the write (its id from the tasks' messages unless given: a
    streaming micro-batch's is known to its tasks only) and ends its half messages."""
    sent = [m for m in messages if isinstance(m, transactional.HalfMessages)]
    write_id = write_id or (sent[0].write_id if sent else None)
    if write_id is not None:
        transactional.decide(opts.group, opts.namesrv, write_id, sent, outcome, opts.access)


class BatchWriter(DataSourceArrowWriter):
    """``df.write.format("rocketmq")``."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts
        # Made on the driver, so every task of this write shares it.
        self.write_id = uuid.uuid4().hex

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        if self.opts.transactional:
            msgs = messages_of(self.opts, iterator)
            return transactional.send_halves(
                self.opts.group, self.opts.namesrv, self.write_id, msgs, self.opts.access
            )
        return send_batches(self.opts, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Transactional: the write becomes visible, all of it."""
        if self.opts.transactional:
            _decide(self.opts, messages, "commit", self.write_id)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Transactional: nothing of the write becomes visible."""
        if self.opts.transactional:
            _decide(self.opts, messages, "rollback", self.write_id)


class StreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("rocketmq")``: at least once (a retried micro-batch sends its
    rows again), or exactly once per micro-batch when transactional."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        if self.opts.transactional:
            msgs = messages_of(self.opts, iterator)
            return transactional.send_halves(
                self.opts.group, self.opts.namesrv, _stream_write_id(), msgs, self.opts.access
            )
        return send_batches(self.opts, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """At least once: stored already. Transactional: the micro-batch becomes visible."""
        if self.opts.transactional:
            _decide(self.opts, messages, "commit")

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """At least once: what was sent stays, Spark retries the batch. Transactional:
        nothing of this attempt becomes visible."""
        if self.opts.transactional:
            _decide(self.opts, messages, "rollback")
