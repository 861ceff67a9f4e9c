"""Type stubs of ``rocketpy._native``, the PyO3 module built from ``crates/python``.

Kept in step with the Rust by ``tests/unit/test_native_stub.py``.
"""

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from os import PathLike
from typing import Any

__version__: str

class RocketpyError(Exception): ...
class RemotingError(RocketpyError): ...
class RemotingTimeoutError(RemotingError): ...
class RemotingConnectError(RemotingError): ...
class StoreError(RocketpyError): ...
class StoreLockedError(StoreError): ...
class StoreFullError(StoreError): ...
class CorruptDataError(StoreError): ...
class ConfigError(RocketpyError): ...
class DataLossError(RocketpyError): ...
class ForkedProcessError(RocketpyError): ...

class Header:
    """A received header: each field of its RocketMQ header by snake_case attribute name
    (``None`` when absent); ``raw`` holds the fields by wire name."""

    def __getattr__(self, name: str) -> Any: ...
    @property
    def raw(self) -> dict[str, str]: ...

#: Request header values (str, int or bool) by snake_case attribute name; ``None`` leaves a
#: field out. Checked against the request code's header by the native module.
HeaderValues = Mapping[str, object]

class RemotingResponse:
    """A response."""

    @property
    def code(self) -> int: ...
    @property
    def remark(self) -> str | None: ...
    @property
    def opaque(self) -> int: ...
    @property
    def flag(self) -> int: ...
    @property
    def header(self) -> Header: ...
    @property
    def ext_fields(self) -> dict[str, str]: ...
    @property
    def body(self) -> bytes: ...
    def decode_messages(self, broker_name: str | None = None) -> list[MessageExt]: ...
    def pull_result(
        self, broker_name: str | None = None
    ) -> tuple[int | None, int | None, int | None, list[MessageExt] | None]:
        """``(next_begin_offset, max_offset, suggest_which_broker_id, messages)`` of a pull's
        answer; messages only when the code is SUCCESS."""

class UniqueIds:
    """Message ids in ``MessageClientIDSetter``'s layout: ``prefix`` (20 hex digits), ms
    since the month's start, counter; ``roll(now_ms)`` gives the month's bounds."""

    def __init__(self, prefix: str, roll: Callable[[int], tuple[int, int]]) -> None: ...
    def next(self) -> str: ...

def on_callback_thread() -> bool:
    """Whether this is rocketpy's callback thread (where async sends complete)."""

class SendOutcome:
    """How a direct send (``ProducerCore.send``) ended: ``result`` when the broker stored
    the message; else, when it went (``lane`` set, ``failed`` true), the ``unique_id`` it
    went with and the broker's ``response`` or the transport's ``error``; ``lane`` None when
    it did not go (no lanes known for the topic, or a body to compress)."""

    @property
    def result(self) -> Any | None: ...
    @property
    def lane(self) -> int | None: ...
    @property
    def unique_id(self) -> str | None: ...
    @property
    def response(self) -> RemotingResponse | None: ...
    @property
    def error(self) -> BaseException | None: ...
    @property
    def failed(self) -> bool:
        """It went and was not stored: retry it or raise."""

