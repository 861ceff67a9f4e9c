"""A RocketMQ application written against the official RocketMQ 5.x Python client (PyPI
``rocketmq-python-client``, gRPC), run as its own process by the compatibility tests, with
the Python of the venv ``make compat-py5`` makes. Nothing here uses rocketpy.

    python py5_client.py '<json spec>'

The spec's ``action`` is ``produce``, ``transaction``, ``simple_consume``, ``push_consume``,
``stub_batch_ack`` or ``stub_query_route``;
results are JSON lines on stdout (``ready``, ``sent``, ``failed``, ``received``, ``acked``,
``checked``, ``done``, ``error``). Consumers run until their stdin closes or ``timeout`` passes.
A producer with ``keep_going`` reports a failed send and goes on, every ``interval_ms``, until
its stdin closes or ``max_s`` passes — an application that rides out a broker failover.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from typing import Any

from rocketmq import (
    ClientConfiguration,
    ConsumeResult,
    Credentials,
    FilterExpression,
    Message,
    MessageListener,
    Producer,
    PushConsumer,
    SimpleConsumer,
    TransactionChecker,
    TransactionResolution,
)
from rocketmq.grpc_protocol import FilterType

_print_lock = threading.Lock()


def emit(event: str, **fields: Any) -> None:
    with _print_lock:
        sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
        sys.stdout.flush()


def config(spec: dict[str, Any]) -> ClientConfiguration:
    """The endpoint, and the account when the spec names one (``access_key``, ``secret_key``:
    the client signs every call's ``x-mq-date-time`` with it)."""
    credentials = Credentials(spec.get("access_key", ""), spec.get("secret_key", ""))
    return ClientConfiguration(spec["endpoint"], credentials, spec.get("namespace", ""), 5)


def tls(spec: dict[str, Any]) -> bool:
    """Whether to connect with TLS: when the spec names a CA file (``tls_ca``), which gRPC
    then trusts instead of the system's (its ``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH``)."""
    if not spec.get("tls_ca"):
        return False
    os.environ["GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"] = spec["tls_ca"]
    return True


def describe(m: Message) -> dict[str, Any]:
    body = m.body
    return {
        "message_id": m.message_id,
        "topic": m.topic,
        "tag": m.tag,
        "keys": sorted(m.keys or []),
        "body": body.decode() if isinstance(body, bytes) else body,
        "properties": dict(m.properties or {}),
        "message_group": m.message_group,
        "delivery_attempt": m.delivery_attempt,
        "delivery_timestamp": m.delivery_timestamp,
        "corrupted": m.corrupted,
        "born_host": m.born_host,
        "born_timestamp": m.born_timestamp,
    }


def stdin_closed() -> threading.Event:
    """Set when the test closes our stdin: time to stop."""
    ev = threading.Event()

    def watch() -> None:
        sys.stdin.read()
        ev.set()

    threading.Thread(target=watch, daemon=True).start()
    return ev


def message(spec: dict[str, Any], i: int) -> Message:
    m = Message()
    m.topic = spec["topic"]
    m.body = f"{spec.get('prefix', 'py5')}-{i}".encode()
    if spec.get("tag"):
        m.tag = spec["tag"]
    if spec.get("keys"):
        m.keys = f"{spec['keys']}-{i}"
    if spec.get("message_group"):
        m.message_group = spec["message_group"]
    if spec.get("delay_s"):
        m.delivery_timestamp = int(time.time()) + int(spec["delay_s"])
    for k, v in (spec.get("properties") or {}).items():
        m.add_property(k, v)
    return m


def produce(spec: dict[str, Any]) -> None:
    producer = Producer(config(spec), (spec["topic"],), tls_enable=tls(spec))
    producer.startup()
    try:
        emit("ready")
        if spec.get("keep_going"):
            ride_out(producer, spec)
            return
        for i in range(spec.get("count", 1)):
            receipt = producer.send(message(spec, i))
            emit("sent", i=i, message_id=receipt.message_id, offset=receipt.offset)
    finally:
        producer.shutdown()


def ride_out(producer: Producer, spec: dict[str, Any]) -> None:
    """Sends until stdin closes or ``max_s`` passes; a failed send is reported."""
    stop = stdin_closed()
    deadline = time.monotonic() + spec.get("max_s", 90)
    i = 0
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            receipt = producer.send(message(spec, i))
        except Exception as e:  # the client raises on a failed send (after its retries)
            emit("failed", i=i, error=f"{type(e).__name__}: {e}"[:300])
        else:
            emit("sent", i=i, message_id=receipt.message_id, offset=receipt.offset)
        i += 1
        stop.wait(spec.get("interval_ms", 20) / 1000)


class Checker(TransactionChecker):
    def __init__(self, answer: str) -> None:
        self.answer = answer

    def check(self, message: Message) -> TransactionResolution:
        emit("checked", **describe(message))
        if self.answer == "commit":
            return TransactionResolution.COMMIT
        return TransactionResolution.ROLLBACK


def transaction(spec: dict[str, Any]) -> None:
    """Sends one half message per entry of ``outcomes`` ("commit", "rollback" or "unknown":
    left for the server's check, answered with ``checker``), then waits for stdin to close."""
    stop = stdin_closed()
    producer = Producer(
        config(spec),
        (spec["topic"],),
        checker=Checker(spec.get("checker", "commit")),
        tls_enable=tls(spec),
    )
    producer.startup()
    try:
        emit("ready")
        for i, outcome in enumerate(spec["outcomes"]):
            tx = producer.begin_transaction()
            receipt = producer.send(message(spec, i), tx)
            if outcome == "commit":
                tx.commit()
            elif outcome == "rollback":
                tx.rollback()
            emit("sent", i=i, outcome=outcome, message_id=receipt.message_id)
        stop.wait(spec.get("timeout", 120))
    finally:
        producer.shutdown()


def filter_expression(spec: dict[str, Any]) -> FilterExpression:
    """The spec's ``sql`` (an SQL92 expression) or ``expression`` (tags)."""
    if "sql" in spec:
        return FilterExpression(spec["sql"], FilterType.SQL)
    return FilterExpression(spec.get("expression", "*"))


def simple_consume(spec: dict[str, Any]) -> None:
    """Receives until ``count`` messages were acked; messages whose body is in ``hold`` are
    not acked the first time (they come back after ``invisible_s``); those in ``extend`` get
    their invisible time changed to ``extend_s`` first. Stops at ``count`` or ``timeout``."""
    expression = filter_expression(spec)
    consumer = SimpleConsumer(
        config(spec),
        spec["group"],
        {spec["topic"]: expression},
        spec.get("await_s", 5),
        tls_enable=tls(spec),
    )
    consumer.startup()
    held: set[str] = set()
    acked = 0
    deadline = time.monotonic() + spec.get("timeout", 120)
    try:
        emit("ready")
        while acked < spec.get("count", 1) and time.monotonic() < deadline:
            for m in consumer.receive(spec.get("batch", 16), spec.get("invisible_s", 15)):
                d = describe(m)
                emit("received", **d)
                if d["body"] in spec.get("hold", []) and d["body"] not in held:
                    held.add(d["body"])
                    continue
                if d["body"] in spec.get("extend", []) and d["body"] not in held:
                    held.add(d["body"])
                    consumer.change_invisible_duration(m, spec.get("extend_s", 2))
                    emit("extended", body=d["body"])
                    continue
                consumer.ack(m)
                acked += 1
                emit("acked", body=d["body"], message_id=d["message_id"])
        emit("done", acked=acked)
    finally:
        consumer.shutdown()


def _endpoints(spec: dict[str, Any]) -> Any:
    """The spec's endpoint as the protocol's ``Endpoints``."""
    from rocketmq.grpc_protocol import definition_pb2 as d

    host, port = spec["endpoint"].rsplit(":", 1)
    return d.Endpoints(scheme=d.IPv4, addresses=[d.Address(host=host, port=int(port))])


def _unsigned_metadata() -> tuple[tuple[str, str], ...]:
    """A new client id, without credentials (servers without ACL)."""
    import uuid

    return (("x-mq-client-id", f"stub-{uuid.uuid4().hex[:8]}"), ("x-mq-namespace", ""))


def _assignment(stub: Any, spec: dict[str, Any], md: Any) -> tuple[Any, Any, Any]:
    """The spec's group and topic as resources, and the queue QueryAssignment gives them."""
    from rocketmq.grpc_protocol import definition_pb2 as d
    from rocketmq.grpc_protocol import service_pb2 as s

    group, topic = d.Resource(name=spec["group"]), d.Resource(name=spec["topic"])
    qa = stub.QueryAssignment(
        s.QueryAssignmentRequest(topic=topic, group=group, endpoints=_endpoints(spec)),
        metadata=md,
    )
    return group, topic, qa.assignments[0].message_queue


def stub_batch_ack(spec: dict[str, Any]) -> None:
    """Through the package's generated gRPC stub (what its clients call underneath): receives
    ``count`` messages and acks all but those in ``hold`` in ONE AckMessage of many entries
    (the protocol allows it; the package's consumers ack one at a time), then the same with a
    blank group (refused), then receives again until ``timeout`` to see what comes back
    (acking each of those on its own)."""
    import grpc
    from rocketmq.grpc_protocol import definition_pb2 as d
    from rocketmq.grpc_protocol import service_pb2 as s
    from rocketmq.grpc_protocol import service_pb2_grpc as sg

    md = _unsigned_metadata()
    with grpc.insecure_channel(spec["endpoint"]) as channel:
        stub = sg.MessagingServiceStub(channel)
        group, topic, queue = _assignment(stub, spec, md)

        def receive() -> list[Any]:
            req = s.ReceiveMessageRequest(
                group=group, message_queue=queue, batch_size=32, auto_renew=False,
                filter_expression=d.FilterExpression(type=d.TAG, expression="*"),
            )  # fmt: skip
            req.invisible_duration.seconds = spec.get("invisible_s", 2)
            req.long_polling_timeout.seconds = 1
            got = [
                r.message
                for r in stub.ReceiveMessage(req, metadata=md, timeout=10)
                if r.HasField("message")
            ]
            for m in got:
                emit("received", body=m.body.decode(),
                     delivery_attempt=m.system_properties.delivery_attempt)  # fmt: skip
            return got

        emit("ready")
        first: list[Any] = []
        deadline = time.monotonic() + spec.get("timeout", 60)
        while len(first) < spec["count"] and time.monotonic() < deadline:
            first += receive()
        entries = [
            s.AckMessageEntry(message_id=m.system_properties.message_id,
                              receipt_handle=m.system_properties.receipt_handle)
            for m in first if m.body.decode() not in spec.get("hold", [])
        ]  # fmt: skip
        r = stub.AckMessage(
            s.AckMessageRequest(group=group, topic=topic, entries=entries), metadata=md
        )
        emit("acked", status=r.status.code, entries=[e.status.code for e in r.entries])
        # The same entries with a blank group, and a change of visibility with one: refused
        # before anything is done (RocketMQ's proxy validates the group first).
        blank = d.Resource(name="")
        r = stub.AckMessage(
            s.AckMessageRequest(group=blank, topic=topic, entries=entries), metadata=md
        )
        emit("blank_group_ack", status=r.status.code)
        if first:
            sp = first[0].system_properties
            change = s.ChangeInvisibleDurationRequest(
                group=blank, topic=topic, receipt_handle=sp.receipt_handle,
                message_id=sp.message_id,
            )  # fmt: skip
            change.invisible_duration.seconds = 5
            r = stub.ChangeInvisibleDuration(change, metadata=md)
            emit("blank_group_change", status=r.status.code)
        while time.monotonic() < deadline:
            for m in receive():  # what comes back is acked alone (ACK_MESSAGE)
                one = s.AckMessageEntry(message_id=m.system_properties.message_id,
                                        receipt_handle=m.system_properties.receipt_handle)  # fmt: skip
                stub.AckMessage(
                    s.AckMessageRequest(group=group, topic=topic, entries=[one]), metadata=md
                )


def stub_query_route(spec: dict[str, Any]) -> None:
    """One QueryRoute through the package's gRPC stub, with the metadata its clients sign
    (the package's own ``Signature.metadata``): emits ``answered`` with the gRPC status code
    name, and the response's status code when the call succeeded."""
    import uuid

    import grpc
    from rocketmq.grpc_protocol import definition_pb2 as d
    from rocketmq.grpc_protocol import service_pb2 as s
    from rocketmq.grpc_protocol import service_pb2_grpc as sg
    from rocketmq.v5.util.signature import Signature

    md = Signature.metadata(config(spec), f"stub-{uuid.uuid4().hex[:8]}")
    with grpc.insecure_channel(spec["endpoint"]) as channel:
        stub = sg.MessagingServiceStub(channel)
        req = s.QueryRouteRequest(topic=d.Resource(name=spec["topic"]), endpoints=_endpoints(spec))
        try:
            r = stub.QueryRoute(req, metadata=md, timeout=10)
            emit("answered", grpc="OK", status=r.status.code)
        except grpc.RpcError as e:
            emit("answered", grpc=e.code().name, details=e.details())


def stub_receive(spec: dict[str, Any]) -> None:
    """Through the gRPC stub, with no Telemetry settings at all (so nothing tells the proxy
    whether the group is FIFO): ``rounds`` receives of ``batch`` messages from the topic's
    assigned queue, none acked; emits ``round`` with the bodies of each."""
    import grpc
    from rocketmq.grpc_protocol import definition_pb2 as d
    from rocketmq.grpc_protocol import service_pb2 as s
    from rocketmq.grpc_protocol import service_pb2_grpc as sg

    md = _unsigned_metadata()
    with grpc.insecure_channel(spec["endpoint"]) as channel:
        stub = sg.MessagingServiceStub(channel)
        group, _, queue = _assignment(stub, spec, md)
        for _ in range(spec.get("rounds", 2)):
            req = s.ReceiveMessageRequest(
                group=group, message_queue=queue, batch_size=spec.get("batch", 1),
                auto_renew=False, filter_expression=d.FilterExpression(type=d.TAG, expression="*"),
            )  # fmt: skip
            req.invisible_duration.seconds = 30
            req.long_polling_timeout.seconds = 1
            got = [
                r.message.body.decode()
                for r in stub.ReceiveMessage(req, metadata=md, timeout=10)
                if r.HasField("message")
            ]
            emit("round", bodies=got)


def stub_send(spec: dict[str, Any]) -> None:
    """One SendMessage through the package's gRPC stub (no client-side checks): a message
    with ``message_group`` when given; emits ``answered`` with the response's status code and
    message."""
    import uuid

    import grpc
    from rocketmq.grpc_protocol import definition_pb2 as d
    from rocketmq.grpc_protocol import service_pb2 as s
    from rocketmq.grpc_protocol import service_pb2_grpc as sg
    from rocketmq.v5.util.signature import Signature

    md = Signature.metadata(config(spec), f"stub-{uuid.uuid4().hex[:8]}")
    props = d.SystemProperties(
        message_id=uuid.uuid4().hex.upper(),
        body_encoding=d.IDENTITY,
        message_type=d.FIFO if spec.get("message_group") else d.NORMAL,
    )
    if spec.get("message_group"):
        props.message_group = spec["message_group"]
    msg = d.Message(topic=d.Resource(name=spec["topic"]), system_properties=props, body=b"stub")
    with grpc.insecure_channel(spec["endpoint"]) as channel:
        stub = sg.MessagingServiceStub(channel)
        r = stub.SendMessage(s.SendMessageRequest(messages=[msg]), metadata=md, timeout=10)
        emit("answered", status=r.status.code, message=r.status.message)


class Listener(MessageListener):
    def __init__(self, spec: dict[str, Any]) -> None:
        self.fail_first = spec.get("fail_first", 0)
        self.slow_s = spec.get("slow_s", 0)
        self.always_fail = set(spec.get("always_fail", []))
        self.seen: dict[str, int] = {}
        self.lock = threading.Lock()

    def consume(self, message: Message) -> ConsumeResult:
        d = describe(message)
        emit("received", **d)
        with self.lock:
            self.seen[d["message_id"]] = self.seen.get(d["message_id"], 0) + 1
            n = self.seen[d["message_id"]]
        if d["body"] in self.always_fail or n <= self.fail_first:
            return ConsumeResult.FAILURE
        if self.slow_s and n == 1:
            time.sleep(self.slow_s)  # longer than the invisible time
        emit("consumed", body=d["body"])
        return ConsumeResult.SUCCESS


def push_consume(spec: dict[str, Any]) -> None:
    stop = stdin_closed()
    consumer = PushConsumer(
        config(spec),
        spec["group"],
        Listener(spec),
        {spec["topic"]: filter_expression(spec)},
        tls_enable=tls(spec),
    )
    consumer.startup()
    try:
        emit("ready")
        stop.wait(spec.get("timeout", 120))
    finally:
        consumer.shutdown()


ACTIONS = {
    "produce": produce,
    "transaction": transaction,
    "simple_consume": simple_consume,
    "push_consume": push_consume,
    "stub_batch_ack": stub_batch_ack,
    "stub_query_route": stub_query_route,
    "stub_send": stub_send,
    "stub_receive": stub_receive,
}


def main() -> None:
    spec = json.loads(sys.argv[1])
    try:
        ACTIONS[spec["action"]](spec)
    except Exception as e:  # reported to the test, which fails on it
        emit("error", error=f"{type(e).__name__}: {e}", trace=traceback.format_exc())
        sys.exit(1)
    emit("exit_clean")


if __name__ == "__main__":
    main()
