"""The faults of the loop, each injected, held for a while, healed, and followed by a wait for
the cluster to settle (broker-a's master in the route, a SEND_OK from a send started after the
heal, every broker back in the SyncStateSet, every process up):

- ``kill``: kill -9 of the master; restarted on its store after the hold.
- ``pause``: SIGSTOP of the master; SIGCONT after the hold.
- ``partition``: the master cut from the controllers and the other brokers (blackhole routes
  both ways; the name server and the clients still reach it); healed after the hold.
- ``replica``: one replica cut from everyone (its bridge port down); healed after the hold.
- ``controller``: kill -9 of the controller leader; restarted after the hold.
"""

from __future__ import annotations

import json
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checks import Observed, read_epoch_file
from cluster import BROKER_PORT, BROKERS, CONTROLLERS, Cluster

KINDS = ("kill", "pause", "partition", "replica", "controller")
#: Seconds a fault is held before it is healed: drawn uniformly from these ranges. With the
#: default 5 s heartbeat timeout, shorter holds of a pause or a partition end before the
#: controllers replace the master, longer ones after.
HOLDS = {
    "kill": (2.0, 8.0),
    "pause": (2.0, 15.0),
    "partition": (4.0, 20.0),
    "replica": (3.0, 15.0),
    "controller": (2.0, 8.0),
}


class Unsettled(Exception):
    """The cluster did not settle in time after a fault."""


@dataclass
class Fault:
    n: int
    kind: str
    target: str
    hold: float
    t_inject: float
    master_before: str | None
    epoch_before: int | None
    t_heal: float = 0.0
    first_ack: float | None = None  # s from the injection to the first SEND_OK after it
    ack_by: str | None = None
    first_ack_elsewhere: float | None = None  # the same, stored by another broker than the master
    settle: float | None = None  # s from the heal to settled
    master_after: str | None = None
    epoch_after: int | None = None

    def line(self) -> str:
        ack = f"{self.first_ack:6.2f} s by {self.ack_by}" if self.first_ack is not None else "none"
        if self.first_ack_elsewhere is not None and self.first_ack_elsewhere != self.first_ack:
            ack += f" ({self.first_ack_elsewhere:.2f} s on another broker)"
        return (
            f"fault {self.n:3d} {self.kind:10s} {self.target:3s} held {self.hold:5.1f} s | "
            f"first ack after it {ack} | settled {self.settle or 0:5.1f} s after the heal | "
            f"master {self.master_before}/e{self.epoch_before} -> "
            f"{self.master_after}/e{self.epoch_after}"
        )


