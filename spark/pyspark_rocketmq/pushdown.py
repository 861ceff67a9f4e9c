"""Filter pushdown (Spark 4.1's ``DataSourceReader.pushFilters``; option
``filterPushdown=true`` with Spark's ``spark.sql.python.filterPushdown.enabled=true``, which
Spark requires of any reader that takes filters): ``where tags = 'A'`` and
``tags in ('A', 'B')`` become the broker's filter, so the messages of other tags are never
pulled. With the ``sqlFilter`` option they are ANDed into it as ``TAGS IN (...)``.

Spark does not push conditions on map elements (``properties['a'] = '1'``) to Python data
sources: those go in the ``sqlFilter`` option. Every filter is still returned to Spark, which
evaluates it again (pushdown only reads less).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from pyspark.sql.datasource import EqualTo, Filter, In

from pyspark_rocketmq.options import ReadOptions


def wanted_tags(filters: Iterable[Filter]) -> frozenset[str] | None:
    """The tags every row must have by ``filters`` (ANDed): None when they say nothing
    about tags; a tag that cannot be written in a tag expression is not pushed."""
    wanted: frozenset[str] | None = None
    for f in filters:
        if isinstance(f, EqualTo) and f.attribute == ("tags",):
            values = [f.value]
        elif isinstance(f, In) and f.attribute == ("tags",):
            values = list(f.value)
        else:
            continue
        if not all(isinstance(v, str) and v.strip() == v and v and "||" not in v for v in values):
            continue
        tags = frozenset(values)
        wanted = tags if wanted is None else wanted & tags
    return wanted


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def pushed(opts: ReadOptions, filters: Iterable[Filter]) -> ReadOptions:
    """``opts`` with the tag conditions of ``filters`` in its subscription."""
    tags = wanted_tags(filters)
    if tags is None:
        return opts
    if opts.subscription_type == "SQL92":
        if not tags:
            return opts
        listed = ", ".join(_sql_string(t) for t in sorted(tags))
        sql = f"({opts.subscription}) AND TAGS IN ({listed})"
        return replace(opts, subscription=sql)
    current = opts.subscription.strip()
    if current != "*":
        tags = tags & frozenset(t.strip() for t in current.split("||"))
    if not tags:
        return opts  # no row can match; Spark's own evaluation finds that out
    return replace(opts, subscription=" || ".join(sorted(tags)))
