"""Workload (d): the single-process producer of (a) in many processes (``spawn``) at once.

Every process connects and warms up, then all start timing together at a barrier; the total
rate is all their acknowledged messages over the longest of their times.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import time
from multiprocessing.synchronize import Barrier
from typing import Any

from benches.peers.results import Throughput

#: Seconds allowed for every process to start, import its client and connect.
START_TIMEOUT_S = 300.0


def _child(
    system: str,
    address: str,
    name: str,
    seconds: float,
    size: int,
    window: int,
    barrier: Barrier,
    results: mp.Queue[Any],
) -> None:
    """One producer process: runs the system's ``produce`` and reports its figures."""
    try:
        from benches.peers.clients import load

        client = load(system)
        started: list[float] = []

        def ready() -> None:
            barrier.wait(START_TIMEOUT_S)
            started.append(time.monotonic())  # one clock for every process of the machine

        r = client.produce(address, name, seconds, size, window, ready=ready)
        results.put(("ok", r.messages, r.seconds, r.errors, started[0] if started else -1.0))
    except BaseException as e:
        barrier.abort()
        results.put(("error", f"{type(e).__name__}: {e}", 0.0, 0, -1.0))


def produce_many(
    system: str, address: str, name: str, procs: int, seconds: float, size: int, window: int
) -> Throughput:
    """Runs ``procs`` producer processes against ``name``; their summed rate."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(procs)
    results: mp.Queue[Any] = ctx.Queue()
    workers = [
        ctx.Process(
            target=_child,
            args=(system, address, name, seconds, size, window, barrier, results),
            name=f"bench-peers-{system}-{i}",
            daemon=True,
        )
        for i in range(procs)
    ]
    for w in workers:
        w.start()
    outcomes = []
    finished = False
    try:
        for _ in workers:
            outcomes.append(results.get(timeout=START_TIMEOUT_S + seconds + 120))
        finished = True
    except queue.Empty:
        pass
    finally:
        for w in workers:
            w.join(timeout=10 if finished else 0)
            if w.is_alive():
                w.terminate()
                w.join()
    errors = [o[1] for o in outcomes if o[0] == "error"]
    if errors or len(outcomes) < procs:
        raise RuntimeError(
            f"{system}: {procs - len(outcomes)} of {procs} producer processes did not report; "
            f"errors: {errors}"
        )
    return Throughput(
        messages=sum(o[1] for o in outcomes),
        seconds=max(o[2] for o in outcomes),
        errors=sum(o[3] for o in outcomes),
        extra={"processes": procs},
        started=min(o[4] for o in outcomes),
    )
