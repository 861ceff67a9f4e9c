"""The ``rocketmq`` data source: batch and streaming reads, batch and streaming writes."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    Filter,
    InputPartition,
)
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from pyspark_rocketmq import plan, pushdown
from pyspark_rocketmq.arrow import ARROW_SCHEMA, SCHEMA_DDL, project
from pyspark_rocketmq.catalog import Catalog, Queue
from pyspark_rocketmq.options import OptionError, ReadOptions
from pyspark_rocketmq.sink import BatchWriter, StreamWriter, WriteOptions

log = logging.getLogger("pyspark_rocketmq")


class RocketMQDataSource(DataSource):
    """``spark.read.format("rocketmq")`` / ``spark.readStream.format("rocketmq")`` and the
    matching writes. See ``spark/README.md`` for the options."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> str:
        return SCHEMA_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        opts = replace(ReadOptions.parse(self.options, streaming=False), columns=columns_of(schema))
        # Spark refuses every read of a reader with pushFilters while its
        # spark.sql.python.filterPushdown.enabled is false: pushdown is asked for by option.
        return PushdownBatchReader(opts) if opts.filter_pushdown else BatchReader(opts)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        opts = ReadOptions.parse(self.options, streaming=True)
        return StreamReader(replace(opts, columns=columns_of(schema)))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return BatchWriter(WriteOptions.parse(self.options, schema))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return StreamWriter(WriteOptions.parse(self.options, schema, streaming=True))


def columns_of(schema: StructType) -> tuple[str, ...]:
    """The columns a (possibly user-given) schema asks for, checked against the source's:
    ``spark.read.format("rocketmq").schema("queueId int, body binary")`` reads only those
    two columns, which Spark's Python data sources cannot otherwise prune."""
    names = schema.fieldNames()
    project(names)  # unknown names
    for f in schema.fields:
        want = ARROW_SCHEMA.field(f.name).type
        got = to_arrow_type(f.dataType, timezone="UTC")
        if got != want:
            raise OptionError(
                f"column {f.name} is {want} in the rocketmq source; the schema asks for {got}"
            )
    return tuple(names)


