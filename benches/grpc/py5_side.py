"""The gRPC side of ``benches.grpc``, run with the Python of the ``make compat-py5`` venv: the
official RocketMQ 5.x Python client sending or receiving+acking from ``threads`` threads for
``seconds``, or (``send_stub``) the client package's generated gRPC stub sending with
``inflight`` calls in flight on asyncio, or (``receive_stub``) receiving 32 at a time and
acking each batch with one AckMessage — the protocol without the client's own Python work,
so the server, not the client, sets the pace. Prints one JSON line with what it did.

    python py5_side.py '{"action": "send"|"receive"|"send_stub"|"receive_stub", ...}'
"""

from __future__ import annotations

import json
import sys
import threading
import time

from rocketmq import (
    ClientConfiguration,
    Credentials,
    FilterExpression,
    Message,
    Producer,
    SimpleConsumer,
)


def run_threads(n: int, seconds: float, work) -> tuple[int, float]:  # type: ignore[no-untyped-def]
    count = [0] * n
    stop = time.monotonic() + seconds
    started = time.monotonic()

    def loop(i: int) -> None:
        while time.monotonic() < stop:
            count[i] += work()

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(count), time.monotonic() - started


def unary_stub(spec: dict, call) -> tuple[int, float]:  # type: ignore[no-untyped-def,type-arg]
    """Runs ``inflight`` loops, each awaiting ``call(stub, metadata, d, s)`` (one unary RPC)
    until ``seconds`` pass; the calls made and the seconds taken."""
    import asyncio
    import uuid

    from rocketmq.grpc_protocol import definition_pb2 as d
    from rocketmq.grpc_protocol import service_pb2 as s
    from rocketmq.grpc_protocol import service_pb2_grpc as sg

    import grpc

    async def run() -> tuple[int, float]:
        md = (("x-mq-client-id", f"bench-stub-{uuid.uuid4().hex[:8]}"), ("x-mq-namespace", ""))
        async with grpc.aio.insecure_channel(spec["endpoint"]) as channel:
            stub = sg.MessagingServiceStub(channel)
            count = 0
            stop = time.monotonic() + spec["seconds"]

            async def worker() -> None:
                nonlocal count
                while time.monotonic() < stop:
                    await call(stub, md, d, s)
                    count += 1

            started = time.monotonic()
            await asyncio.gather(*[worker() for _ in range(spec["inflight"])])
            return count, time.monotonic() - started

    return asyncio.run(run())


def send_stub(spec: dict) -> tuple[int, float]:  # type: ignore[type-arg]
    """Sends one message per SendMessage with ``inflight`` calls in flight."""
    import uuid

    body = b"x" * spec.get("size", 100)

    async def send(stub, md, d, s) -> None:  # type: ignore[no-untyped-def]
        props = d.SystemProperties(
            message_id=uuid.uuid4().hex.upper(), body_encoding=d.IDENTITY, message_type=d.NORMAL
        )
        m = d.Message(topic=d.Resource(name=spec["topic"]), body=body, system_properties=props)
        r = await stub.SendMessage(s.SendMessageRequest(messages=[m]), metadata=md)
        if r.status.code != d.OK:
            raise SystemExit(f"send failed: {r.status}")

    return unary_stub(spec, send)


def heartbeat_stub(spec: dict) -> tuple[int, float]:  # type: ignore[type-arg]
    """Heartbeats with ``inflight`` calls in flight: an RPC that asks the server for nothing,
    so its cost is the cost of a gRPC call itself (HTTP/2 framing, the connection's tasks,
    the sockets)."""

    async def beat(stub, md, d, s) -> None:  # type: ignore[no-untyped-def]
        await stub.Heartbeat(s.HeartbeatRequest(client_type=d.PRODUCER), metadata=md)

    return unary_stub(spec, beat)


