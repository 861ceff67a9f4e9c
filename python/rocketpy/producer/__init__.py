"""``Producer``: sends messages synchronously, asynchronously, oneway, in batches, or to a
queue chosen by a selector (ordered messages); picks queues round-robin, retries on another
broker (one :class:`~rocketpy.producer._retry.RetryPolicy` for every path), and can avoid slow
brokers (send latency fault tolerance)."""

from __future__ import annotations

from rocketpy.producer._bulk import BulkSendError, BulkSendResult
from rocketpy.producer._producer import Producer
from rocketpy.producer._selectors import (
    MessageQueueSelector,
    SendCallback,
    select_by_hash,
    select_random,
)

__all__ = [
    "BulkSendError",
    "BulkSendResult",
    "MessageQueueSelector",
    "Producer",
    "SendCallback",
    "select_by_hash",
    "select_random",
]