def _read(opts: ReadOptions, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    if isinstance(partition, plan.QueueRange):
        ranges: tuple[plan.QueueRange, ...] = (partition,)
    elif isinstance(partition, plan.PackedRanges):
        ranges = partition.ranges
    else:
        # A plan with no ranges (no queue assigned, nothing stored) still gets one task,
        # handed Spark's placeholder partition: it has nothing to read.
        return
    catalog = Catalog.open(opts)
    for r in ranges:
        yield from catalog.read(r.queue, r.start, r.end)
        if r.commit:
            catalog.commit(r.queue, r.end)


def _partitions(opts: ReadOptions, ranges: list[plan.QueueRange]) -> Sequence[InputPartition]:
    return plan.split(
        ranges, opts.min_partitions, opts.max_records_per_partition, opts.min_records_per_partition
    )


class BatchReader(DataSourceReader):
    """A bounded read: ``startingOffsets``/``startingTimestamp`` to
    ``endingOffsets``/``endingTimestamp`` (default: everything stored now)."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        catalog = Catalog.open(self.opts)
        queues = plan.all_queues(catalog, self.opts, starting=True)
        o = self.opts
        starts = plan.start_positions(catalog, queues, o, plan.EARLIEST)
        ends = plan.end_positions(catalog, queues, o)
        starts = plan.check_loss(catalog, o, starts)
        ranges = [plan.QueueRange(q, starts[q], ends[q], o.commit_offsets) for q in queues]
        return _partitions(o, ranges)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.opts, partition)


class PushdownBatchReader(BatchReader):
    """A :class:`BatchReader` whose ``tags`` conditions become the broker's filter (option
    ``filterPushdown=true``, with Spark's ``spark.sql.python.filterPushdown.enabled=true``)."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """See :mod:`pyspark_rocketmq.pushdown`; Spark still evaluates every filter."""
        self.opts = pushdown.pushed(self.opts, filters)
        return filters


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over the queues' growing offsets; the offsets live in Spark's checkpoint
    as ``{"topic": {"brokerName": {"queueId": offset}}}``."""

    def __init__(self, opts: ReadOptions, clock: Callable[[], float] = time.monotonic) -> None:
        self.opts = opts
        #: Seconds, for ``maxTriggerDelay`` (a manual clock in tests).
        self.clock = clock
        self._catalog: Catalog | None = None
        self._target: dict[str, Any] | None = None
        self._last_trigger = 0.0
        self._recorded: dict[str, Any] | None = None
        #: Whether the topics were checked to exist (the first look-up of this run).
        self._started = False

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = Catalog.open(self.opts)
        return self._catalog

    def _queues(self) -> list[Queue]:
        queues = plan.all_queues(self.catalog, self.opts, starting=not self._started)
        self._started = True
        return queues

    def _latest(self, queues: list[Queue]) -> dict[Queue, int]:
        return {q: self.catalog.max_offset(q) for q in queues}

    def initialOffset(self) -> dict[str, Any]:
        starts = plan.start_positions(self.catalog, self._queues(), self.opts, plan.LATEST)
        return plan.to_json(starts)

    def getDefaultReadLimit(self) -> ReadLimit:
        # Python sources get one limit (no CompositeReadLimit); with both options set,
        # latestOffset applies the other one from the options too.
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self.opts.max_bytes_per_trigger:
            return ReadMaxBytes(self.opts.max_bytes_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        # Nothing stored after this moment is read by this AvailableNow run.
        self._target = plan.to_json(self._latest(self._queues()))

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        # Spark asks for the next micro-batch only once the previous one completed, so
        # `start` is processed: recorded now, not one micro-batch later in `commit`, so an
        # idle query (or the end of an AvailableNow run) shows no phantom lag.
        queues = self._queues()
        self._record_progress(start, queues)
        if self._target is not None:
            latest = plan.from_json(self._target, queues)
        else:
            latest = self._latest(queues)
        begin = plan.from_json(start, queues)
        for q in latest:
            if q not in begin:
                # A queue added since the query started: read it from its beginning.
                begin[q] = self.catalog.min_offset(q)
            latest[q] = max(latest[q], begin[q])
        if not isinstance(limit, ReadAllAvailable):  # AvailableNow may ask for everything
            max_rows = self.opts.max_offsets_per_trigger
            max_bytes = self.opts.max_bytes_per_trigger
            if isinstance(limit, ReadMaxRows):
                max_rows = limit.max_rows
            elif isinstance(limit, ReadMaxBytes):
                max_bytes = limit.max_bytes
            if max_rows:
                latest = plan.limit_rows(begin, latest, max_rows)
            if max_bytes:
                latest = plan.limit_bytes(self.catalog, begin, latest, max_bytes)
        if self._target is None and self._delay(begin, latest):
            return start
        return plan.to_json(latest)

    def _delay(self, begin: dict[Queue, int], latest: dict[Queue, int]) -> bool:
        """``minOffsetsPerTrigger``: whether to skip this trigger because fewer messages than
        that are new and the last micro-batch ran less than ``maxTriggerDelay`` ago (Kafka's
        rule; the first trigger of a run never waits, AvailableNow never waits)."""
        if not self.opts.min_offsets_per_trigger:
            return False
        now = self.clock()
        new = sum(latest[q] - begin.get(q, latest[q]) for q in latest)
        waited_ms = (now - self._last_trigger) * 1000 if self._last_trigger else None
        if (
            new < self.opts.min_offsets_per_trigger
            and waited_ms is not None
            and waited_ms < self.opts.max_trigger_delay_ms
        ):
            return True
        self._last_trigger = now
        return False

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """The queues' ends, shown as ``latestOffset`` in the query's progress: with
        ``endOffset`` it tells how far behind the query is."""
        return plan.to_json(self._latest(self._queues()))

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        queues = self._queues()
        begin, stop = plan.from_json(start, queues), plan.from_json(end, queues)
        for q in stop:
            if q not in begin:  # a queue added since `start` was planned
                begin[q] = self.catalog.min_offset(q)
        begin = plan.check_loss(self.catalog, self.opts, {q: begin[q] for q in stop})
        ranges = [plan.QueueRange(q, begin[q], stop[q]) for q in stop]
        return _partitions(self.opts, ranges)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.opts, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Spark's hook after a micro-batch is safely in the checkpoint (called when the
        next one is planned): records its end, as :meth:`latestOffset` does its start."""
        self._record_progress(end)

    def _record_progress(self, offsets: dict[str, Any], queues: list[Queue] | None = None) -> None:
        """Records processed offsets as the consumer group's progress on the brokers
        (``commitOffsetsToBroker``, default on for online reads), so consumerProgress, the
        admin API and the broker's lag metrics show the query. Spark's checkpoint stays the
        source of truth: a restart reads from it, and a broker that cannot be reached costs a
        warning, not the query. Unchanged offsets are not sent again."""
        if not self.opts.commit_offsets or offsets == self._recorded:
            return
        failed = False
        # `commit` passes no queues: its offsets were usually recorded already (no look-up).
        for q, offset in plan.from_json(offsets, queues or self._queues()).items():
            try:
                self.catalog.commit(q, offset)
            except Exception as e:  # any failure: the checkpoint has the offsets
                failed = True
                log.warning(
                    "could not record offset %d of %s/%s/%d for group %s on the broker: %s",
                    offset, q.topic, q.broker_name, q.queue_id, self.opts.group, e,
                )  # fmt: skip
        if not failed:
            self._recorded = offsets
