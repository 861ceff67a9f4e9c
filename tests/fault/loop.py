"""A Jepsen-style fault loop for controller mode (issue 43): 3 controllers, a name server and
3 brokers of group broker-a, each in a network namespace of its own on a private bridge
(netns.py), a SYNC producer and a consumer in a client namespace (client.py), and faults drawn
at random from a seed (faults.py): kill -9, pause and partition of the master, partition of a
replica, kill -9 of the controller leader. After the faults the load stops, the replicas catch
up, every broker's log is read queue by queue, and checks.py says whether an acknowledged
message was lost, a message read was rolled back, two masters wrote in one epoch, or a queue
has a gap. Prints the seed, one line per fault, the figures, and any violation with its
evidence; exits 1 on a violation.

    python tests/fault/loop.py --faults 100 --seed 7     # as root (`make fault-loop`)
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from checks import Observed, Report, check, percentile, read_epoch_file, read_lines
from cluster import BROKER_PORT, BROKERS, QUEUES, TOPIC, Cluster
from faults import HOLDS, KINDS, Fault, Injector, Unsettled
from netns import unusable

OUT: list[Any] = []  # the work directory's loop.out, once there is one


def say(text: str) -> None:
    print(text, flush=True)
    for f in OUT:
        f.write(text + "\n")
        f.flush()


def start(c: Cluster, inj: Injector, run: str, interval: float, topic_race: bool) -> None:
    """Starts every server, waits for a master with every broker in sync, makes the topic on
    it, waits until every replica has it, and starts the load (until its first SEND_OK).

    Replicas learn topics from their master's metadata 3 s after they start, then every 10 s
    (crates/broker/src/ha/sync.rs): a master lost in between leaves a new master without the
    topic (the route loses it, its acknowledged messages cannot be pulled) until someone makes
    it again. ``topic_race`` makes the topic 4 s after the group is in sync (past the first
    sync) and goes on at once, so that a first fault of the master meets that window."""
    c.start_all()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = inj.poll()
        if state.get("master") and state.get("in_sync") == inj.all_brokers:
            break
        time.sleep(0.3)
    else:
        raise Unsettled(f"no master with 3 in-sync brokers 60 s after start: {inj.last}")
    if topic_race:
        inj.wait(4)
    answer = c.agent.ask("topic", topic=TOPIC, queues=QUEUES, addr=inj.last["master"])
    if "error" in answer:
        raise RuntimeError(f"creating {TOPIC}: {answer['error']}")
    deadline = time.monotonic() + 30
    while not topic_race:
        has = c.agent.ask("topic_on", topic=TOPIC, addrs=inj.all_brokers).get("has", {})
        if has and all(has.values()):
            break
        if time.monotonic() > deadline:
            raise Unsettled(f"{TOPIC} not on every broker 30 s after it was made: {has}")
        time.sleep(0.5)
    t = time.time()
    c.start_load(run, interval)
    deadline = time.monotonic() + 30
    while inj.tail.first_ok_after(t) is None:
        if time.monotonic() > deadline:
            raise Unsettled("the load had no SEND_OK 30 s after it started")
        time.sleep(0.2)


def finish(c: Cluster, inj: Injector, catch_up: float) -> Report:
    """Stops the load, waits for every broker's CommitLog to end where the master's does,
    reads every broker's log, and checks."""
    c.stop_load()
    addrs = {b: f"{c.ips[b]}:{BROKER_PORT}" for b in BROKERS}
    deadline = time.monotonic() + catch_up
    while True:
        state = inj.poll()
        ends = c.agent.ask("maxoffsets", addrs=list(addrs.values())).get("ends", {})
        final = c.broker_of.get(state.get("master") or "")
        if final and len(set(ends.values())) == 1 and None not in ends.values():
            break
        if time.monotonic() > deadline:
            raise Unsettled(f"replicas did not catch up in {catch_up} s: {ends}, {state}")
        time.sleep(0.5)
    say(f"final master {final} (epoch {state.get('epoch')}); every CommitLog ends at {ends}")
    # The final master first; then each replica until it serves what the master does: a
    # replica serves up to the confirm offset it last heard, which may trail by a heartbeat.
    dumps: dict[str, dict[str, Any]] = {}
    for b in sorted(BROKERS, key=lambda b: b != final):
        out = c.work / f"dump-{b}.jsonl"
        deadline = time.monotonic() + 20
        while True:
            dumps[b] = c.agent.ask("dump", timeout=300, addr=addrs[b], topic=TOPIC,
                                   queues=QUEUES, out=str(out))  # fmt: skip
            if "error" in dumps[b]:
                raise RuntimeError(f"reading {b}'s log: {dumps[b]['error']}")
            if b == final or read_lines(out) == read_lines(c.work / f"dump-{final}.jsonl"):
                break
            if time.monotonic() > deadline:
                break  # the checks report the difference
            time.sleep(1)
    tables = {b: read_epoch_file(c.store(b)) for b in BROKERS}
    return check(c.work, final, dumps, tables, inj.observed)


def spread(values: list[float]) -> str:
    if not values:
        return "      -"
    return f"p50 {percentile(values, 50):5.2f} s  max {max(values):5.2f} s"


