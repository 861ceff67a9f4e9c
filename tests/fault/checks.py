"""What the fault loop checks after a run, from what it recorded: the load's ``sends.jsonl``
and ``reads.jsonl`` (client.py), each broker's final log (``dump-<node>.jsonl``, read queue by
queue from that broker), the epoch files seen during the run and at its end, and the
controller's (epoch, master) pairs seen by the agent.

Each check returns a list of violations (strings with the evidence); empty is a pass."""

from __future__ import annotations

import json
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def read_lines(path: Path) -> list[dict[str, Any]]:
    """A JSON lines file (a torn last line, from a kill, is left out)."""
    out = []
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def read_epoch_file(store: Path) -> list[tuple[int, int]] | None:
    """``epochFileCheckpoint`` of a store (crates/store/src/epoch_cache.rs: the entry count,
    the masked CRC-32 of the entry lines, then ``<epoch>-<startOffset>`` lines), or its
    ``.bak``; None when neither exists or parses."""
    for name in ("epochFileCheckpoint", "epochFileCheckpoint.bak"):
        try:
            lines = (store / name).read_text().split("\n")
            count, crc = int(lines[0]), int(lines[1])
            entries = lines[2 : 2 + count]
            checked = "".join(e + "\n" for e in entries).encode()
            if len(entries) != count or (crc and crc != zlib.crc32(checked) & 0x7FFFFFFF):
                continue
            pairs = [tuple(int(x) for x in e.split("-", 1)) for e in entries]
            return [(p[0], p[1]) for p in pairs]
        except (OSError, ValueError, IndexError):
            continue
    return None


@dataclass
class Observed:
    """What the loop saw while it ran: epoch file entries per broker, and the controller's
    master of each epoch."""

    epoch_starts: dict[int, set[tuple[str, int]]] = field(default_factory=lambda: defaultdict(set))
    epoch_masters: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))

    def epochs(self, broker: str, table: list[tuple[int, int]] | None) -> None:
        for epoch, start in table or []:
            self.epoch_starts[epoch].add((broker, start))

    def state(self, state: dict[str, Any]) -> None:
        if state.get("master") and state.get("epoch") is not None:
            self.epoch_masters[int(state["epoch"])].add(state["master"])


def epoch_of(table: list[tuple[int, int]], phys: int) -> int | None:
    """The epoch whose range holds CommitLog offset ``phys``."""
    found = None
    for epoch, start in table:
        if start <= phys:
            found = epoch
    return found


@dataclass
class Report:
    violations: dict[str, list[str]]
    figures: dict[str, Any]

    @property
    def ok(self) -> bool:
        return not any(self.violations.values())


def by_key(records: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("k"):
            out[r["k"]].append(r)
    return out


def check(
    work: Path,
    final: str,
    dumps: dict[str, dict[str, Any]],
    tables: dict[str, list[tuple[int, int]] | None],
    observed: Observed,
) -> Report:
    """Every check, ``final`` being the final master's node, ``dumps`` each broker's
    ``dump`` answer (per queue: min, max, read, problems) and ``tables`` the final epoch
    files."""
    sends = read_lines(work / "sends.jsonl")
    reads = [r for r in read_lines(work / "reads.jsonl") if r.get("k")]
    log = read_lines(work / f"dump-{final}.jsonl")
    where = by_key(log)
    v: dict[str, list[str]] = {}

    def not_in_final_log(rows: list[dict[str, Any]], what: str, when: str) -> list[str]:
        """The rows (sends or reads) whose queue, offset and CommitLog place the final log
        does not hold for their key."""
        out = []
        for r in rows:
            places = [(x["q"], x["o"], x["phys"]) for x in where.get(r["k"], [])]
            if (r["q"], r["o"], r["phys"]) not in places:
                out.append(f"{r['k']} {what} at q{r['q']}/o{r['o']}/phys {r['phys']} by "
                           f"{r['at']} at {r[when]:.3f}; in the final log: {places or 'absent'}")  # fmt: skip
        return out

    acked = [s for s in sends if s.get("st") == "SEND_OK"]
    v["acknowledged message lost (or moved)"] = not_in_final_log(acked, "acked", "t1")
    v["message read, then not in the final log (rolled back)"] = not_in_final_log(
        reads, "read", "t"
    )

    gaps = []
    for node, d in dumps.items():
        for q, info in d["queues"].items():
            if info["problems"] or info["read"] != info["max"] - info["min"]:
                gaps.append(f"{node} queue {q}: offsets [{info['min']}, {info['max']}), "
                            f"{info['read']} read: {info['problems'][:5]}")  # fmt: skip
    per_queue: dict[int, list[int]] = defaultdict(list)
    for r in log:
        per_queue[r["q"]].append(r["o"])
    for q, offsets in per_queue.items():
        if offsets != list(range(offsets[0], offsets[0] + len(offsets))):
            gaps.append(f"final log queue {q}: offsets not contiguous")
    v["queue offsets not gapless"] = gaps

    diverged = []
    final_set = {(r["k"], r["q"], r["o"], r["phys"]) for r in log}
    for node in dumps:
        if node == final:
            continue
        other = {
            (r["k"], r["q"], r["o"], r["phys"]) for r in read_lines(work / f"dump-{node}.jsonl")
        }
        if other != final_set:
            diverged.append(f"{node}: {len(other - final_set)} entries the master lacks "
                            f"(e.g. {sorted(other - final_set)[:3]}), {len(final_set - other)} "
                            f"it lacks (e.g. {sorted(final_set - other)[:3]})")  # fmt: skip
    v["replica log differs from the final master's"] = diverged

    two = []
    table = tables.get(final) or []
    writers: dict[int | None, set[str]] = defaultdict(set)
    for s in acked:
        writers[epoch_of(table, s["phys"])].add(s["at"])
    for epoch, who in sorted(writers.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)):
        if epoch is None or len(who) > 1:
            two.append(f"acks in epoch {epoch} (final table {table}) came from {sorted(who)}")
    for node, t in tables.items():
        observed.epochs(node, t)  # the end's tables too (the loop saw the others on its way)
    for epoch, starts in sorted(observed.epoch_starts.items()):
        if len({s for _, s in starts}) > 1:
            two.append(f"epoch {epoch} starts at different offsets: {sorted(starts)}")
    for epoch, masters in sorted(observed.epoch_masters.items()):
        if len(masters) > 1:
            two.append(f"the controllers named masters {sorted(masters)} in epoch {epoch}")
    v["two masters in one epoch"] = two

    counts = Counter(r["k"] for r in log)
    failed = [s for s in sends if s.get("st") != "SEND_OK"]
    figures = {
        "sends": len(sends),
        "acknowledged": len(acked),
        "failed or not SEND_OK": len(failed),
        "failed but in the final log": sum(1 for s in failed if s["k"] in where),
        "reads": len(reads),
        "acknowledged and read by the consumer": len(
            {s["k"] for s in acked} & {r["k"] for r in reads}
        ),
        "final log messages": len(log),
        "duplicates in the final log": sum(n - 1 for n in counts.values()),
        "epochs (final master's table)": table,
    }
    return Report(v, figures)


def first_ack_after(sends: list[dict[str, Any]], t: float) -> dict[str, Any] | None:
    """The first SEND_OK of a send that started at or after ``t``."""
    later = [s for s in sends if s.get("st") == "SEND_OK" and s["t0"] >= t]
    return min(later, key=lambda s: s["t1"]) if later else None


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]