class SendTail:
    """The load's ``sends.jsonl`` as it grows: each SEND_OK's start, end and storing node."""

    def __init__(self, path: Path, node_of: dict[str, str]) -> None:
        self.path, self.node_of, self._pos = path, node_of, 0
        self.oks: list[tuple[float, float, str]] = []

    def update(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            f.seek(self._pos)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self._pos += end
        for line in data[:end].splitlines():
            rec = json.loads(line)
            if rec.get("st") == "SEND_OK":
                self.oks.append((rec["t0"], rec["t1"], self.node_of.get(rec["at"], rec["at"])))

    def first_ok_after(self, t: float, not_by: str | None = None) -> tuple[float, str] | None:
        """The end and storing node of the first SEND_OK of a send started at or after ``t``
        (stored by another node than ``not_by``)."""
        self.update()
        later = [(t1, at) for t0, t1, at in self.oks if t0 >= t and at != not_by]
        return min(later) if later else None


class Injector:
    """Injects and heals faults on ``cluster``, noting what it sees (states, epoch files)
    in ``observed``; holds drawn from ``rng``."""

    def __init__(
        self,
        cluster: Cluster,
        rng: random.Random,
        observed: Observed,
        holds: dict[str, tuple[float, float]],
        settle_timeout: float,
    ) -> None:
        self.c, self.rng, self.observed, self.holds = cluster, rng, observed, holds
        self.settle_timeout = settle_timeout
        self.tail = SendTail(cluster.work / "sends.jsonl", cluster.broker_of)
        self.all_brokers = sorted(f"{cluster.ips[b]}:{BROKER_PORT}" for b in BROKERS)
        self.last: dict[str, Any] = {}

    def poll(self) -> dict[str, Any]:
        state = self.c.state()
        if state:
            self.observed.state(state)
            self.last = state
        self.sample_epochs()
        return state

    def sample_epochs(self) -> None:
        for b in BROKERS:
            self.observed.epochs(b, read_epoch_file(self.c.store(b)))

    def wait(self, seconds: float) -> None:
        """Sleeps ``seconds``, polling the cluster's state meanwhile."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            started = time.monotonic()
            self.poll()
            time.sleep(max(0.0, min(0.5 - (time.monotonic() - started), end - time.monotonic())))

    def master(self) -> tuple[str, int | None]:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            state = self.poll()
            node = self.c.broker_of.get(state.get("master") or "")
            if node:
                return node, state.get("epoch")
            time.sleep(0.3)
        raise Unsettled(f"no master known to the controllers in 30 s: {self.last}")

    def inject(self, n: int, kind: str) -> Fault:
        master, epoch = self.master()
        lo, hi = self.holds[kind]
        hold = round(self.rng.uniform(lo, hi), 1)
        c = self.c
        if kind in ("kill", "pause", "partition"):
            target = master
        elif kind == "replica":
            target = self.rng.choice(sorted(set(BROKERS) - {master}))
        else:
            leader = c.controller_leader()
            if leader is None:
                raise Unsettled("no controller names a leader")
            target = leader
        if kind in ("kill", "controller"):
            c.procs[target].kill()
        elif kind == "pause":
            c.procs[target].signal(signal.SIGSTOP)
        elif kind == "partition":
            c.net.cut(target, [*CONTROLLERS, *(set(BROKERS) - {target})])
        else:
            c.net.isolate(target)
        # The fault's time: once it is in place (cutting 20 routes takes ~0.15 s).
        fault = Fault(n, kind, target, hold, time.time(), master, epoch)
        self.wait(hold)
        if kind in ("kill", "controller"):
            c.start(target)
        elif kind == "pause":
            c.procs[target].signal(signal.SIGCONT)
        else:
            c.net.heal()
        fault.t_heal = time.time()
        return fault

    def settle(self, fault: Fault) -> None:
        """Waits until the cluster is whole again; fills in the fault's figures."""
        deadline = time.monotonic() + self.settle_timeout
        missing = "nothing yet"
        while time.monotonic() < deadline:
            state = self.poll()
            master = state.get("master")
            dead = [n for n, p in self.c.procs.items() if not p.alive]
            if dead:
                missing = f"processes exited: {dead}"
            elif not master or state.get("route", {}).get("0") != master:
                missing = f"the route's master is not the controllers' ({state})"
            elif self.tail.first_ok_after(fault.t_heal) is None:
                missing = "no SEND_OK from a send started after the heal"
            elif state.get("in_sync") != self.all_brokers:
                missing = f"SyncStateSet is {state.get('in_sync')}"
            else:
                break
            time.sleep(0.3)
        else:
            raise Unsettled(
                f"fault {fault.n} ({fault.kind} of {fault.target}): not settled "
                f"{self.settle_timeout} s after the heal: {missing}"
            )
        fault.settle = time.time() - fault.t_heal
        first = self.tail.first_ok_after(fault.t_inject)
        if first is not None:
            fault.first_ack, fault.ack_by = first[0] - fault.t_inject, first[1]
        first = self.tail.first_ok_after(fault.t_inject, not_by=fault.master_before)
        if first is not None and fault.kind in ("kill", "pause", "partition"):
            fault.first_ack_elsewhere = first[0] - fault.t_inject
        fault.master_after = self.c.broker_of.get(self.last.get("master") or "")
        fault.epoch_after = self.last.get("epoch")