def receive_stub(spec: dict) -> tuple[int, float]:  # type: ignore[type-arg]
    """Receives (``batch`` at a time) with ``inflight`` receives in flight and acks each batch
    with one AckMessage of its entries: what the protocol allows a client to do."""
    import asyncio
    import uuid

    from rocketmq.grpc_protocol import definition_pb2 as d
    from rocketmq.grpc_protocol import service_pb2 as s
    from rocketmq.grpc_protocol import service_pb2_grpc as sg

    import grpc

    async def run() -> tuple[int, float]:
        md = (("x-mq-client-id", f"bench-stub-{uuid.uuid4().hex[:8]}"), ("x-mq-namespace", ""))
        group, topic = d.Resource(name=spec["group"]), d.Resource(name=spec["topic"])
        host, port = spec["endpoint"].rsplit(":", 1)
        endpoints = d.Endpoints(scheme=d.IPv4, addresses=[d.Address(host=host, port=int(port))])
        async with grpc.aio.insecure_channel(spec["endpoint"]) as channel:
            stub = sg.MessagingServiceStub(channel)
            qa = await stub.QueryAssignment(
                s.QueryAssignmentRequest(topic=topic, group=group, endpoints=endpoints),
                metadata=md,
            )
            queues = [a.message_queue for a in qa.assignments]
            if not queues:
                raise SystemExit(f"no assignment: {qa.status}")
            count = 0
            stop = time.monotonic() + spec["seconds"]

            async def worker(i: int) -> None:
                nonlocal count
                while time.monotonic() < stop:
                    req = s.ReceiveMessageRequest(
                        group=group, message_queue=queues[i % len(queues)],
                        filter_expression=d.FilterExpression(type=d.TAG, expression="*"),
                        batch_size=spec.get("batch", 32), auto_renew=False,
                    )  # fmt: skip
                    req.invisible_duration.seconds = 30
                    req.long_polling_timeout.seconds = 1
                    got = [
                        r.message
                        async for r in stub.ReceiveMessage(req, metadata=md, timeout=10)
                        if r.HasField("message")
                    ]
                    if not got:
                        continue
                    entries = [
                        s.AckMessageEntry(
                            message_id=m.system_properties.message_id,
                            receipt_handle=m.system_properties.receipt_handle,
                        )
                        for m in got
                    ]
                    ack = s.AckMessageRequest(group=group, topic=topic, entries=entries)
                    r = await stub.AckMessage(ack, metadata=md)
                    if r.status.code != d.OK:
                        raise SystemExit(f"ack failed: {r.status}")
                    count += len(got)

            started = time.monotonic()
            await asyncio.gather(*[worker(i) for i in range(spec["inflight"])])
            return count, time.monotonic() - started

    return asyncio.run(run())


def main() -> None:
    spec = json.loads(sys.argv[1])
    stubs = {"send_stub": send_stub, "receive_stub": receive_stub, "heartbeat_stub": heartbeat_stub}
    if spec["action"] in stubs:
        n, elapsed = stubs[spec["action"]](spec)
        print(json.dumps({"count": n, "seconds": elapsed}), flush=True)
        return
    config = ClientConfiguration(spec["endpoint"], Credentials(), "", 10)
    body = b"x" * spec.get("size", 100)
    if spec["action"] == "send":
        producer = Producer(config, (spec["topic"],))
        producer.startup()

        def send() -> int:
            m = Message()
            m.topic = spec["topic"]
            m.body = body
            producer.send(m)
            return 1

        send()  # warm the route and connection
        n, elapsed = run_threads(spec["threads"], spec["seconds"], send)
        producer.shutdown()
    else:
        consumer = SimpleConsumer(config, spec["group"], {spec["topic"]: FilterExpression("*")}, 2)
        consumer.startup()

        def receive() -> int:
            got = consumer.receive(32, 30)
            for m in got:
                consumer.ack(m)
            return len(got)

        n, elapsed = run_threads(spec["threads"], spec["seconds"], receive)
        consumer.shutdown()
    print(json.dumps({"count": n, "seconds": elapsed}), flush=True)


if __name__ == "__main__":
    main()
