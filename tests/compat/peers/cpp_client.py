"""A RocketMQ application written against the Apache RocketMQ C++ client (PyPI ``rocketmq``
0.4.4: ``librocketmq.so`` driven through ctypes), run as its own process by the compatibility
tests. Nothing here uses rocketpy.

    python cpp_client.py '<json spec>'

The spec's ``action`` is ``produce``, ``consume`` or ``pull``; results are JSON lines on stdout
(``sent``, ``failed``, ``ready``, ``received``, ``done``, ``error``). A consumer runs until its
stdin closes or ``timeout`` passes. Bodies are text (the C API returns bodies as C strings).
A producer with ``keep_going`` (sync sends) reports a failed send and goes on, every
``interval_ms``, until its stdin closes or ``max_s`` passes — an application that rides out
a broker failover.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

from rocketmq.client import Message, Producer, PullConsumer, RecvMessage
from rocketmq.ffi import MSG_CALLBACK_FUNC, MessageModel, dll

CONSUME_SUCCESS, RECONSUME_LATER = 0, 1
_print_lock = threading.Lock()


def emit(event: str, **fields: Any) -> None:
    with _print_lock:
        sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
        sys.stdout.flush()


def text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def describe(m: RecvMessage, props: list[str]) -> dict[str, Any]:
    return {
        "body": text(m.body),
        "topic": text(m.topic),
        "tags": text(m.tags),
        "keys": text(m.keys),
        "msg_id": text(m.id),
        "queue_id": m.queue_id,
        "queue_offset": m.queue_offset,
        "reconsume_times": m.reconsume_times,
        "born_timestamp": m.born_timestamp,
        "store_timestamp": m.store_timestamp,
        "commit_log_offset": m.commit_log_offset,
        "properties": {p: text(m.get_property(p)) for p in props},
    }


def make_message(spec: dict[str, Any], i: int) -> Message:
    msg = Message(spec["topic"])
    msg.set_body(f"{spec.get('prefix', 'cpp')}-{i}")
    if spec.get("tags"):
        msg.set_tags(spec["tags"])
    if spec.get("keys"):
        msg.set_keys(f"{spec['keys']}-{i}")
    for k, v in spec.get("properties", {}).items():
        msg.set_property(k, v)
    if spec.get("delay_level"):
        msg.set_delay_time_level(spec["delay_level"])
    return msg


STATUS = ["SEND_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"]


def produce(spec: dict[str, Any]) -> None:
    producer = Producer(spec.get("group", "cpp-producer"))
    producer.set_namesrv_addr(spec["namesrv"])
    producer.set_timeout(10_000)
    if spec.get("access_key"):
        # The C++ client's ACL: it signs each request (RocketMQ's algorithm, plus its
        # OnsChannel field).
        producer.set_session_credentials(spec["access_key"], spec["secret_key"], "LOCAL")
    producer.start()
    mode, count = spec.get("mode", "sync"), spec.get("count", 1)
    pending = threading.Semaphore(0)
    try:
        if spec.get("keep_going"):
            ride_out(producer, spec)
        elif mode == "batch":
            result = producer.send_batch([make_message(spec, i) for i in range(count)])
            emit(
                "sent",
                status=STATUS[int(result.status)],
                msg_id=result.msg_id,
                offset=result.offset,
            )
        for i in range(count if mode != "batch" else 0):
            msg = make_message(spec, i)
            if mode == "sync":
                r = producer.send_sync(msg)
                emit("sent", i=i, status=STATUS[int(r.status)], msg_id=r.msg_id, offset=r.offset)
            elif mode == "async":

                def ok(r: Any, i: int = i) -> None:
                    emit(
                        "sent", i=i, status=STATUS[int(r.status)], msg_id=r.msg_id, offset=r.offset
                    )
                    pending.release()

                def failed(e: Exception, i: int = i) -> None:
                    emit("error", i=i, error=str(e))
                    pending.release()

                producer.send_async(msg, ok, failed)
            elif mode == "oneway":
                producer.send_oneway(msg)
                emit("sent", i=i)
            elif mode == "orderly":
                # The sharding key chooses the queue: same key, same queue, in order.
                key = spec.get("order_keys", 1)
                r = producer.send_orderly(msg, i % key)
                emit(
                    "sent",
                    i=i,
                    key=i % key,
                    status=STATUS[int(r.status)],
                    msg_id=r.msg_id,
                    offset=r.offset,
                )
            else:
                raise ValueError(f"unknown mode {mode}")
        if mode == "async":
            for _ in range(count):
                if not pending.acquire(timeout=30):
                    emit("error", error="async send callbacks missing")
                    break
    finally:
        producer.shutdown()
    emit("done")


def consume(spec: dict[str, Any]) -> None:
    """A push consumer. ``fail`` maps a body to how many times its listener fails
    (RECONSUME_LATER) before it succeeds; ``-1`` always fails."""
    fail: dict[str, int] = dict(spec.get("fail", {}))
    props = spec.get("read_properties", [])
    orderly = spec.get("mode") == "orderly"
    handle = dll.CreatePushConsumer(spec["group"].encode())
    dll.SetPushConsumerNameServerAddress(handle, spec["namesrv"].encode())
    dll.SetPushConsumerInstanceName(handle, spec.get("instance", "cpp").encode())
    dll.SetPushConsumerThreadCount(handle, spec.get("threads", 2))
    if spec.get("model") == "broadcasting":
        dll.SetPushConsumerMessageModel(handle, MessageModel.BROADCASTING)
    if spec.get("access_key"):
        dll.SetPushConsumerSessionCredentials(
            handle, spec["access_key"].encode(), spec["secret_key"].encode(), b"LOCAL"
        )
    dll.Subscribe(handle, spec["topic"].encode(), spec.get("expression", "*").encode())
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def on_message(_consumer: Any, cmsg: Any) -> int:
        m = RecvMessage(cmsg)
        info = describe(m, props)
        body = info["body"] or ""
        with lock:
            seen[body] = seen.get(body, 0) + 1
            failing = fail.get(body, 0)
            if failing != 0 and (failing < 0 or seen[body] <= failing):
                emit("failed", **info)
                return RECONSUME_LATER
        emit("received", thread=threading.get_ident(), **info)
        return CONSUME_SUCCESS

    callback = MSG_CALLBACK_FUNC(on_message)
    register = dll.RegisterMessageCallbackOrderly if orderly else dll.RegisterMessageCallback
    register(handle, callback)
    if dll.StartPushConsumer(handle) != 0:
        emit("error", error="StartPushConsumer failed")
        return
    emit("ready")
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    stop.wait(spec.get("timeout", 60))
    dll.ShutdownPushConsumer(handle)
    dll.DestroyPushConsumer(handle)
    emit("done")


def pull(spec: dict[str, Any]) -> None:
    consumer = PullConsumer(spec["group"])
    consumer.set_namesrv_addr(spec["namesrv"])
    consumer.start()
    props = spec.get("read_properties", [])
    deadline = time.monotonic() + spec.get("timeout", 30)
    got = 0
    while got < spec.get("expect", 1) and time.monotonic() < deadline:
        for m in consumer.pull(spec["topic"], spec.get("expression", "*")):
            emit("received", **describe(m, props))
            got += 1
        time.sleep(0.2)
    consumer.shutdown()
    emit("done")


def ride_out(producer: Producer, spec: dict[str, Any]) -> None:
    """Sync sends until stdin closes or ``max_s`` passes; a failed one is reported."""
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    deadline = time.monotonic() + spec.get("max_s", 90)
    i = 0
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            r = producer.send_sync(make_message(spec, i))
        except Exception as e:  # the C client raises on a failed send
            emit("failed", i=i, error=str(e)[:300])
        else:
            emit("sent", i=i, status=STATUS[int(r.status)], msg_id=r.msg_id, offset=r.offset)
        i += 1
        stop.wait(spec.get("interval_ms", 20) / 1000)


def main() -> None:
    spec = json.loads(sys.argv[1])
    try:
        {"produce": produce, "consume": consume, "pull": pull}[spec["action"]](spec)
    except Exception as e:  # reported, not raised: the test reads the JSON lines
        emit("error", error=f"{type(e).__name__}: {e}")
        sys.exit(1)


if __name__ == "__main__":
    main()
