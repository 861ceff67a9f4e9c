"""benches/peers/cpu.py: CPU per message over a run's timed part, from sampled counters."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benches.peers.cpu import CpuMeter, machine_busy_s, process_cpu_s
from benches.peers.results import consumed


def test_per_message_interpolates_between_samples() -> None:
    meter = CpuMeter(pid=0)
    # (monotonic s, server CPU s, machine busy s): the server uses 0.5 core, the machine 2.
    meter.samples = [(10.0 + t, 0.5 * t, 2.0 * t) for t in range(0, 11)]
    cpu = meter.per_message(started=11.5, seconds=4.0, messages=100_000)
    assert cpu == {
        "server_us_per_msg": 20.0,
        "others_us_per_msg": 60.0,
        "server_cores": 0.5,
        "others_cores": 1.5,
    }
    # Outside the samples, or nothing counted: nothing said.
    assert meter.per_message(started=5.0, seconds=4.0, messages=100) == {}
    assert meter.per_message(started=11.0, seconds=20.0, messages=100) == {}
    assert meter.per_message(started=11.0, seconds=2.0, messages=0) == {}


def test_counters_of_a_busy_process_advance() -> None:
    before, busy_before = process_cpu_s(os.getpid()), machine_busy_s()
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    assert process_cpu_s(os.getpid()) - before >= 0.2
    assert machine_busy_s() - busy_before >= 0.2


def test_the_meter_samples_a_live_process_until_stopped() -> None:
    with CpuMeter(os.getpid()) as meter:
        time.sleep(0.6)
    assert len(meter.samples) >= 3
    times = [s[0] for s in meter.samples]
    assert times == sorted(times)


def test_a_consumer_run_is_placed_on_the_meter_clock_from_its_first_batch() -> None:
    first = time.perf_counter()
    run = consumed(1000, 1000, 100, first - 0.5, first, first + 2.0)
    assert (run.messages, run.seconds, run.errors) == (900, 2.0, 0)
    assert run.started is not None and abs(run.started - time.monotonic()) < 0.5
    assert consumed(10, 0, 0, 0.0, 0.0, 1.0).started is None, "nothing read: no CPU figure"