def figures(faults: list[Fault]) -> list[str]:
    """Per kind of fault (and all): fault -> first SEND_OK of a send started after it; for
    faults that moved the master, fault -> first SEND_OK stored by the new master; heal ->
    settled."""
    lines = []
    groups: dict[str, list[Fault]] = {"all": faults}
    for f in faults:
        groups.setdefault(f.kind, []).append(f)
    for name, group in groups.items():
        acks = [f.first_ack for f in group if f.first_ack is not None]
        moved = [f for f in group if f.master_after != f.master_before]
        new = [f.first_ack_elsewhere for f in moved if f.first_ack_elsewhere is not None]
        settle = [f.settle for f in group if f.settle is not None]
        lines.append(
            f"  {name:10s} n={len(group):3d} | fault -> first SEND_OK {spread(acks)}"
            f" | master moved {len(moved):3d}, fault -> first SEND_OK on the new master"
            f" {spread(new)} | heal -> settled {spread(settle)}"
        )
    return lines


def run(args: argparse.Namespace) -> int:
    why = unusable()
    if why:
        say(f"cannot run: {why}")
        return 2
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    rng = random.Random(seed)
    kinds = args.kinds.split(",")
    holds = dict(HOLDS)
    for spec in args.hold:
        kind, _, span = spec.partition("=")
        lo, _, hi = span.partition("-")
        holds[kind] = (float(lo), float(hi or lo))
    work = Path(tempfile.mkdtemp(prefix="rocketpy-fault-"))
    OUT.append(open(work / "loop.out", "w"))  # noqa: SIM115
    say(f"fault loop: seed {seed}, {args.faults} faults of {kinds}")
    broker_keys = dict(kv.split("=", 1) for kv in args.broker_set)
    controller_keys = dict(kv.split("=", 1) for kv in args.controller_set)
    ok, started = False, time.monotonic()
    faults: list[Fault] = []
    report: Report | None = None
    c = Cluster(work, broker_keys, controller_keys)  # holds the prefix's lock until closed
    try:
        inj = Injector(c, rng, Observed(), holds, args.settle_timeout)
        start(c, inj, f"s{seed}", args.interval, args.topic_race)
        say(f"cluster up in {time.monotonic() - started:.1f} s; logs in {c.logs}")
        error = None
        for n in range(1, args.faults + 1):
            kind = kinds[(n - 1) % len(kinds)] if args.in_order else rng.choice(kinds)
            try:
                fault = inj.inject(n, kind)
                faults.append(fault)
                inj.settle(fault)
            except (Unsettled, RuntimeError, TimeoutError) as e:
                error = str(e)
                say(f"STOPPED at fault {n}: {e}")
                break
            say(fault.line())
            inj.wait(rng.uniform(0.5, 2.0))
        try:
            report = finish(c, inj, args.catch_up)
        except (Unsettled, RuntimeError, TimeoutError) as e:
            error = f"{error}; then: {e}" if error else str(e)
        say(f"\nseed {seed}: {len(faults)} faults in {time.monotonic() - started:.0f} s")
        for line in figures(faults):
            say(line)
        for name, value in (report.figures if report else {}).items():
            say(f"  {name}: {value}")
        for name, found in (report.violations if report else {}).items():
            say(f"  check {'PASS' if not found else 'FAIL'}: no {name}")
            for line in found[:20]:
                say(f"      {line}")
            if len(found) > 20:
                say(f"      ... {len(found) - 20} more")
        ok = report is not None and report.ok and error is None
        if error:
            say(f"  FAIL: {error}")
    except Exception as e:
        say(f"FAILED: {type(e).__name__}: {e}")
        raise
    finally:
        summary = {"seed": seed, "ok": ok, "faults": [vars(f) for f in faults],
                   "violations": report.violations if report else None}  # fmt: skip
        (work / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
        if not ok:
            say(c.logs_text())
        c.close()
        leftovers = c.net.root_is_clean()
        if leftovers:
            say(f"FAIL: left in the root namespace: {leftovers}")
            ok = False
    if ok and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        say(f"kept: {work} (logs/, sends.jsonl, reads.jsonl, dump-*.jsonl, summary.json, "
            f"stores)")  # fmt: skip
    say(f"seed {seed}: {'OK' if ok else 'FAILED'}")
    OUT.pop().close()
    return 0 if ok else 1


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--faults", type=int, default=10)
    p.add_argument("--seed", type=int, default=None, help="default: a random one (printed)")
    p.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, of {KINDS}")
    p.add_argument("--in-order", action="store_true", help="cycle through --kinds in order")
    p.add_argument("--hold", action="append", default=[], metavar="KIND=LO[-HI]",
                   help="seconds a fault is held (default: faults.HOLDS)")  # fmt: skip
    p.add_argument("--settle-timeout", type=float, default=90.0)
    p.add_argument("--catch-up", type=float, default=60.0)
    p.add_argument("--interval", type=float, default=0.005, help="seconds between sends")
    p.add_argument("--broker-set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--controller-set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--topic-race", action="store_true",
                   help="fault before the replicas have the topic (see start())")  # fmt: skip
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    return p


def main(argv: list[str] | None = None) -> int:
    return run(parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
