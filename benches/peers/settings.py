"""The benchmark's knobs, read from ``PEER_*`` environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

#: The systems, in the order of the first round and of the table's columns.
SYSTEMS = ("rocketpy", "nats", "redis")
#: The workloads' keys (``benches.peers.workloads``), in the order they run.
WORKLOAD_KEYS = ("produce", "latency", "consume", "produce_procs", "bulk", "consume_listener")


def _env_choice(name: str, choices: tuple[str, ...]) -> tuple[str, ...]:
    """The comma-separated subset of ``choices`` that ``name`` names (all by default), in the
    order of ``choices``."""
    chosen = {s.strip() for s in os.environ.get(name, ",".join(choices)).split(",")}
    unknown = sorted(chosen - set(choices))
    if unknown or not chosen:
        raise SystemExit(f"{name}: unknown {unknown}; choose among {choices}")
    return tuple(c for c in choices if c in chosen)


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    number = int(value.replace("_", ""))
    if number < 1:
        raise SystemExit(f"{name} must be at least 1, not {number}")
    return number


def _env_float(name: str, default: float) -> float:
    value = os.environ.get(name, "").strip()
    number = float(value) if value else default
    if number <= 0:
        raise SystemExit(f"{name} must be positive, not {number}")
    return number


@dataclass(frozen=True)
class Settings:
    """What to run, and how long.

    Attributes:
        seconds: duration of each timed producer workload, (a), (b) and (d) (``PEER_SECONDS``).
        rounds: rounds of every workload on every system (``PEER_ROUNDS``).
        backlog: messages stored before the consumer workload (c) reads them, and sent by
            the bulk workload (e) (``PEER_BACKLOG``); (f) reads (c)'s backlog again.
        procs: producer processes of workload (d) (``PEER_PROCS``).
        window: messages a throughput producer has unanswered at most (``PEER_WINDOW``);
            Redis sends its pipelines this long.
        fetch: entries per Redis XREAD, and messages per cumulative ack of the NATS
            consumer (which has ``10 * fetch`` unacknowledged at most) (``PEER_FETCH``).
        small: body bytes of the throughput workloads (``PEER_SMALL``).
        large: body bytes of the latency workload (``PEER_LARGE``).
        systems: which systems to run (``PEER_SYSTEMS``, comma-separated).
        workloads: which workloads to run (``PEER_WORKLOADS``: produce, latency, consume,
            produce_procs, bulk, consume_listener).
        out: the JSON file (``PEER_OUT``).
    """

    seconds: float = 10.0
    rounds: int = 3
    backlog: int = 1_000_000
    procs: int = 16
    window: int = 4096
    fetch: int = 1000
    small: int = 100
    large: int = 1024
    systems: tuple[str, ...] = SYSTEMS
    workloads: tuple[str, ...] = WORKLOAD_KEYS
    out: Path = Path("target/bench-peers.json")

    @staticmethod
    def from_env() -> Settings:
        """The settings the environment asks for, the defaults otherwise."""
        d = Settings()
        return Settings(
            seconds=_env_float("PEER_SECONDS", d.seconds),
            rounds=_env_int("PEER_ROUNDS", d.rounds),
            backlog=_env_int("PEER_BACKLOG", d.backlog),
            procs=_env_int("PEER_PROCS", d.procs),
            window=_env_int("PEER_WINDOW", d.window),
            fetch=_env_int("PEER_FETCH", d.fetch),
            small=_env_int("PEER_SMALL", d.small),
            large=_env_int("PEER_LARGE", d.large),
            systems=_env_choice("PEER_SYSTEMS", SYSTEMS),
            workloads=_env_choice("PEER_WORKLOADS", WORKLOAD_KEYS),
            out=Path(os.environ.get("PEER_OUT", str(d.out))),
        )

    def as_dict(self) -> dict[str, object]:
        """The settings for the JSON report."""
        out: dict[str, object] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = str(value) if isinstance(value, Path) else value
        return out
