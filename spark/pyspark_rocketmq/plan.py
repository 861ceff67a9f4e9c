"""Planning reads: start and end offsets per queue, data-loss checks, read limits, and the
split of queue ranges into Spark partitions. Runs on the driver."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from pyspark_rocketmq.catalog import Catalog, Queue
from pyspark_rocketmq.options import Offsets, OptionError, ReadOptions
from rocketpy._native import DataLossError

log = logging.getLogger("pyspark_rocketmq")

#: In the JSON offsets form, as in Spark's Kafka source: -2 = earliest, -1 = latest.
EARLIEST, LATEST = -2, -1


@dataclass(frozen=True)
class QueueRange(InputPartition):
    """Offsets ``[start, end)`` of one queue: one Spark partition (picklable)."""

    queue: Queue
    start: int
    end: int
    #: Whether the task records ``end`` as the group's offset on the broker when it has read
    #: the range (a batch read with ``commitOffsetsToBroker``: the last range of its queue).
    commit: bool = False


class MissingTopicError(OptionError):
    """A topic read does not exist (option ``failOnMissingTopic``, default true)."""


def all_queues(catalog: Catalog, opts: ReadOptions, starting: bool = False) -> list[Queue]:
    """Every readable queue of the subscribed topics (only the assigned ones with
    ``assign``). ``starting``: the read starts, so a topic that does not exist is an error
    unless ``failOnMissingTopic`` is false (a misspelled or not yet created topic otherwise
    reads as 0 rows, indistinguishable from an empty one). Later look-ups of a running
    stream do not check: a topic created after the start is read from its beginning."""
    queues: list[Queue] = []
    for topic in opts.topics:
        found = catalog.queues(topic)
        if not found and starting and opts.fail_on_missing_topic:
            why = catalog.missing(topic)
            if why is not None:
                raise MissingTopicError(why)
        queues.extend(found)
    if opts.assign is None:
        return queues
    out = []
    for q in queues:
        by_broker = opts.assign.get(q.topic, {})
        ids = by_broker.get(q.broker_name, by_broker.get(None, frozenset()))
        if q.queue_id in ids:
            out.append(q)
    return out


def with_timestamps(
    catalog: Catalog, queues: list[Queue], spec: Offsets, name: str
) -> dict[Queue, int]:
    """The first offset stored at or after each queue's timestamp in ``spec``; as in Kafka's
    source, every queue read must be given one."""
    out = {}
    for q in queues:
        ts = spec.get(q.topic, {}).get(q.broker_name, {}).get(str(q.queue_id))
        if ts is None:
            raise OptionError(
                f"option {name} must give a timestamp for every queue read; "
                f"{q.topic}/{q.broker_name}/{q.queue_id} has none"
            )
        out[q] = catalog.offset_by_time(q, int(ts))
    return out


def positions(
    catalog: Catalog,
    queues: list[Queue],
    spec: str | Offsets,
    timestamp_ms: int | None,
    default: int,
) -> dict[Queue, int]:
    """Resolves ``earliest`` / ``latest`` / JSON / a timestamp to an offset per queue; queues
    the JSON leaves out get ``default`` (EARLIEST or LATEST)."""
    out = {}
    for q in queues:
        if timestamp_ms is not None:
            out[q] = catalog.offset_by_time(q, timestamp_ms)
            continue
        if spec == "earliest":
            want = EARLIEST
        elif spec == "latest":
            want = LATEST
        else:
            assert isinstance(spec, dict)
            want = spec.get(q.topic, {}).get(q.broker_name, {}).get(str(q.queue_id), default)
        if want == EARLIEST:
            out[q] = catalog.min_offset(q)
        elif want == LATEST:
            out[q] = catalog.max_offset(q)
        else:
            out[q] = want
    return out


def start_positions(
    catalog: Catalog, queues: list[Queue], opts: ReadOptions, default: int
) -> dict[Queue, int]:
    """Where a read starts: ``startingTimestamp``, else ``startingOffsetsByTimestamp``, else
    ``startingOffsets`` (Kafka's order of precedence)."""
    if opts.starting_timestamp is None and opts.starting_by_timestamp is not None:
        return with_timestamps(
            catalog, queues, opts.starting_by_timestamp, "startingOffsetsByTimestamp"
        )
    return positions(catalog, queues, opts.starting, opts.starting_timestamp, default)


def end_positions(catalog: Catalog, queues: list[Queue], opts: ReadOptions) -> dict[Queue, int]:
    """Where a batch read ends (exclusive), with the same precedence as the start."""
    if opts.ending_timestamp is None and opts.ending_by_timestamp is not None:
        return with_timestamps(
            catalog, queues, opts.ending_by_timestamp, "endingOffsetsByTimestamp"
        )
    return positions(catalog, queues, opts.ending, opts.ending_timestamp, LATEST)


def check_loss(catalog: Catalog, opts: ReadOptions, starts: dict[Queue, int]) -> dict[Queue, int]:
    """Starts below a queue's first stored offset (retention deleted them): an error with
    ``failOnDataLoss`` (the default), else a warning and the first stored offset."""
    out = dict(starts)
    for q, start in starts.items():
        lo = catalog.min_offset(q)
        if start < lo:
            msg = (
                f"{q.topic}/{q.broker_name}/{q.queue_id}: offsets {start}..{lo - 1} are no "
                f"longer stored (the first stored offset is {lo})"
            )
            if opts.fail_on_data_loss:
                raise DataLossError(msg + "; set failOnDataLoss=false to skip them")
            log.warning("%s; skipping them", msg)
            out[q] = lo
    return out


def to_json(offsets: dict[Queue, int]) -> Offsets:
    """The checkpointed form."""
    out: Offsets = {}
    for q, off in sorted(offsets.items()):
        out.setdefault(q.topic, {}).setdefault(q.broker_name, {})[str(q.queue_id)] = off
    return out


def from_json(offsets: Offsets, queues: list[Queue]) -> dict[Queue, int]:
    """Offsets of the known ``queues`` present in ``offsets``."""
    out = {}
    for q in queues:
        off = offsets.get(q.topic, {}).get(q.broker_name, {}).get(str(q.queue_id))
        if off is not None:
            out[q] = int(off)
    return out


def limit_rows(
    start: dict[Queue, int], latest: dict[Queue, int], max_rows: int
) -> dict[Queue, int]:
    """End offsets at most ``max_rows`` past ``start`` in all, shared in proportion to what
    each queue has available (largest remainders first, then queue order: deterministic)."""
    avail = {q: max(0, latest[q] - start.get(q, latest[q])) for q in latest}
    total = sum(avail.values())
    if total <= max_rows:
        return dict(latest)
    share = {q: a * max_rows // total for q, a in avail.items()}
    left = max_rows - sum(share.values())
    by_remainder = sorted(avail, key=lambda q: (-(avail[q] * max_rows % total), q))
    for q in by_remainder:
        if left == 0:
            break
        if share[q] < avail[q]:
            share[q] += 1
            left -= 1
    return {q: start.get(q, latest[q]) + share[q] for q in latest}


#: Units sampled per queue to estimate its message size for ``maxBytesPerTrigger``.
SIZE_SAMPLE = 64


def limit_bytes(
    catalog: Catalog, start: dict[Queue, int], latest: dict[Queue, int], max_bytes: int
) -> dict[Queue, int]:
    """End offsets whose messages add up to about ``max_bytes`` (records as stored), shared
    in proportion to each queue's backlog in bytes: a soft limit, as the file and Delta
    sources' ``maxBytesPerTrigger``. Each queue's size per message is the mean of the next
    :data:`SIZE_SAMPLE` units of its consume queue (exact when fewer are new). A micro-batch
    always makes progress: when one message is larger than the limit, it reads one."""
    avail = {q: max(0, latest[q] - start.get(q, latest[q])) for q in latest}
    mean: dict[Queue, float] = {}
    for q, n in avail.items():
        if n:
            sizes = catalog.unit_sizes(q, start[q], min(n, SIZE_SAMPLE))
            mean[q] = sum(sizes) / len(sizes) if sizes else 1.0
    total = sum(avail[q] * mean[q] for q in mean)
    if total <= max_bytes:
        return dict(latest)
    share = {q: int(avail[q] * max_bytes / total) for q in mean}
    if not any(share.values()):
        first = min(mean)  # deterministic: the first queue with something new
        share[first] = 1
    return {q: start.get(q, latest[q]) + share.get(q, 0) for q in latest}


@dataclass(frozen=True)
class PackedRanges(InputPartition):
    """Several small queue ranges read one after the other by one task (picklable)."""

    ranges: tuple[QueueRange, ...]


def _cut(r: QueueRange, parts: int) -> list[QueueRange]:
    """``r`` in ``parts`` consecutive pieces; only the last keeps the commit mark."""
    size = r.end - r.start
    step = -(-size // max(1, min(size, parts)))
    return [
        QueueRange(r.queue, s, min(r.end, s + step), r.commit and s + step >= r.end)
        for s in range(r.start, r.end, step)
    ]


def split(
    ranges: list[QueueRange],
    min_partitions: int | None,
    max_records: int | None = None,
    pack_records: int | None = None,
) -> list[InputPartition]:
    """The partitions of a read, one Spark task each:

    - ``maxRecordsPerPartition`` (Kafka's): ranges longer than that are cut;
    - ``minPartitions``: large ranges are cut so there are at least that many (each range
      in proportion to its size);
    - otherwise ranges shorter than ``pack_records`` (``minRecordsPerPartition``) are packed
      together, in order, until a pack holds that many (never more than ``max_records``):
      a Python data source task costs ~100 ms before it reads a row, which a micro-batch of
      many small queue ranges would otherwise pay once per queue.
    """
    ranges = [r for r in ranges if r.end > r.start]
    if max_records:
        ranges = [p for r in ranges for p in _cut(r, -(-(r.end - r.start) // max_records))]
        pack_records = min(pack_records or max_records, max_records)
    if min_partitions:
        if len(ranges) >= min_partitions:
            return list(ranges)
        total = sum(r.end - r.start for r in ranges)
        return [p for r in ranges for p in _cut(r, -(-(r.end - r.start) * min_partitions // total))]
    if not pack_records:
        return list(ranges)
    out: list[InputPartition] = []
    pack: list[QueueRange] = []
    rows = 0
    for r in ranges:
        size = r.end - r.start
        if size >= pack_records:
            out.append(r)
            continue
        if rows + size > pack_records:  # only reachable with max_records: never past it
            out.append(PackedRanges(tuple(pack)) if len(pack) > 1 else pack[0])
            pack, rows = [], 0
        pack.append(r)
        rows += size
        if rows >= pack_records:
            out.append(PackedRanges(tuple(pack)) if len(pack) > 1 else pack[0])
            pack, rows = [], 0
    if pack:
        out.append(PackedRanges(tuple(pack)) if len(pack) > 1 else pack[0])
    return out
