"""``python -m benches.grpc`` (from the repository root): see :mod:`benches.grpc.run`."""

import sys

from benches.grpc.run import main

if __name__ == "__main__":
    sys.exit(main())
