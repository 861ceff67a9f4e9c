"""A process writing under SYNC_FLUSH is killed with SIGKILL at random moments; after every
kill, each acknowledged message is present, no queue offset is handed out twice, and writing
continues where it stopped."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time

from rocketpy.store import MessageStore

WRITER = r"""
import sys
from rocketpy.store import MessageStore
store = MessageStore(
    sys.argv[1], flush_disk_type="SYNC_FLUSH", mapped_file_size_commit_log=256 * 1024,
    diskSpaceWarningLevelRatio=100,  # not refused because the shared host disk is 90 % used
)
start = store.max_offset("Crash", 0)
print("ready", start, flush=True)
i = start
while True:
    r = store.put("Crash", b"payload-%d-" % i + b"x" * (i % 700), keys=[f"k{i}"])
    assert r.status == "PUT_OK" and r.queue_offset == i, (r, i)
    sys.stdout.write(f"ack {r.queue_offset}\n")
    sys.stdout.flush()
    i += 1
"""


def test_sigkill_never_loses_acknowledged_messages(tmp_path):
    rng = random.Random(20261122)
    acked = -1
    kills = 0
    for _ in range(22):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,  # reading the first line must not take the "ack" lines after it
        )
        assert proc.stdout is not None
        first = proc.stdout.readline().decode().split()
        assert first[0] == "ready", [*first, proc.stderr.read() if proc.stderr else ""]
        assert int(first[1]) > acked, "writing continues after every acknowledged offset"
        time.sleep(rng.uniform(0.05, 0.4))
        proc.send_signal(signal.SIGKILL)
        out_b, err_b = proc.communicate()
        out, err = out_b.decode(errors="replace"), err_b.decode(errors="replace")
        kills += 1
        for line in out.splitlines(keepends=True):
            # The kill can cut the last line short: only whole lines count.
            if line.startswith("ack ") and line.endswith("\n"):
                acked = max(acked, int(line.split()[1]))
        assert "Traceback" not in err, err

        with MessageStore(tmp_path, mapped_file_size_commit_log=256 * 1024) as store:
            assert store.max_offset("Crash", 0) >= acked + 1, "an acknowledged message was lost"
            offset, seen = 0, 0
            while offset < store.max_offset("Crash", 0):
                got = store.get("Crash", 0, offset, 32)
                for m in got.messages:
                    assert m.queue_offset == seen, "offsets contiguous, none reused"
                    assert m.body.startswith(b"payload-%d-" % seen)
                    seen += 1
                offset = got.next_begin_offset
            assert seen == store.max_offset("Crash", 0)
    assert kills >= 20 and acked > 100
