"""PySpark data source ``rocketmq`` for rocketpy / RocketMQ 4.x topics and store directories.

Spark discovers it by itself (a top-level ``pyspark_*`` module with a ``DefaultSource``);
:func:`register` registers it explicitly on a session.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from pyspark_rocketmq.progress import OffsetsBehindListener, offsets_behind
from pyspark_rocketmq.source import RocketMQDataSource

#: Found by Spark's automatic Python data source lookup.
DefaultSource = RocketMQDataSource

__all__ = [
    "DefaultSource",
    "OffsetsBehindListener",
    "RocketMQDataSource",
    "offsets_behind",
    "register",
]


def register(spark: SparkSession) -> None:
    """Registers the ``rocketmq`` format on ``spark``."""
    spark.dataSource.register(RocketMQDataSource)
