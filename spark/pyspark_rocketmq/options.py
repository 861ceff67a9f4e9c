"""Reader and writer options. Names follow Spark's Kafka source where the meaning is the same
(``startingOffsets``, ``endingOffsets``, ``startingTimestamp``, ``startingOffsetsByTimestamp``,
``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger``, ``maxTriggerDelay``, ``minPartitions``,
``failOnDataLoss``, ``assign``, ``includeHeaders``); ``maxBytesPerTrigger`` is the file and
Delta sources' soft byte limit."""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark_rocketmq.access import PLAIN, Access
from rocketpy.credentials import SessionCredentials
from rocketpy.errors import ClientError
from rocketpy.selector import check_sql_filter
from rocketpy.tls import TlsOptions
from rocketpy.validate import check_tag_expression

#: ``{"topic": {"brokerName": {"queueId": offset}}}`` (queue ids as strings, as in JSON).
Offsets = dict[str, dict[str, dict[str, int]]]


class OptionError(ValueError):
    """An option is missing, malformed or unknown."""


# The one list of the options the source knows: parsing reads only these, and anything else
# is refused (a misspelled `startingOffset` silently read from `latest` before). The README's
# option tables name the same ones (tests/spark/test_spark_options.py checks both ways).

#: The ACL account and TLS, for reads and writes alike (:func:`access_of`).
ACCESS_OPTIONS = (
    "accessKey", "secretKey", "tls", "tlsCaFile", "tlsVerify", "tlsCertFile", "tlsKeyFile",
)  # fmt: skip

#: Options of ``spark.read`` / ``spark.readStream`` (``subscribe`` is Kafka's ``topic``).
READ_OPTIONS = (
    "namesrv", "storePath", "topic", "subscribe", "assign", "subscription", "sqlFilter",
    "filterPushdown", "startingOffsets", "endingOffsets", "startingTimestamp",
    "endingTimestamp", "startingOffsetsByTimestamp", "endingOffsetsByTimestamp",
    "maxOffsetsPerTrigger", "maxBytesPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay",
    "minPartitions", "maxRecordsPerPartition", "minRecordsPerPartition", "failOnDataLoss",
    "failOnMissingTopic", "brokerName", "groupId", "commitOffsetsToBroker", "includeHeaders",
    "pullConcurrency", "batchRows", *ACCESS_OPTIONS,
)  # fmt: skip

#: Options of ``df.write`` / ``df.writeStream``.
WRITE_OPTIONS = ("namesrv", "topic", "groupId", "batchMessages", "transactional", *ACCESS_OPTIONS)

#: What Spark itself adds to a streaming write's options (seen in PySpark 4.3: the query's
#: ``checkpointLocation`` and ``queryName``, in lower case, when the query has them).
SPARK_STREAM_WRITE_OPTIONS = ("checkpointLocation", "queryName")

_NO_PATH = (
    "the rocketmq source takes no path (load(path), save(path), start(path)): give the "
    "options namesrv and topic, or storePath for a store directory"
)


def check_known(options: Iterable[str], kind: str) -> None:
    """Refuses options the source does not know, naming the closest known one. ``kind`` is
    ``read``, ``streaming read``, ``write`` or ``streaming write``. Spark hands the names
    over in lower case, so they are compared without case (as Spark's own sources do)."""
    known = WRITE_OPTIONS if kind.endswith("write") else READ_OPTIONS
    if kind == "streaming write":
        known = (*known, *SPARK_STREAM_WRITE_OPTIONS)
    by_lower = {k.lower(): k for k in known}
    problems = []
    for given in options:
        name = given.lower()
        if name in by_lower:
            continue
        if name == "path":
            raise OptionError(_NO_PATH)
        problems.append(_unknown(given, kind, by_lower))
    if problems:
        raise OptionError("; ".join(problems) + " (spark/README.md lists the options)")


def _unknown(given: str, kind: str, by_lower: dict[str, str]) -> str:
    """Why ``given`` is refused, and what to write instead."""
    name = given.lower()
    elsewhere = {k.lower(): k for k in (*READ_OPTIONS, *WRITE_OPTIONS)}
    if name in elsewhere:
        other = "writes" if kind.endswith("read") else "reads"
        return f"option {elsewhere[name]} applies to {other}, not to a {kind}"
    spark_own = {k.lower(): k for k in SPARK_STREAM_WRITE_OPTIONS}
    if name in spark_own:
        return f"option {spark_own[name]} belongs to a streaming query: give it to writeStream"
    close = difflib.get_close_matches(name, list(by_lower), n=1)
    hint = (
        f"did you mean {by_lower[close[0]]}?"
        if close
        else f"the options are {', '.join(sorted(by_lower.values(), key=str.lower))}"
    )
    return f"unknown option {given!r} for a rocketmq {kind}: {hint}"