class ProducerCore:
    """A producer's native send paths over shared lanes (broker address, topic, queue).

    Auto-batching (``add``): messages gather per lane and each lane's leave in order, one
    request at a time. A stored answer gives every message its ``result_type`` natively
    (``statuses`` maps the codes that mean stored); a failed request reaches
    ``on_failed(addr, topic, broker_name, queue_id, response, error, items)`` on the callback
    thread, ``items`` as ``(future, callback, uniq, message, fixed)`` to retry or fail.
    ``on_latency(broker_name, elapsed_s, failed)``, when given, learns every request's
    latency.

    Direct sends (``send``): one message, written and answered in the calling thread,
    its ``result_type`` made natively."""

    def __init__(
        self,
        client: RemotingClient,
        group: str,
        default_topic: str,
        default_topic_queue_nums: int,
        on_failed: Callable[..., None],
        result_type: type,
        future_type: type,
        queue_type: type,
        statuses: Mapping[int, Any],
        client_id: str,
        unique_ids: UniqueIds,
        compress_over: int,
        max_bytes: int = 32768,
        max_delay_ms: int = 0,
        total_max_bytes: int = 33554432,
        timeout_ms: int = 3000,
        on_latency: Callable[[str, float, bool], None] | None = None,
    ) -> None: ...
    def lane(self, addr: str, broker_name: str, topic: str, queue_id: int) -> int:
        """The number of the lane to this queue at this address (stable)."""
    def set_lanes(self, topic: str, lanes: list[int]) -> None:
        """The lanes that sends of ``topic`` naming no lane take in turn."""
    def forget_lanes(self, topic: str) -> None: ...
    def add(
        self,
        lane: int | None,
        message: Any,
        callback: Any,
        fixed: bool,
        timeout_ms: int = 3000,
    ) -> Future[Any] | None:
        """The message's new future when added; None when not taken (``lane`` None and the
        topic has no lanes, or a message that cannot be batched: send it alone). Raises
        ``ClientError`` when full for ``timeout_ms``, or closed."""
    def send(self, lane: int | None, message: Any, timeout_ms: int) -> SendOutcome:
        """Sends the message alone and waits for the answer (see :class:`SendOutcome`)."""
    def send_many(
        self,
        lanes: list[int],
        segments: list[tuple[Any, Any | None, int]],
        ranges: list[tuple[int, int, int]],
        properties: str,
        max_body: int,
        max_request_bytes: int = 1048576,
        window: int = 8,
        timeout_ms: int = 3000,
    ) -> list[
        tuple[int, int, int, int, int | None, int | None, int | None, str | None, str | None]
    ]:
        """Sends rows of ``segments`` (``(bodies, keys or None, index of the first row)``:
        lists or :class:`ArrowColumn`) for each ``(segment, start, stop)`` of ``ranges``, in batch
        requests over ``lanes`` in turn, ``window`` in flight; waits for every answer.
        Returns per request ``(lane, segment, start, count, code, queue_id, queue_offset,
        remark, error)``; raises ValueError on a row it cannot send."""
    def flush(self, timeout_ms: int) -> bool:
        """Sends what gathers and waits until every message was answered."""
    def close(self) -> None: ...
    @property
    def held_bytes(self) -> int: ...

class ArrowColumn:
    """A binary or string Arrow column by its buffers (``pyarrow.Array.buffers()``):
    rows ``offset .. offset + length``; ``wide`` for 64-bit offsets."""

    def __init__(
        self,
        validity: Any | None,
        offsets: Any,
        data: Any | None,
        wide: bool,
        offset: int,
        length: int,
    ) -> None: ...
    def __len__(self) -> int: ...

class RemotingClient:
    """Connection-pooling client of the RocketMQ remoting protocol; waits release the GIL."""

    def __init__(
        self,
        request_handler: Callable[[int, Header, bytes, str], None] | None = None,
        connect_timeout_ms: int = 3000,
        direct_connections: int = 4,
        credentials: tuple[str, str, str | None] | None = None,
        tls: tuple[str | None, bool, str | None, str | None] | None = None,
    ) -> None: ...
    def invoke(
        self,
        addr: str,
        code: int,
        header: HeaderValues | None = None,
        body: bytes | None = None,
        timeout_ms: int = 3000,
        binary: bool = False,
        direct: bool = False,
    ) -> RemotingResponse:
        """With ``direct``, this thread writes and reads over a connection of its own when
        one of ``direct_connections`` is free (for sends)."""
    def invoke_oneway(
        self,
        addr: str,
        code: int,
        header: HeaderValues | None = None,
        body: bytes | None = None,
        binary: bool = False,
    ) -> None: ...
    def invoke_async(
        self,
        addr: str,
        code: int,
        header: HeaderValues | None,
        body: bytes | None,
        timeout_ms: int,
        callback: Callable[[RemotingResponse | None, BaseException | None], None],
        binary: bool = False,
    ) -> None: ...
    def pull_columns(
        self,
        addr: str,
        group: str,
        topic: str,
        queue_id: int,
        start: int,
        end: int,
        broker_name: str,
        subscription: str = "*",
        timeout_ms: int = 10000,
        concurrency: int = 16,
        fail_on_data_loss: bool = True,
        expression_type: str = "TAG",
    ) -> tuple[dict[str, Any], int]: ...
    def close_connection(self, addr: str) -> None: ...
    def shutdown(self) -> None: ...

class MessageExt:
    """A received message."""

    @property
    def topic(self) -> str: ...
    @property
    def flag(self) -> int: ...
    @property
    def body(self) -> bytes: ...
    @property
    def body_size(self) -> int: ...
    def body_view(self) -> memoryview: ...
    @property
    def queue_id(self) -> int: ...
    @property
    def queue_offset(self) -> int: ...
    @property
    def commit_log_offset(self) -> int: ...
    @property
    def sys_flag(self) -> int: ...
    @property
    def born_timestamp(self) -> int: ...
    @property
    def born_host(self) -> str: ...
    @property
    def store_timestamp(self) -> int: ...
    @property
    def store_host(self) -> str: ...
    @property
    def reconsume_times(self) -> int: ...
    @property
    def prepared_transaction_offset(self) -> int: ...
    @property
    def store_size(self) -> int: ...
    @property
    def body_crc(self) -> int: ...
    @property
    def offset_msg_id(self) -> str: ...
    @property
    def broker_name(self) -> str | None: ...
    @property
    def tags(self) -> str | None: ...
    @property
    def keys(self) -> str | None: ...
    @property
    def msg_id(self) -> str: ...
    @property
    def properties(self) -> dict[str, str]: ...
    def get_property(self, name: str, default: str | None = None) -> str | None: ...
    def replace(
        self, topic: str | None = None, reconsume_times: int | None = None
    ) -> MessageExt: ...

