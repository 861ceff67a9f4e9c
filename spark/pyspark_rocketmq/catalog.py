"""Where the queues are and what they hold: from a running cluster (``namesrv``) or from a
store directory (``storePath``). Used on the driver to plan, and on executors to read."""

from __future__ import annotations

import abc
import difflib
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from pyspark_rocketmq.arrow import ARROW_SCHEMA, project, to_record_batch
from pyspark_rocketmq.options import ReadOptions
from rocketpy._native import RemotingClient, StoreReader
from rocketpy.admin import PERM_READ, Admin
from rocketpy.message import MessageQueue


@dataclass(frozen=True, order=True)
class Queue:
    """One queue of a topic on one broker (``addr`` empty offline)."""

    topic: str
    broker_name: str
    queue_id: int
    addr: str = ""


class Catalog(abc.ABC):
    """Queue discovery and offset look-ups."""

    @abc.abstractmethod
    def queues(self, topic: str) -> list[Queue]:
        """The readable queues of ``topic`` (sorted)."""

    @abc.abstractmethod
    def missing(self, topic: str) -> str | None:
        """Why ``topic`` does not exist here (what to do instead), or None when it does."""

    @abc.abstractmethod
    def min_offset(self, q: Queue) -> int:
        """The first stored offset."""

    @abc.abstractmethod
    def max_offset(self, q: Queue) -> int:
        """One past the last stored offset."""

    @abc.abstractmethod
    def offset_by_time(self, q: Queue, timestamp_ms: int) -> int:
        """The first offset stored at or after ``timestamp_ms`` (max when none)."""

    @abc.abstractmethod
    def unit_sizes(self, q: Queue, start: int, count: int) -> list[int]:
        """Record sizes (bytes as stored) of up to ``count`` messages from ``start``, from the
        consume queue alone; fewer when fewer are there."""

    @abc.abstractmethod
    def read(self, q: Queue, start: int, end: int) -> Iterator[pa.RecordBatch]:
        """Messages of offsets ``[start, end)`` kept by the subscription, as Arrow batches."""

    @abc.abstractmethod
    def commit(self, q: Queue, offset: int) -> None:
        """Records ``offset`` as the read's consumer group progress on ``q``."""

    def arrow_schema(self, opts: ReadOptions) -> pa.Schema:
        """The columns the reads produce."""
        return project(list(opts.columns)) if opts.columns else ARROW_SCHEMA

    @staticmethod
    def open(opts: ReadOptions) -> Catalog:
        """The catalog the options name."""
        if opts.store_path:
            return OfflineCatalog(opts)
        return OnlineCatalog(opts)


