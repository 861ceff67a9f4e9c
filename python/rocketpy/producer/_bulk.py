"""Bulk sends (:meth:`Producer.send_many`, :meth:`Producer.send_arrow`): many messages of one
topic from a list or an Arrow column, encoded natively into batch requests without a Python
object per message, one crossing into Rust per call. What must stay true: every row is
stored or named in :class:`BulkSendError`'s ``failed`` ranges, never silently dropped; a
failed request is retried whole (its messages were stored together or not at all)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rocketpy._native import ArrowColumn, encode_properties
from rocketpy.errors import BrokerResponseError, ClientError, RemotingError
from rocketpy.message import MessageQueue
from rocketpy.producer._native_send import NativeSends
from rocketpy.producer._prepare import STATUS
from rocketpy.producer._retry import RetryPolicy
from rocketpy.protocol import Property

if TYPE_CHECKING:
    import pyarrow as pa

#: Bytes of one bulk request at most (under RocketMQ's 4 MiB ``maxMessageSize``).
BULK_REQUEST_BYTES = 1024 * 1024
#: Bulk requests in flight at most, per call.
BULK_WINDOW = 8

#: Properties a batch request does not honour: delays and timers (stored for delivery at
#: once) and a message group's key (its queue is chosen per message).
_NOT_IN_BATCHES = (
    Property.DELAY_TIME_LEVEL,
    "TIMER_DELIVER_MS",
    "TIMER_DELAY_SEC",
    "TIMER_DELAY_MS",
    "__SHARDINGKEY",
)

#: A column as the native side takes it: a list or tuple of values, or Arrow buffers.
_Column = list[Any] | tuple[Any, ...] | ArrowColumn


@dataclass
class BulkSendResult:
    """What a bulk send stored.

    Attributes:
        count: messages stored.
        batches: per request, its queue, the queue offset of its first message and its
            message count (the messages of a request are stored contiguously, in row order).
    """

    count: int = 0
    batches: list[tuple[MessageQueue, int, int]] = field(default_factory=list)


class BulkSendError(ClientError):
    """Some rows of a bulk send were not stored after the retries.

    Attributes:
        result: what was stored (a :class:`BulkSendResult`).
        failed: the row ranges that were not (indexes into the input, in order).
        errors: each failed request's last error; ``__cause__`` is the first of them.
    """

    def __init__(
        self, message: str, result: BulkSendResult, failed: list[range], errors: list[Exception]
    ) -> None:
        super().__init__(message)
        self.result = result
        self.failed = failed
        self.errors = errors


def arrow_column(array: pa.Array, what: str) -> ArrowColumn:
    """``array`` (binary or string, any offset width; other types are cast to binary) as the
    native side reads it, without a copy."""
    import pyarrow as pa

    t = array.type
    if not (
        pa.types.is_binary(t)
        or pa.types.is_string(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_large_string(t)
    ):
        try:
            array = array.cast(pa.large_binary())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise ValueError(f"the {what} column must be binary or string, not {t}") from e
        t = array.type
    validity, offsets, data = array.buffers()[:3]
    wide = pa.types.is_large_binary(t) or pa.types.is_large_string(t)
    return ArrowColumn(
        validity if array.null_count else None, offsets, data, wide, array.offset, len(array)
    )


def _segments(bodies: Any, keys: Any) -> list[tuple[_Column, _Column | None]]:
    """The input as native segments: one per Arrow chunk, or one list."""
    mod = type(bodies).__module__
    if mod.startswith("pyarrow"):
        import pyarrow as pa

        if isinstance(keys, (pa.ChunkedArray, pa.Array)) or keys is None:
            if isinstance(bodies, pa.ChunkedArray):
                if keys is not None and (
                    not isinstance(keys, pa.ChunkedArray)
                    or [len(c) for c in keys.chunks] != [len(c) for c in bodies.chunks]
                ):
                    keys = pa.chunked_array(
                        [keys.combine_chunks()] if isinstance(keys, pa.ChunkedArray) else [keys]
                    )
                    bodies = pa.chunked_array([bodies.combine_chunks()])
                key_chunks = keys.chunks if keys is not None else [None] * bodies.num_chunks
                return [
                    (arrow_column(b, "body"), None if k is None else arrow_column(k, "keys"))
                    for b, k in zip(bodies.chunks, key_chunks, strict=True)
                    if len(b)
                ]
            if isinstance(bodies, pa.Array):
                if isinstance(keys, pa.ChunkedArray):
                    keys = keys.combine_chunks()
                return [
                    (
                        arrow_column(bodies, "body"),
                        None if keys is None else arrow_column(keys, "keys"),
                    )
                ]
        raise ValueError("give keys as an Arrow array (or None) with Arrow bodies")
    body_list = bodies if isinstance(bodies, (list, tuple)) else list(bodies)
    key_list = None if keys is None else keys if isinstance(keys, (list, tuple)) else list(keys)
    if key_list is not None and len(key_list) != len(body_list):
        raise ValueError(f"{len(key_list)} keys for {len(body_list)} bodies")
    return [(body_list, key_list)]


class BulkSends(NativeSends):
    """:meth:`send_many` and :meth:`send_arrow`."""

    def send_many(
        self,
        topic: str,
        bodies: Sequence[bytes | str] | pa.Array | pa.ChunkedArray,
        *,
        keys: Sequence[str | None] | pa.Array | pa.ChunkedArray | None = None,
        tags: str | None = None,
        properties: Mapping[str, str] | None = None,
        timeout_ms: int | None = None,
    ) -> BulkSendResult:
        """Sends one message per body to ``topic`` and waits until all were stored: the
        fastest way to send many messages from Python. The bodies are read natively (a list
        of ``bytes``/``str``, or a binary/string Arrow array) into batch requests of up to
        1 MiB, spread over the topic's queues, several in flight; no Python object is made
        per message. Each message gets its key (``keys``, one per body, None for none),
        ``tags``, ``properties`` and a unique id; bodies are not compressed. Order is not
        kept across requests (use :meth:`send` with a selector for ordered messages).

        A failed request is retried whole on the topic's other queues
        (``retry_times_when_send_failed``), like a send; a retried request may be stored
        twice if its first answer was lost (at least once, as every RocketMQ send).

        Example::

            with Producer("bulk-group") as producer:
                result = producer.send_many("Events", [b"a", b"b", b"c"], keys=["1", "2", None])
                assert result.count == 3

        Raises:
            ValueError: a null, empty or too large body, a key or property that cannot be
                sent, keys not matching the bodies.
            BulkSendError: rows still not stored after the retries (its ``result`` holds what
                was, ``failed`` the row ranges that were not).
        """
        return self._bulk(topic, _segments(bodies, keys), tags, properties, timeout_ms)

    def send_arrow(
        self,
        data: pa.Table | pa.RecordBatch,
        topic: str,
        *,
        body: str = "body",
        keys: str | None = None,
        tags: str | None = None,
        properties: Mapping[str, str] | None = None,
        timeout_ms: int | None = None,
    ) -> BulkSendResult:
        """Sends each row of ``data`` as a message to ``topic``, as :meth:`send_many` does:
        its ``body`` column (binary or string) as the body and, when the table has one, its
        ``keys`` column (or the column named by ``keys``) as the key. The Arrow buffers are
        read in place, without a copy.

        Example::

            import pyarrow

            table = pyarrow.table({"body": [b"x", b"y"], "keys": ["k1", "k2"]})
            with Producer("bulk-group") as producer:
                assert producer.send_arrow(table, "Events").count == 2
        """
        names = data.schema.names
        if body not in names:
            raise ValueError(f"the table has no column {body!r} for the bodies")
        if keys is not None and keys not in names:
            raise ValueError(f"the table has no column {keys!r} for the keys")
        key_name = keys if keys is not None else ("keys" if "keys" in names else None)
        key_col = None if key_name is None else data.column(key_name)
        return self._bulk(
            topic, _segments(data.column(body), key_col), tags, properties, timeout_ms
        )

    def _bulk(
        self,
        topic: str,
        segments: list[tuple[_Column, _Column | None]],
        tags: str | None,
        properties: Mapping[str, str] | None,
        timeout_ms: int | None,
    ) -> BulkSendResult:
        core = self._core
        if core is None:
            raise ClientError("producer not started: call start() first")
        if not self._batchable_topic(topic):
            raise ClientError("retry topics are not supported by bulk sends")
        props = dict(properties or {})
        for name in (Property.UNIQ_KEY, Property.KEYS, Property.TAGS):
            if name in props:
                raise ValueError(f"property {name} is set per message or by argument")
        for name in _NOT_IN_BATCHES:
            if name in props:
                # A batch request is stored at once, as one queue's messages.
                raise ValueError(f"property {name} cannot be used in a bulk send: use send()")
        if tags is not None:
            props[Property.TAGS] = tags
        shared = encode_properties(list(props.items()))
        timeout = self.send_timeout_ms if timeout_ms is None else timeout_ms
        bases = []
        row = 0
        for b, _ in segments:
            bases.append(row)
            row += len(b)
        # Each segment with the index of its first row, for errors naming rows.
        native = [(b, k, base) for (b, k), base in zip(segments, bases, strict=True)]
        ranges = [(i, 0, len(b)) for i, (b, _) in enumerate(segments) if len(b)]
        result = BulkSendResult()
        policy = RetryPolicy.of(self.retry_times_when_send_failed)
        errors: list[Exception] = []
        attempt = 0
        while ranges:
            lanes = self._lanes_of(core, topic)
            outcomes = core.send_many(
                lanes,
                native,
                ranges,
                shared,
                self.max_message_size,
                min(BULK_REQUEST_BYTES, self.max_message_size),
                BULK_WINDOW,
                timeout,
            )
            ranges, errors = self._take(outcomes, result)
            if not ranges:
                break
            self._forget_lanes(topic)
            if not all(policy.retryable(e) for e in errors) or not policy.more_after(attempt):
                break
            policy.note(topic, attempt, errors[0])
            self._refresh_after_failure(topic, self.publish_info(topic))
            attempt += 1
        if ranges:
            failed = [range(bases[s] + a, bases[s] + b) for s, a, b in sorted(ranges)]
            raise BulkSendError(
                f"{sum(len(r) for r in failed)} of the messages to {topic!r} were not stored "
                f"after {attempt + 1} attempt(s): {errors[0]}",
                result,
                failed,
                errors,
            ) from errors[0]
        return result

    def _take(
        self, outcomes: list[Any], result: BulkSendResult
    ) -> tuple[list[tuple[int, int, int]], list[Exception]]:
        """Adds the stored chunks of ``outcomes`` to ``result``; the failed ones' ranges
        and errors."""
        failed: list[tuple[int, int, int]] = []
        errors: list[Exception] = []
        for lane, segment, start, count, code, queue_id, offset, remark, error in outcomes:
            addr, mq = self._lane_queues[lane]
            if code is not None and code in STATUS:
                if queue_id is not None and queue_id != mq.queue_id:
                    mq = MessageQueue(mq.topic, mq.broker_name, queue_id)
                result.count += count
                result.batches.append((mq, -1 if offset is None else offset, count))
                continue
            failed.append((segment, start, start + count))
            if code is not None:
                errors.append(BrokerResponseError(code, remark, addr))
            else:
                errors.append(RemotingError(f"{addr}: {error}"))
        return failed, errors
