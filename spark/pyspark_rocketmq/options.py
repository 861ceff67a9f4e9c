"""Reader and writer options. Names follow Spark's Kafka source where the meaning is the same
(``startingOffsets``, ``endingOffsets``, ``startingTimestamp``, ``maxOffsetsPerTrigger``,
``minPartitions``, ``failOnDataLoss``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: ``{"topic": {"brokerName": {"queueId": offset}}}`` (queue ids as strings, as in JSON).
Offsets = dict[str, dict[str, dict[str, int]]]


class OptionError(ValueError):
    """An option is missing or malformed."""


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
    subscription: str
    group: str
    starting: str | Offsets
    ending: str | Offsets
    starting_timestamp: int | None
    ending_timestamp: int | None
    max_offsets_per_trigger: int | None
    min_partitions: int | None
    fail_on_data_loss: bool
    pull_concurrency: int
    batch_rows: int
    #: The columns produced: all by default, fewer with a user-given schema (pruning).
    columns: tuple[str, ...] = ()

    @staticmethod
    def parse(options: Mapping[str, str], streaming: bool) -> ReadOptions:
        """Validates ``options``; raises :class:`OptionError` with the option's name."""
        topic = _get(options, "topic") or _get(options, "subscribe")
        if not topic:
            raise OptionError("option topic is required (one topic or a comma-separated list)")
        topics = tuple(t.strip() for t in topic.split(",") if t.strip())
        namesrv = _get(options, "namesrv")
        store_path = _get(options, "storePath")
        if bool(namesrv) == bool(store_path):
            raise OptionError("give exactly one of the options namesrv (online) and storePath")
        for name in ("maxOffsetsPerTrigger", "minPartitions"):
            v = _int(options, name)
            if v is not None and v <= 0:
                raise OptionError(f"option {name} must be positive, got {v}")
        return ReadOptions(
            topics=topics,
            namesrv=namesrv,
            store_path=store_path,
            broker_name=_get(options, "brokerName") or "broker-a",
            subscription=_get(options, "subscription") or "*",
            group=_get(options, "groupId") or "rocketpy-spark-reader",
            starting=parse_position(
                _get(options, "startingOffsets"),
                "startingOffsets",
                "latest" if streaming else "earliest",
            ),
            ending=parse_position(_get(options, "endingOffsets"), "endingOffsets", "latest"),
            starting_timestamp=_int(options, "startingTimestamp"),
            ending_timestamp=_int(options, "endingTimestamp"),
            max_offsets_per_trigger=_int(options, "maxOffsetsPerTrigger"),
            min_partitions=_int(options, "minPartitions"),
            fail_on_data_loss=_bool(options, "failOnDataLoss", True),
            pull_concurrency=_int(options, "pullConcurrency") or 16,
            batch_rows=_int(options, "batchRows") or 16384,
        )