class OnlineCatalog(Catalog):
    """Queues of a running cluster; reads pull from the brokers, many pulls in flight."""

    def __init__(self, opts: ReadOptions) -> None:
        assert opts.namesrv
        self.opts = opts
        self._admin: Admin | None = None
        self._client: RemotingClient | None = None

    @property
    def admin(self) -> Admin:
        if self._admin is None:
            self._admin = Admin(self.opts.namesrv or "", **self.opts.access.client_kwargs())
        return self._admin

    def queues(self, topic: str) -> list[Queue]:
        route = self.admin.topic_route(topic)
        if route is None:
            return []
        masters = {b.broker_name: b.master_addr() for b in route.broker_datas}
        out: list[Queue] = []
        for qd in route.queue_datas:
            addr = masters.get(qd.broker_name)
            if not qd.perm & PERM_READ or not addr:
                continue
            out.extend(Queue(topic, qd.broker_name, i, addr) for i in range(qd.read_queue_nums))
        return sorted(out)

    def missing(self, topic: str) -> str | None:
        if self.admin.topic_route(topic) is not None:
            return None
        ns = self.opts.namesrv
        return (
            f"topic {topic} does not exist: the name server {ns} has no route for it"
            f"{_closest(topic, self.admin.topic_list())}. Create it first (rocketpy admin "
            f"updateTopic -n {ns} -c <cluster> -t {topic}, or rocketpy.admin.Admin."
            "create_topic), or set the option failOnMissingTopic=false to read it as empty"
        )

    def _mq(self, q: Queue) -> MessageQueue:
        return MessageQueue(q.topic, q.broker_name, q.queue_id)

    def min_offset(self, q: Queue) -> int:
        return self.admin.min_offset(self._mq(q), q.addr)

    def max_offset(self, q: Queue) -> int:
        return self.admin.max_offset(self._mq(q), q.addr)

    def offset_by_time(self, q: Queue, timestamp_ms: int) -> int:
        return self.admin.search_offset(self._mq(q), timestamp_ms, q.addr)

    def commit(self, q: Queue, offset: int) -> None:
        self.admin.commit_offset(self.opts.group, self._mq(q), offset, q.addr)

    def unit_sizes(self, q: Queue, start: int, count: int) -> list[int]:
        view = self.admin.query_consume_queue(self._mq(q), start, count, broker_addr=q.addr)
        return [u.physic_size for u in view.units]

    def read(self, q: Queue, start: int, end: int) -> Iterator[pa.RecordBatch]:
        if self._client is None:
            self._client = RemotingClient(**self.opts.access.native_kwargs())
        schema = self.arrow_schema(self.opts)
        at = start
        while at < end:
            stop = min(end, at + self.opts.batch_rows)
            cols, at = self._client.pull_columns(
                q.addr, self.opts.group, q.topic, q.queue_id, at, stop, q.broker_name,
                subscription=self.opts.subscription, concurrency=self.opts.pull_concurrency,
                fail_on_data_loss=self.opts.fail_on_data_loss,
                expression_type=self.opts.subscription_type,
            )  # fmt: skip
            if cols["rows"]:
                yield to_record_batch(cols, schema)


class OfflineCatalog(Catalog):
    """Queues of a store directory, read through read-only memory maps (no broker)."""

    def __init__(self, opts: ReadOptions) -> None:
        assert opts.store_path
        self.opts = opts
        self._reader: StoreReader | None = None

    @property
    def reader(self) -> StoreReader:
        if self._reader is None:
            self._reader = StoreReader(self.opts.store_path or "")
        return self._reader

    def commit(self, q: Queue, offset: int) -> None:
        """Nothing to record without a broker (the options refuse the combination)."""

    def queues(self, topic: str) -> list[Queue]:
        name = self.opts.broker_name
        return [Queue(topic, name, i) for i in self.reader.queue_ids(topic)]

    def missing(self, topic: str) -> str | None:
        topics = self.reader.topics()
        if topic in topics:
            return None
        return (
            f"topic {topic} does not exist in the store {self.opts.store_path}: it has no "
            f"consume queue there (never written to){_closest(topic, topics)}. Check the "
            "options topic and storePath, or set the option failOnMissingTopic=false to read "
            "it as empty"
        )

    def min_offset(self, q: Queue) -> int:
        return self.reader.offsets(q.topic, q.queue_id)[0]

    def max_offset(self, q: Queue) -> int:
        return self.reader.offsets(q.topic, q.queue_id)[1]

    def offset_by_time(self, q: Queue, timestamp_ms: int) -> int:
        return self.reader.offset_by_time(q.topic, q.queue_id, timestamp_ms)

    def unit_sizes(self, q: Queue, start: int, count: int) -> list[int]:
        return self.reader.unit_sizes(q.topic, q.queue_id, start, start + count)

    def read(self, q: Queue, start: int, end: int) -> Iterator[pa.RecordBatch]:
        schema = self.arrow_schema(self.opts)
        at = start
        while at < end:
            stop = min(end, at + self.opts.batch_rows)
            cols, at = self.reader.read_columns(
                q.topic, q.queue_id, at, stop, q.broker_name, self.opts.subscription,
                self.opts.subscription_type,
            )  # fmt: skip
            if cols["rows"]:
                yield to_record_batch(cols, schema)


def _closest(topic: str, known: list[str]) -> str:
    """`` (did you mean X?)`` for a likely misspelling of a topic in ``known``."""
    close = difflib.get_close_matches(topic, known, n=1)
    return f" (did you mean {close[0]}?)" if close else ""
