"""rocketpy side by side with NATS JetStream and Redis Streams on this machine.

``make bench-peers`` (or ``python -m benches.peers`` from the repository root) starts each
server on 127.0.0.1 with a temporary data directory, runs the same six workloads against each
from Python, and prints a table of the medians; every round's numbers go to a JSON file.
See ``benches/peers/README.md``.
"""
