"""``rocketpy bench producer|consumer``: load generators that report TPS, MB/s, latency
percentiles and failures every interval and at the end."""

from __future__ import annotations

import argparse

from rocketpy.bench import consumer, producer


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Registers ``bench`` and its two modes on the ``rocketpy`` command."""
    bench = sub.add_parser("bench", help="benchmark a producer or a consumer")
    modes = bench.add_subparsers(dest="mode", required=True)
    producer.add_parser(modes)
    consumer.add_parser(modes)
