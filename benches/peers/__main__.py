"""``python -m benches.peers`` (from the repository root): see :mod:`benches.peers.run`."""

import sys

from benches.peers.run import main

if __name__ == "__main__":
    sys.exit(main())
