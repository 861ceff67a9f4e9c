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


def all_queues(catalog: Catalog, opts: ReadOptions) -> list[Queue]:
    """Every readable queue of the subscribed topics (only the assigned ones with
    ``assign``)."""
    queues = [q for topic in opts.topics for q in catalog.queues(topic)]
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


def split(ranges: list[QueueRange], min_partitions: int | None) -> list[QueueRange]:
    """One partition per non-empty range; with ``minPartitions``, large ranges are cut so
    there are at least that many (each range in proportion to its size)."""
    ranges = [r for r in ranges if r.end > r.start]
    if not min_partitions or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.end - r.start for r in ranges)
    out: list[QueueRange] = []
    for r in ranges:
        size = r.end - r.start
        parts = max(1, min(size, -(-size * min_partitions // total)))
        step = -(-size // parts)
        out.extend(
            QueueRange(r.queue, s, min(r.end, s + step), r.commit and s + step >= r.end)
            for s in range(r.start, r.end, step)
        )
    return out
