"""The outcome: a table of the medians on stdout and every round's numbers in a JSON file."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from benches.peers.results import Result, median_of
from benches.peers.servers import SERVERS
from benches.peers.settings import Settings
from benches.peers.workloads import WORKLOADS, Workload

#: The system whose ratio to the best peer the table gives.
SUBJECT = "rocketpy"


@dataclass
class Record:
    """Everything measured so far, round by round."""

    settings: Settings
    rounds: list[dict[str, Any]] = field(default_factory=list)
    #: Successful runs by system and workload key.
    runs: dict[str, dict[str, list[Result]]] = field(default_factory=dict)

    def add(self, round_no: int, system: str, key: str, outcome: Result | str) -> None:
        """Keeps one run's result, or its error message."""
        entry = self.rounds[round_no].setdefault("results", {}).setdefault(system, {})
        if isinstance(outcome, str):
            entry[key] = {"error": outcome}
            return
        entry[key] = outcome.as_dict()
        self.runs.setdefault(system, {}).setdefault(key, []).append(outcome)

    def medians(self) -> dict[str, dict[str, dict[str, float]]]:
        """The median of each workload's rounds, by system."""
        return {
            system: {key: median_of(runs) for key, runs in by_key.items()}
            for system, by_key in self.runs.items()
        }


def _best_peer(
    medians: dict[str, dict[str, dict[str, float]]], w: Workload
) -> tuple[str, dict[str, float]] | None:
    """The peer with the highest rate, or for latency the lowest p50."""
    peers = [(s, m[w.key]) for s, m in medians.items() if s != SUBJECT and w.key in m]
    if not peers:
        return None
    if w.latency:
        return min(peers, key=lambda p: p[1]["p50_ms"])
    return max(peers, key=lambda p: p[1]["rate"])


def _triple(m: dict[str, float]) -> str:
    return f"{m['p50_ms']:.3f}/{m['p99_ms']:.3f}/{m['p999_ms']:.3f} ms"


def _cell(w: Workload, m: dict[str, float] | None) -> str:
    if m is None:
        return "-"
    errors = f" ({m['errors']:.0f} failed)" if m.get("errors") else ""
    if w.latency:
        return f"{_triple(m)}, {m['rate']:,.0f}/s{errors}"
    return f"{m['rate']:,.0f} msg/s{errors}"


def ratios(medians: dict[str, dict[str, dict[str, float]]]) -> dict[str, dict[str, Any]]:
    """Per workload: the best peer and rocketpy's figures against it."""
    out: dict[str, dict[str, Any]] = {}
    mine = medians.get(SUBJECT, {})
    for w in WORKLOADS:
        best = _best_peer(medians, w)
        if best is None or w.key not in mine:
            continue
        peer, theirs = best
        if w.latency:
            out[w.key] = {
                "best_peer": peer,
                "p50_ratio": round(mine[w.key]["p50_ms"] / theirs["p50_ms"], 3),
                "p99_ratio": round(mine[w.key]["p99_ms"] / theirs["p99_ms"], 3),
                "p999_ratio": round(mine[w.key]["p999_ms"] / theirs["p999_ms"], 3),
            }
        elif theirs["rate"] > 0:
            out[w.key] = {
                "best_peer": peer,
                "rate_ratio": round(mine[w.key]["rate"] / theirs["rate"], 3),
            }
    return out


def _comparison(w: Workload, medians: dict[str, dict[str, dict[str, float]]]) -> str:
    best = _best_peer(medians, w)
    mine = medians.get(SUBJECT, {}).get(w.key)
    if best is None or mine is None:
        return "-"
    peer, theirs = best
    if w.latency:
        return f"{_triple(mine)} vs {peer} {_triple(theirs)}"
    if theirs["rate"] <= 0:
        return "-"
    return f"{mine['rate'] / theirs['rate']:.2f} (vs {peer})"


def table(record: Record) -> str:
    """The medians as a Markdown table, then each system's durability setting."""
    s = record.settings
    medians = record.medians()
    header = ["workload", *(SERVERS[x].title for x in s.systems), "rocketpy / best peer"]
    rows = [
        [
            w.label(s),
            *(_cell(w, medians.get(x, {}).get(w.key)) for x in s.systems),
            _comparison(w, medians),
        ]
        for w in WORKLOADS
        if w.key in s.workloads
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(n) for c, n in zip(cells, widths, strict=True)) + " |"

    lines = [line(header), "|" + "|".join("-" * (n + 2) for n in widths) + "|"]
    lines += [line(r) for r in rows]
    lines.append("")
    lines.append(
        f"Medians of {len(record.rounds)} round(s); latency cells: p50/p99/p99.9 and requests/s; "
        "for latency the best peer is the one with the lowest p50."
    )
    lines += [f"- {SERVERS[x].title}: {SERVERS[x].durability}" for x in s.systems]
    lines += _cpu_lines(record, medians)
    return "\n".join(lines)


def _cpu_lines(record: Record, medians: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    """Per throughput workload, each system's CPU per message: its server's and the rest's."""
    out = []
    for w in WORKLOADS:
        cells = [
            f"{x} {m['server_us_per_msg']:.1f} + {m['others_us_per_msg']:.1f}"
            for x in record.settings.systems
            if (m := medians.get(x, {}).get(w.key)) and "server_us_per_msg" in m
        ]
        if cells:
            out.append(f"- {w.label(record.settings)}: " + ", ".join(cells))
    if out:
        out.insert(
            0,
            "CPU per acknowledged (or read) message, microseconds: server + everything else on the "
            "machine (clients, kernel), medians (benches/peers/cpu.py):",
        )
    return out


def write_json(
    record: Record, started: str, machine: dict[str, object], versions: dict[str, Any]
) -> None:
    """Writes every round, the medians, the machine and the versions to ``settings.out``."""
    medians = record.medians()
    document = {
        "date": started,
        "settings": record.settings.as_dict(),
        "machine": machine,
        "versions": versions,
        "durability": {x: SERVERS[x].durability for x in record.settings.systems},
        "workloads": {w.key: w.label(record.settings) for w in WORKLOADS},
        "rounds": record.rounds,
        "medians": medians,
        "rocketpy_vs_best_peer": ratios(medians),
    }
    out = record.settings.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=2) + "\n")