class Message:
    """A message to send.

    Args:
        topic: the topic (1 to 127 characters of letters, digits, ``%``, ``|``, ``_``, ``-``).
        body: the payload (``bytes``; ``str`` is encoded as UTF-8; ``bytearray`` and
            ``memoryview`` are copied).
        tags: one tag, used for broker-side filtering (``subscribe(topic, "TagA || TagB")``).
        keys: a key or several (a list, or one space-separated string), indexed for look-up.
        properties: user properties; names must not contain the separators ``\\x01``/``\\x02``.
        flag: an application-defined integer stored with the message.
        delay_level: deliver after the broker's delay level N (1 = 1 s ... 18 = 2 h); 0 = now.
        delivery_timestamp: deliver at this time (ms since the epoch; RocketMQ 5.x timer
            messages: any time up to the broker's ``timerMaxDelaySec`` ahead). Not with
            ``delay_level`` nor ``message_group`` (``ValueError``).
        message_group: the 5.x FIFO message group: the producer sends every message of a
            group to the same queue, so consumers see a group's messages in send order.
    """

    def __init__(
        self,
        topic: str,
        body: bytes | bytearray | memoryview | str,
        tags: str | None = None,
        keys: str | Iterable[str] | None = None,
        properties: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        *,
        flag: int = 0,
        delay_level: int = 0,
        delivery_timestamp: int | None = None,
        message_group: str | None = None,
    ) -> None: ...
    @property
    def topic(self) -> str:
        """The topic."""
    @topic.setter
    def topic(self, topic: str) -> None: ...
    @property
    def flag(self) -> int:
        """The application-defined flag."""
    @flag.setter
    def flag(self, flag: int) -> None: ...
    @property
    def body(self) -> bytes:
        """The payload."""
    @body.setter
    def body(self, body: bytes | bytearray | memoryview | str) -> None: ...
    @property
    def properties(self) -> dict[str, str]:
        """The properties; changes to the dict change the message."""
    @properties.setter
    def properties(self, properties: Mapping[str, str]) -> None: ...
    @property
    def tags(self) -> str | None:
        """The TAGS property."""
    @tags.setter
    def tags(self, tags: str | None) -> None: ...
    @property
    def keys(self) -> str | None:
        """The KEYS property: keys separated by spaces."""
    @keys.setter
    def keys(self, keys: str | Iterable[str] | None) -> None: ...
    @property
    def delay_level(self) -> int:
        """The delay level (0 = none)."""
    @delay_level.setter
    def delay_level(self, level: int) -> None: ...
    @property
    def delivery_timestamp(self) -> int | None:
        """When the broker delivers the message (ms since the epoch, the ``TIMER_DELIVER_MS``
        property), or None: at once."""
    @delivery_timestamp.setter
    def delivery_timestamp(self, at: int | None) -> None: ...
    @property
    def message_group(self) -> str | None:
        """The 5.x FIFO message group (the ``__SHARDINGKEY`` property), or None."""
    @message_group.setter
    def message_group(self, group: str | None) -> None: ...