def _get(options: Mapping[str, str], name: str) -> str | None:
    # Spark passes options case-insensitively; accept any case.
    for k, v in options.items():
        if k.lower() == name.lower():
            return v
    return None


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    v = _get(options, name)
    if v is None:
        return default
    if v.strip().lower() in ("true", "1", "yes"):
        return True
    if v.strip().lower() in ("false", "0", "no"):
        return False
    raise OptionError(f"option {name} must be true or false, got {v!r}")


def _int(options: Mapping[str, str], name: str) -> int | None:
    v = _get(options, name)
    if v is None or v.strip() == "":
        return None
    try:
        return int(v)
    except ValueError:
        raise OptionError(f"option {name} must be an integer, got {v!r}") from None


_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h|d)?\s*$", re.IGNORECASE)
_UNIT_MS = {"": 1, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def _duration_ms(options: Mapping[str, str], name: str, default_ms: int) -> int:
    """A duration like Spark's (``15m``, ``30s``, ``500ms``, ``1h``, ``2d``; a bare number is
    milliseconds)."""
    v = _get(options, name)
    if v is None or v.strip() == "":
        return default_ms
    m = _DURATION.match(v)
    if not m:
        raise OptionError(f"option {name} must be a duration like 15m, 30s or 500ms, got {v!r}")
    return int(m.group(1)) * _UNIT_MS[(m.group(2) or "").lower()]


#: ``minRecordsPerPartition``'s default: enough rows that a task's fixed cost (~100 ms for a
#: Python data source task) is small next to reading them (~1 M rows/s per core).
DEFAULT_PACK_RECORDS = 100_000

_BYTES = re.compile(r"^\s*(\d+)\s*(b|k|kb|m|mb|g|gb|t|tb)?\s*$", re.IGNORECASE)
_UNIT_BYTES = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _bytes(options: Mapping[str, str], name: str) -> int | None:
    """A size like Spark's byte strings (``512k``, ``64m``, ``1g``, ``1gb``; a bare number is
    bytes; powers of 1024)."""
    v = _get(options, name)
    if v is None or v.strip() == "":
        return None
    m = _BYTES.match(v)
    if not m or int(m.group(1)) <= 0:
        raise OptionError(f"option {name} must be a positive size like 64m or 1g, got {v!r}")
    return int(m.group(1)) * _UNIT_BYTES[(m.group(2) or "")[:1].lower()]


def access_of(options: Mapping[str, str]) -> Access:
    """``accessKey`` / ``secretKey`` (the ACL account, both or neither) and ``tls`` with
    ``tlsCaFile`` (else the system's CAs), ``tlsVerify`` (default true) and ``tlsCertFile`` /
    ``tlsKeyFile`` (a client certificate, both or neither)."""
    ak, sk = _get(options, "accessKey"), _get(options, "secretKey")
    if bool(ak) != bool(sk):
        raise OptionError("give the options accessKey and secretKey together")
    credentials = SessionCredentials(ak, sk) if ak and sk else None
    files = {n: _get(options, n) for n in ("tlsCaFile", "tlsCertFile", "tlsKeyFile")}
    if not _bool(options, "tls", False):
        given = [n for n, v in files.items() if v]
        given += ["tlsVerify"] if _get(options, "tlsVerify") is not None else []
        if given:
            raise OptionError(f"option {given[0]} needs the option tls=true")
        return Access(credentials)
    if bool(files["tlsCertFile"]) != bool(files["tlsKeyFile"]):
        raise OptionError("give the options tlsCertFile and tlsKeyFile together")
    tls = TlsOptions(
        ca_file=files["tlsCaFile"],
        verify=_bool(options, "tlsVerify", True),
        cert_file=files["tlsCertFile"],
        key_file=files["tlsKeyFile"],
    )
    return Access(credentials, tls)


def _filter_pushdown(options: Mapping[str, str], streaming: bool) -> bool:
    on = _bool(options, "filterPushdown", False)
    if on and streaming:
        raise OptionError(
            "option filterPushdown applies to batch reads only (Spark pushes no filters to "
            "streaming Python sources); use subscription or sqlFilter"
        )
    return on


def derived_group(topics: tuple[str, ...], subscription: str) -> str:
    """The consumer group a reader uses when ``groupId`` is not given: stable for the same
    topics and tag filter, so a restarted query reports under the same name."""
    digest = hashlib.sha1("|".join([*sorted(topics), subscription]).encode()).hexdigest()
    return f"spark-rocketmq-{digest[:12]}"


#: ``assign``: queue ids per topic, optionally per broker name (None = every broker).
Assignment = dict[str, dict[str | None, frozenset[int]]]


def parse_assign(value: str) -> Assignment:
    """``{"topic": [0, 1]}`` (those queue ids on every broker) or
    ``{"topic": {"broker-a": [0, 1]}}`` — Kafka's ``assign`` with RocketMQ's broker level."""
    try:
        parsed: Any = json.loads(value)
    except json.JSONDecodeError:
        parsed = None
    bad = OptionError(
        f'option assign must be JSON like {{"topic": [0, 1]}} or '
        f'{{"topic": {{"broker-a": [0, 1]}}}}, got {value!r}'
    )
    if not isinstance(parsed, dict) or not parsed:
        raise bad

    def ids(v: Any) -> frozenset[int]:
        if not isinstance(v, list) or not all(isinstance(i, int) and i >= 0 for i in v):
            raise bad
        return frozenset(v)

    out: Assignment = {}
    for topic, spec in parsed.items():
        if isinstance(spec, list):
            out[topic] = {None: ids(spec)}
        elif isinstance(spec, dict) and spec:
            out[topic] = {str(b): ids(v) for b, v in spec.items()}
        else:
            raise bad
    return out


def parse_position(value: str | None, name: str, default: str) -> str | Offsets:
    """``earliest``, ``latest`` or the JSON offsets form."""
    v = (value or default).strip()
    if v in ("earliest", "latest"):
        return v
    try:
        parsed: Any = json.loads(v)
    except json.JSONDecodeError:
        raise OptionError(
            f'option {name} must be "earliest", "latest" or JSON like '
            f'{{"topic": {{"brokerName": {{"0": 42}}}}}}, got {v!r}'
        ) from None
    if not isinstance(parsed, dict):
        raise OptionError(f"option {name}: the JSON must be an object, got {v!r}")
    out: Offsets = {}
    for topic, brokers in parsed.items():
        if not isinstance(brokers, dict):
            raise OptionError(f"option {name}: {topic!r} must map broker names to queues")
        for broker, queues in brokers.items():
            if not isinstance(queues, dict):
                raise OptionError(f"option {name}: {topic}/{broker} must map queue ids to offsets")
            for q, off in queues.items():
                if not isinstance(off, int) or not str(q).lstrip("-").isdigit():
                    raise OptionError(f"option {name}: {topic}/{broker}/{q} needs an int offset")
                out.setdefault(topic, {}).setdefault(broker, {})[str(int(q))] = off
    return out


@dataclass(frozen=True)
class ReadOptions:
    """Everything a reader needs, parsed once on the driver (picklable)."""

    topics: tuple[str, ...]
    namesrv: str | None
    store_path: str | None
    broker_name: str
    #: The tag expression, or with ``subscription_type`` SQL92 the ``sqlFilter`` expression.
    subscription: str
    group: str
    starting: str | Offsets
    ending: str | Offsets
    starting_timestamp: int | None
    ending_timestamp: int | None
    max_offsets_per_trigger: int | None
    #: A soft limit on the bytes (records as stored) of one micro-batch; sizes are sampled
    #: from the queues' consume-queue units.
    max_bytes_per_trigger: int | None
    #: With ``maxTriggerDelay``: a micro-batch waits for this many new messages, at most
    #: that long since the last micro-batch (Kafka's ``minOffsetsPerTrigger``).
    min_offsets_per_trigger: int | None
    max_trigger_delay_ms: int
    min_partitions: int | None
    #: Kafka's ``maxRecordsPerPartition``: longer queue ranges are cut.
    max_records_per_partition: int | None
    #: Queue ranges shorter than this are packed into shared tasks (None: never).
    min_records_per_partition: int | None
    fail_on_data_loss: bool
    pull_concurrency: int
    batch_rows: int
    #: Per-queue start (and, batch, end) timestamps: ``{"topic": {"broker": {"queueId": ms}}}``.
    starting_by_timestamp: Offsets | None = None
    ending_by_timestamp: Offsets | None = None
    #: ``assign``: only these queues (None: every queue of ``topics``).
    assign: Assignment | None = None
    #: Record processed offsets as ``group``'s progress on the brokers (online reads only).
    commit_offsets: bool = False
    #: The columns produced: all by default, fewer with a user-given schema (pruning).
    columns: tuple[str, ...] = ()
    #: The ACL account reads sign with and their TLS (:func:`access_of`).
    access: Access = PLAIN
    #: ``TAG`` (``subscription`` is tags) or ``SQL92`` (the ``sqlFilter`` option).
    subscription_type: str = "TAG"
    #: Batch reads: push ``tags`` conditions to the broker (option ``filterPushdown``).
    filter_pushdown: bool = False
    #: A topic that does not exist when the read starts is an error (else read as empty).
    fail_on_missing_topic: bool = True

    @staticmethod
    def parse(options: Mapping[str, str], streaming: bool) -> ReadOptions:
        """Validates ``options``; raises :class:`OptionError` with the option's name."""
        check_known(options, "streaming read" if streaming else "read")
        assign_spec = _get(options, "assign")
        assign = parse_assign(assign_spec) if assign_spec else None
        topic = _get(options, "topic") or _get(options, "subscribe")
        if assign is not None and topic:
            raise OptionError("give either the option assign or topic, not both")
        if assign is not None:
            topics = tuple(assign)
        elif not topic:
            raise OptionError("option topic is required (one topic or a comma-separated list)")
        else:
            topics = tuple(t.strip() for t in topic.split(",") if t.strip())
        namesrv = _get(options, "namesrv")
        store_path = _get(options, "storePath")
        if bool(namesrv) == bool(store_path):
            raise OptionError("give exactly one of the options namesrv (online) and storePath")
        positive = (
            "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "minPartitions",
            "maxRecordsPerPartition", "minRecordsPerPartition",
        )  # fmt: skip
        for name in positive:
            v = _int(options, name)
            if v is not None and v <= 0:
                raise OptionError(f"option {name} must be positive, got {v}")
        if not streaming:
            for name in ("minOffsetsPerTrigger", "maxTriggerDelay", "maxBytesPerTrigger"):
                if _get(options, name) is not None:
                    raise OptionError(f"option {name} applies to streaming reads only")
        _bool(options, "includeHeaders", True)  # checked; properties are always a column
        commit = _bool(options, "commitOffsetsToBroker", streaming)
        if commit and store_path:
            if _get(options, "commitOffsetsToBroker") is not None:
                raise OptionError("option commitOffsetsToBroker needs namesrv (an online read)")
            commit = False
        subscription = _get(options, "subscription") or "*"
        try:
            check_tag_expression(subscription)
        except ClientError as e:
            raise OptionError(f"option subscription: {e}") from e
        subscription_type = "TAG"
        sql = _get(options, "sqlFilter")
        if sql is not None:
            if subscription.strip() != "*":
                raise OptionError(
                    "give either the option subscription (tags) or sqlFilter (an SQL92 "
                    "filter, which can test TAGS too), not both"
                )
            try:
                check_sql_filter(sql)
            except ClientError as e:
                raise OptionError(f"option sqlFilter: {e}") from e
            subscription, subscription_type = sql.strip(), "SQL92"
        by_ts = _get(options, "startingOffsetsByTimestamp")
        end_ts = _get(options, "endingOffsetsByTimestamp")
        if end_ts is not None and streaming:
            raise OptionError("option endingOffsetsByTimestamp applies to batch reads only")
        return ReadOptions(
            topics=topics,
            namesrv=namesrv,
            store_path=store_path,
            broker_name=_get(options, "brokerName") or "broker-a",
            subscription=subscription,
            subscription_type=subscription_type,
            filter_pushdown=_filter_pushdown(options, streaming),
            group=_get(options, "groupId") or derived_group(topics, subscription),
            starting=parse_position(
                _get(options, "startingOffsets"),
                "startingOffsets",
                "latest" if streaming else "earliest",
            ),
            ending=parse_position(_get(options, "endingOffsets"), "endingOffsets", "latest"),
            starting_timestamp=_int(options, "startingTimestamp"),
            ending_timestamp=_int(options, "endingTimestamp"),
            max_offsets_per_trigger=_int(options, "maxOffsetsPerTrigger"),
            max_bytes_per_trigger=_bytes(options, "maxBytesPerTrigger"),
            min_offsets_per_trigger=_int(options, "minOffsetsPerTrigger"),
            max_trigger_delay_ms=_duration_ms(options, "maxTriggerDelay", 15 * 60_000),
            min_partitions=_int(options, "minPartitions"),
            max_records_per_partition=_int(options, "maxRecordsPerPartition"),
            min_records_per_partition=_int(options, "minRecordsPerPartition")
            or DEFAULT_PACK_RECORDS,
            fail_on_data_loss=_bool(options, "failOnDataLoss", True),
            fail_on_missing_topic=_bool(options, "failOnMissingTopic", True),
            pull_concurrency=_int(options, "pullConcurrency") or 16,
            batch_rows=_int(options, "batchRows") or 16384,
            starting_by_timestamp=_by_timestamp(by_ts, "startingOffsetsByTimestamp"),
            ending_by_timestamp=_by_timestamp(end_ts, "endingOffsetsByTimestamp"),
            assign=assign,
            commit_offsets=commit,
            access=access_of(options),
        )


def _by_timestamp(value: str | None, name: str) -> Offsets | None:
    """``{"topic": {"brokerName": {"queueId": ms}}}``: a timestamp per queue."""
    if value is None:
        return None
    parsed = parse_position(value, name, "")
    if not isinstance(parsed, dict):
        raise OptionError(
            f'option {name} must be JSON like {{"topic": {{"broker-a": {{"0": 1700000000000}}}}}}'
        )
    return parsed
