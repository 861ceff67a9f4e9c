"""Runs Python scripts one after another in this one process, each as ``python SCRIPT ARGS``
would run it (as ``__main__``, with its own ``sys.argv``), so that they share one JVM:
PySpark launches a JVM per process (about 13 s on the 2-core test machine), while a new
SparkSession in a running JVM takes under a second.

    python run_scripts.py '[["spark/examples/a.py", "--x", "1"], ["spark/examples/b.py"]]'

Before each script's output it prints ``=== run N ===`` on stdout and stderr; it stops with
the first script that fails, with that script's exit status (:func:`sections` splits the
output again).
"""

from __future__ import annotations

import json
import runpy
import sys
import traceback

MARK = "=== run {} ==="


def sections(output: str, runs: int) -> list[str]:
    """Each run's part of ``output`` (empty for runs that did not start)."""
    parts: list[str] = []
    for n in range(runs):
        start = output.find(MARK.format(n))
        end = output.find(MARK.format(n + 1))
        if start < 0:
            parts.append("")
            continue
        parts.append(output[start + len(MARK.format(n)) : end if end >= 0 else len(output)])
    return parts


def main() -> int:
    for n, argv in enumerate(json.loads(sys.argv[1])):
        for stream in (sys.stdout, sys.stderr):
            print(MARK.format(n), file=stream, flush=True)
        sys.argv = list(argv)
        try:
            runpy.run_path(argv[0], run_name="__main__")
        except SystemExit as e:
            if e.code not in (None, 0):
                return e.code if isinstance(e.code, int) else 1
        except BaseException:
            traceback.print_exc()
            return 1
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
