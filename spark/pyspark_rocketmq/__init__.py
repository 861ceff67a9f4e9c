"""PySpark data source ``rocketmq`` for rocketpy / RocketMQ 4.x topics and store directories.

Spark discovers it by itself (a top-level ``pyspark_*`` module with a ``DefaultSource``);
:func:`register` registers it explicitly on a session.

Importing this package before a session starts makes Spark's Python workers run this
interpreter when ``PYSPARK_PYTHON`` is not set (see :mod:`pyspark_rocketmq.workers`): from an
un-activated virtualenv they would otherwise start ``python3`` from ``PATH``, which does not
have the package.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from pyspark_rocketmq.progress import OffsetsBehindListener, offsets_behind
from pyspark_rocketmq.source import RocketMQDataSource
from pyspark_rocketmq.workers import WorkerPythonError, check_workers, use_driver_python

#: Found by Spark's automatic Python data source lookup.
DefaultSource = RocketMQDataSource

__all__ = [
    "DefaultSource",
    "OffsetsBehindListener",
    "RocketMQDataSource",
    "WorkerPythonError",
    "offsets_behind",
    "register",
]

# Spark's workers import this package too: there it changes nothing (they start no JVM).
use_driver_python()


def register(spark: SparkSession) -> None:
    """Registers the ``rocketmq`` format on ``spark``.

    Raises:
        WorkerPythonError: ``spark`` runs in local mode and its Python workers start an
            interpreter without this package (the message names ``PYSPARK_PYTHON``).
    """
    check_workers(spark)
    spark.dataSource.register(RocketMQDataSource)
