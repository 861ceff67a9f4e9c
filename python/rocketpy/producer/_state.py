"""What every part of a :class:`~rocketpy.producer.Producer` reads: its settings and its
connections, declared once here so each part of the class (routing, preparing, the Python and
native send paths) is typed against the same state. ``Producer.__init__`` sets them all."""

from __future__ import annotations

import itertools
import threading

from rocketpy._native import ProducerCore
from rocketpy.client.fault import LatencyFaultTolerance
from rocketpy.client.instance import ClientConfig, ClientInstance
from rocketpy.client.route import TopicPublishInfo
from rocketpy.message import MessageQueue


class ProducerState:
    """The producer's settings and state (see :class:`~rocketpy.producer.Producer`)."""

    group: str
    send_timeout_ms: int
    retry_times_when_send_failed: int
    retry_times_when_send_async_failed: int
    send_latency_fault_enable: bool
    compress_msg_body_over_howmuch: int
    max_message_size: int
    default_topic_queue_nums: int
    auto_batch: bool
    batch_max_delay_ms: int
    batch_max_bytes: int
    total_batch_max_bytes: int
    #: The native send paths (auto-batching, direct synchronous sends), once started. It
    #: keeps each topic's write queues (with their master's address) as lanes it takes
    #: round-robin: no route look-up per message; forgotten when the route changes.
    _core: ProducerCore | None
    #: Each lane's broker address and queue (what Python needs when a native send fails).
    _lane_queues: dict[int, tuple[str, MessageQueue]]
    _config: ClientConfig
    _instance: ClientInstance | None
    _publish: dict[str, TopicPublishInfo]
    _lock: threading.Lock
    _index: itertools.count[int]
    _faults: LatencyFaultTolerance