class PendingMessages:
    """Pulled, unconsumed messages of one queue by offset (see ``ProcessQueue``)."""

    def __init__(self) -> None: ...
    def put(self, msgs: list[MessageExt]) -> None: ...
    def remove(self, msgs: list[MessageExt]) -> int: ...
    def take(self, n: int) -> list[MessageExt]: ...
    def commit(self) -> int: ...
    def consume_again(self, msgs: list[MessageExt]) -> None: ...
    @property
    def pending(self) -> int: ...
    @property
    def count(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def max_offset(self) -> int: ...
    def span(self) -> int: ...

class NameServer:
    """A running name server."""

    @staticmethod
    def start(
        host: str = "0.0.0.0",
        port: int = 9876,
        scan_interval_ms: int = 10000,
        broker_expiry_ms: int = 120000,
        config: Mapping[str, str] | None = None,
        config_text: str | None = None,
    ) -> NameServer: ...
    @property
    def address(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def metrics_address(self) -> str | None: ...
    @property
    def controller_address(self) -> str | None: ...
    def live_brokers(self) -> list[str]: ...
    def shutdown(self) -> None: ...

class Controller:
    """A running controller (controller mode)."""

    @staticmethod
    def start(
        config_text: str | None = None, overrides: Mapping[str, str] | None = None
    ) -> Controller: ...
    @staticmethod
    def effective_config(
        config_text: str | None = None, overrides: Mapping[str, str] | None = None
    ) -> list[tuple[str, str, str]]: ...
    @property
    def address(self) -> str: ...
    @property
    def metrics_address(self) -> str | None: ...
    @property
    def self_id(self) -> str: ...
    @property
    def leader_id(self) -> str | None: ...
    @property
    def is_leader(self) -> bool: ...
    def shutdown(self) -> None: ...

class Broker:
    """A running broker."""

    @staticmethod
    def start(
        config_text: str | None = None, overrides: Mapping[str, str] | None = None
    ) -> Broker: ...
    @staticmethod
    def effective_config(
        config_text: str | None = None, overrides: Mapping[str, str] | None = None
    ) -> list[tuple[str, str, str]]: ...
    @property
    def address(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def broker_addr(self) -> str: ...
    @property
    def metrics_address(self) -> str | None: ...
    @property
    def grpc_address(self) -> str | None: ...
    @property
    def store_path(self) -> str: ...
    def shutdown(self) -> None: ...

REQUEST_CODES: dict[str, int]
RESPONSE_CODES: dict[str, int]
PERM: dict[str, int]
PULL_SYS_FLAG: dict[str, int]
MESSAGE_SYS_FLAG: dict[str, int]

def validate_topic(name: str) -> None: ...
def validate_sql_filter(expression: str) -> None: ...
def decode_messages(data: bytes, broker_name: str | None = None) -> list[MessageExt]: ...
def encode_properties(props: list[tuple[str, str]]) -> str: ...
def decode_properties(text: str) -> dict[str, str]: ...
def java_string_hash(s: str) -> int: ...
def encode_batch(items: list[tuple[int, bytes, str]]) -> bytes: ...
def fastjson_to_json(data: bytes) -> bytes: ...
def release_free_memory() -> None: ...
def enable_send_metrics() -> None: ...
def record_send(client_id: str, topic: str, elapsed_s: float, ok: bool, messages: int) -> None: ...
def send_metrics() -> list[tuple[str, str, bool, list[int], float, int]]: ...
def send_metric_buckets() -> list[float]: ...
def record_process(
    client_id: str, group: str, topic: str, elapsed_s: list[float], ok: bool, messages: int
) -> None: ...
def process_metrics() -> list[tuple[str, str, str, bool, list[int], float, int]]: ...
def init_logging(level: str = "info", stderr: bool = True) -> None: ...

class InvalidArgumentError(RocketpyError): ...

class BytesView:
    """Read-only bytes shared with Rust; use through ``memoryview``."""

    def __len__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...

class StoreReader:
    """A store directory opened read-only: no lock, no recovery, nothing written."""

    def __init__(self, path: str | PathLike[str]) -> None: ...
    def topics(self) -> list[str]: ...
    def queue_ids(self, topic: str) -> list[int]: ...
    def offsets(self, topic: str, queue_id: int) -> tuple[int, int]: ...
    def offset_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int: ...
    def unit_sizes(self, topic: str, queue_id: int, start: int, end: int) -> list[int]: ...
    def read_columns(
        self,
        topic: str,
        queue_id: int,
        start: int,
        end: int,
        broker_name: str,
        subscription: str = "*",
        expression_type: str = "TAG",
    ) -> tuple[dict[str, Any], int]: ...

class EmbeddedStore:
    """The Rust message store, in-process (wrapped by ``rocketpy.store.MessageStore``)."""

    def __init__(
        self,
        path: str,
        config: Mapping[str, str] | None = None,
        store_host: str = "127.0.0.1:10911",
    ) -> None: ...
    def put_batch(
        self, items: list[tuple[str, int, bytes, str, int, int]]
    ) -> list[tuple[str, str, int, int, int, int]]: ...
    def get(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_nums: int = 32,
        tags: list[str] | None = None,
    ) -> tuple[str, int, int, int, list[MessageExt]]: ...
    def min_offset(self, topic: str, queue_id: int) -> int: ...
    def max_offset(self, topic: str, queue_id: int) -> int: ...
    def offset_by_time(self, topic: str, queue_id: int, timestamp: int) -> int: ...
    def earliest_time(self, topic: str, queue_id: int) -> int | None: ...
    def query_by_key(
        self, topic: str, key: str, max_num: int, begin: int, end: int
    ) -> list[MessageExt]: ...
    def view_by_offset_msg_id(self, msg_id: str) -> MessageExt | None: ...
    def topic_queues(self) -> list[tuple[str, int]]: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
