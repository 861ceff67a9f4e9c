"""Auto-batching of ``Producer.send_async`` (RocketMQ 5.x ``autoBatch``) against a real broker:
messages to one queue share requests, yet each gets its own result, id, offset, future and
callback in order; what cannot be batched goes alone; failures reach every message; shutdown
sends what was accepted. The broker's own metrics tell how many requests carried them."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import itertools
import threading
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import Future

import pytest
from metrics_scrape import scrape
from servers import in_process_dev

from helpers import fast_config, wait_until
from rocketpy import (
    BrokerResponseError,
    ClientError,
    Message,
    MessageQueue,
    Producer,
    SendResult,
    SendStatus,
    select_by_hash,
)
from rocketpy._future import SendFuture
from rocketpy.admin import Admin
from rocketpy.aio import AsyncProducer
from rocketpy.client.instance import ClientConfig
from rocketpy.producer import _producer as producer_module
from rocketpy.protocol import ResponseCode
from rocketpy.server import DevServer

# RocketMQ's metric labels name request codes (RemotingHelper.getRequestCodeDesc).
SEND_V2 = "send_message_v2"
SEND_BATCH = "send_batch_message"


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    store = tmp_path_factory.mktemp("auto-batch") / "store"
    with in_process_dev(store, metrics_port=0) as d:
        yield d


def sends(dev: DevServer) -> dict[str, float]:
    """Send requests the broker answered, by request code."""
    assert dev.broker is not None and dev.broker.metrics_address
    out: dict[str, float] = defaultdict(float)
    for name, labels, v in scrape(dev.broker.metrics_address):
        if name == "rocketmq_rpc_latency_milliseconds_count":
            out[labels["request_code"]] += v
    return out


def producer(dev: DevServer, group: str, **kwargs: object) -> Producer:
    p = Producer(group, client_config=fast_config(dev.namesrv_addr), **kwargs)  # type: ignore[arg-type]
    p.start()
    return p


def read_back(dev: DevServer, results: list[SendResult]) -> dict[str, object]:
    """The stored messages at the results' queues and offsets, by msg id."""
    admin = Admin(dev.namesrv_addr)
    try:
        out: dict[str, object] = {}
        by_queue: dict[MessageQueue, list[int]] = defaultdict(list)
        for r in results:
            by_queue[r.message_queue].append(r.queue_offset)
        for mq, offsets in by_queue.items():
            # A topic the sends created reaches the name server with the broker's next
            # registration, a moment after the answers.
            assert wait_until(lambda t=mq.topic: admin.topic_route(t) is not None, timeout=10)
            start, end = min(offsets), max(offsets) + 1
            offset = start
            while offset < end:
                got = admin.pull_messages(mq, offset, 32)
                assert got, f"nothing stored at {mq} offset {offset}"
                for m in got:
                    out[m.msg_id] = m
                offset = got[-1].queue_offset + 1
        return out
    finally:
        admin.close()


def test_single_sends_share_requests_and_each_gets_its_own_result(dev: DevServer) -> None:
    topic, n = "AutoBatchTopic", 3000
    p = producer(dev, "auto-batch-producer")
    try:
        p.send(Message(topic, b"route"))  # the topic exists before counting
        before = sends(dev)
        order: dict[MessageQueue, list[int]] = defaultdict(list)
        lock = threading.Lock()

        def callback(i: int):  # type: ignore[no-untyped-def]
            def done(result: SendResult | None, error: BaseException | None) -> None:
                assert error is None and result is not None
                with lock:
                    order[result.message_queue].append(i)

            return done

        futures = [
            p.send_async(
                Message(
                    topic, f"m-{i}", tags=f"T{i % 3}", keys=[f"k{i}"], properties={"i": str(i)}
                ),
                callback(i),
            )
            for i in range(n)
        ]
        results = [f.result(30) for f in futures]
        after = sends(dev)
    finally:
        p.shutdown()

    assert all(r.status is SendStatus.SEND_OK for r in results)
    assert len({r.msg_id for r in results}) == n
    assert len({r.offset_msg_id for r in results}) == n
    # Per queue: offsets follow the send order, one apart, and callbacks ran in that order.
    sent_order: dict[MessageQueue, list[int]] = defaultdict(list)
    for i, r in enumerate(results):
        sent_order[r.message_queue].append(i)
    for mq, indexes in sent_order.items():
        offsets = [results[i].queue_offset for i in indexes]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets))), mq
        assert order[mq] == indexes, f"callbacks of {mq} out of order"
    assert len(sent_order) > 1, "round-robin over the queues"

    batch = after.get(SEND_BATCH, 0) - before.get(SEND_BATCH, 0)
    single = after.get(SEND_V2, 0) - before.get(SEND_V2, 0)
    assert batch > 0, "some requests carried several messages"
    assert batch + single < n / 2, f"{batch} batch and {single} single requests for {n}"

    stored = read_back(dev, results)
    for i, r in enumerate(results):
        m = stored[r.msg_id]
        assert m.body == f"m-{i}".encode()  # type: ignore[attr-defined]
        assert m.tags == f"T{i % 3}" and m.keys == f"k{i}"  # type: ignore[attr-defined]
        assert m.properties["i"] == str(i)  # type: ignore[attr-defined]
        assert m.queue_offset == r.queue_offset  # type: ignore[attr-defined]
        assert m.offset_msg_id == r.offset_msg_id  # type: ignore[attr-defined]


def test_selected_queues_keep_each_order_in_sequence(dev: DevServer) -> None:
    topic = "AutoBatchOrders"
    p = producer(dev, "auto-batch-orders")
    try:
        futures = [
            (
                order,
                p.send_async(Message(topic, f"{order}:{step}"), selector=select_by_hash, arg=order),
            )
            for step in range(200)
            for order in range(5)
        ]
        results = [(order, f.result(30)) for order, f in futures]
    finally:
        p.shutdown()
    by_order: dict[int, list[SendResult]] = defaultdict(list)
    for order, r in results:
        by_order[order].append(r)
    for order, rs in by_order.items():
        assert len({r.message_queue for r in rs}) == 1, "one queue per order"
        offsets = [r.queue_offset for r in rs]
        assert offsets == sorted(offsets), f"order {order} stored out of sequence"


def test_what_cannot_be_batched_goes_alone(dev: DevServer) -> None:
    topic = "AutoBatchAlone"
    p = producer(dev, "auto-batch-alone")
    try:
        big = bytes(range(256)) * 40  # over compress_msg_body_over_howmuch: compressed alone
        futures = [
            p.send_async(Message(topic, big)),
            p.send_async(Message(topic, b"later", delay_level=1)),
            p.send_async(Message(topic, b"own timeout"), timeout_ms=5000),
            p.send_async(Message(topic, b"plain")),
        ]
        results = [f.result(30) for f in futures]
    finally:
        p.shutdown()
    assert all(r.status is SendStatus.SEND_OK for r in results)
    stored = read_back(dev, [results[0], results[2], results[3]])
    assert stored[results[0].msg_id].body == big  # type: ignore[attr-defined]
    with pytest.raises(ClientError):
        producer_off = producer(dev, "auto-batch-empty")
        try:
            producer_off.send_async(Message(topic, b""))
        finally:
            producer_off.shutdown()


def test_off_sends_every_message_alone(dev: DevServer) -> None:
    topic = "AutoBatchOff"
    p = producer(dev, "auto-batch-off", auto_batch=False)
    try:
        p.send(Message(topic, b"route"))
        before = sends(dev)
        for f in [p.send_async(Message(topic, f"{i}")) for i in range(50)]:
            f.result(30)
        after = sends(dev)
    finally:
        p.shutdown()
    assert after.get(SEND_BATCH, 0) == before.get(SEND_BATCH, 0)
    assert after[SEND_V2] - before.get(SEND_V2, 0) == 50


def test_a_refusing_broker_fails_every_message(dev: DevServer) -> None:
    topic = "AutoBatchReadOnly"
    # No route refresh during the test: the producer keeps the writable route it fetched.
    config = ClientConfig(
        dev.namesrv_addr, instance_name="refused", poll_name_server_interval_ms=600_000
    )
    p = Producer("auto-batch-refused", client_config=config, retry_times_when_send_async_failed=1)
    p.start()
    errors: list[BaseException | None] = []
    try:
        with Admin(dev.namesrv_addr) as admin:
            admin.create_topic(topic, queues=4)
            wait_until(lambda: admin.topic_route(topic) is not None)
            p.send_async(Message(topic, b"route")).result(30)
            # The producer keeps the writable route; the broker now refuses writes.
            admin.create_topic(topic, queues=4, perm=4)
        futures = []
        refused_at_once = 0
        for i in range(40):
            try:
                futures.append(p.send_async(Message(topic, f"{i}"), lambda r, e: errors.append(e)))
            except ClientError:
                # A failed send refreshed the route: the topic is known unwritable now.
                refused_at_once += 1
        for f in futures:
            # The broker's refusal (NO_PERMISSION, its code kept), or the refreshed route's.
            with pytest.raises((BrokerResponseError, ClientError)):
                f.result(30)
    finally:
        p.shutdown()
    assert futures, "the first sends went out before the route said otherwise"
    assert len(futures) + refused_at_once == 40
    assert len(errors) == len(futures)
    for e in errors:
        assert isinstance(e, ClientError) or (
            isinstance(e, BrokerResponseError) and e.code == ResponseCode.NO_PERMISSION
        ), e


def test_shutdown_sends_what_was_accepted(dev: DevServer) -> None:
    p = producer(dev, "auto-batch-shutdown")
    p.send(Message("AutoBatchShutdown", b"route"))
    futures = [p.send_async(Message("AutoBatchShutdown", f"{i}")) for i in range(5000)]
    p.shutdown()
    assert all(f.done() for f in futures)
    assert all(f.result().status is SendStatus.SEND_OK for f in futures)


def test_send_futures_are_futures(dev: DevServer) -> None:
    p = producer(dev, "auto-batch-futures")
    try:
        futures = [p.send_async(Message("AutoBatchFutures", f"{i}")) for i in range(200)]
        done, pending = concurrent.futures.wait(futures, timeout=30)
        assert not pending and len(done) == 200
        assert len(list(concurrent.futures.as_completed(futures, timeout=30))) == 200
        seen: list[Future[SendResult]] = []
        futures[0].add_done_callback(seen.append)  # already done: called at once
        assert seen == [futures[0]]

        async def via_asyncio() -> SendResult:
            return await asyncio.wrap_future(p.send_async(Message("AutoBatchFutures", b"aio")))

        assert asyncio.run(via_asyncio()).status is SendStatus.SEND_OK
    finally:
        p.shutdown()


def test_send_future_waits_and_cancels_like_a_future() -> None:
    f: SendFuture[int] = SendFuture()
    assert isinstance(f, Future) and not f.done()
    with pytest.raises(concurrent.futures.TimeoutError):
        f.result(timeout=0.01)
    called: list[int] = []
    f.add_done_callback(lambda fut: called.append(fut.result()))
    threading.Timer(0.05, lambda: f._finish(7, None)).start()
    assert f.result(timeout=5) == 7 and called == [7]

    waited: SendFuture[int] = SendFuture()
    threading.Timer(0.05, lambda: waited._finish(None, ValueError("no"))).start()
    assert isinstance(waited.exception(timeout=5), ValueError)

    cancelled: SendFuture[int] = SendFuture()
    assert cancelled.cancel()
    assert not cancelled._finish(1, None), "a cancelled future stays cancelled"
    assert cancelled.cancelled()

    plain: SendFuture[int] = SendFuture()
    assert plain._finish(3, None) and plain.result() == 3 and plain.done()


def test_asyncio_sends_go_straight_to_the_accumulator(dev: DevServer) -> None:
    topic = "AutoBatchAsyncio"
    with Admin(dev.namesrv_addr) as admin:
        admin.create_topic(topic, queues=4)
        wait_until(lambda: admin.topic_route(topic) is not None)

    async def main() -> list[SendResult]:
        async with AsyncProducer(
            "auto-batch-aio", client_config=fast_config(dev.namesrv_addr)
        ) as p:
            assert p.producer.send_async_nowait(Message(topic, b"x")) is None, "no lanes yet"
            first = await p.send(Message(topic, b"first"))
            nowait = p.producer.send_async_nowait(Message(topic, b"nowait"))
            assert nowait is not None, "the route is known now"
            rest = await asyncio.gather(*(p.send(Message(topic, f"{i}")) for i in range(1000)))
            return [first, nowait.result(30), *rest]

    results = asyncio.run(main())
    assert all(r.status is SendStatus.SEND_OK for r in results)
    assert len({r.msg_id for r in results}) == len(results)


def test_a_refresh_of_the_same_route_keeps_the_lanes_a_changed_route_drops_them(
    dev: DevServer,
) -> None:
    topic = "AutoBatchRefresh"
    with Admin(dev.namesrv_addr) as admin:
        admin.create_topic(topic, queues=2)
        wait_until(lambda: admin.topic_route(topic) is not None)
    with Producer("auto-batch-refresh", client_config=fast_config(dev.namesrv_addr)) as p:
        assert p.send_async(Message(topic, b"first")).result(10).status is SendStatus.SEND_OK
        info = p.publish_info(topic)
        # What the periodic route poll does (every poll_name_server_interval_ms).
        p.update_publish_info(topic, info)
        same = p.send_async_nowait(Message(topic, b"same route"))
        assert same is not None, "an unchanged route keeps the lanes"
        assert same.result(10).status is SendStatus.SEND_OK
        assert info.route is not None
        changed = dataclasses.replace(
            info, route=dataclasses.replace(info.route, order_topic_conf="x")
        )
        p.update_publish_info(topic, changed)
        assert p.send_async_nowait(Message(topic, b"new route")) is None, "looked up again"


def test_native_futures_start_as_send_future_init_makes_them() -> None:
    # Native auto-batching makes futures without __init__: it must set nothing.
    assert vars(SendFuture()) == {}
    f = SendFuture()  # type: ignore[var-annotated]
    assert not f.done() and f._finish("r", None) and f.result(0) == "r"
    assert vars(SendFuture()) == {}, "the class's defaults are untouched"


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_failing_answer_handler_still_ends_every_message(
    dev: DevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Producer, *args: object) -> None:
        raise RuntimeError("broken handler")

    # Failed requests reach Python's handler (_batch_failed); with no code read as
    # "stored", every answer is a failure. The handler raises: each message still ends.
    monkeypatch.setattr(Producer, "_batch_failed", broken)
    monkeypatch.setattr(producer_module, "STATUS", {})
    p = producer(dev, "auto-batch-broken")
    errors: list[BaseException | None] = []
    try:
        futures = [
            p.send_async(Message("AutoBatchBroken", f"{i}"), lambda r, e: errors.append(e))
            for i in range(100)
        ]
        for f in futures:
            with pytest.raises(RuntimeError, match="broken handler"):
                f.result(30)
    finally:
        p.shutdown()
    assert len(errors) == 100 and all(isinstance(e, RuntimeError) for e in errors)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_failing_latency_handler_loses_no_message(
    dev: DevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Producer, *args: object) -> None:
        raise RuntimeError("broken latency handler")

    # With fault avoidance every answer's latency goes to Python (_batch_latency).
    monkeypatch.setattr(Producer, "_batch_latency", broken)
    p = producer(dev, "auto-batch-broken-latency", send_latency_fault_enable=True)
    try:
        futures = [p.send_async(Message("AutoBatchBroken", f"{i}")) for i in range(100)]
        assert all(f.result(30).status is SendStatus.SEND_OK for f in futures)
    finally:
        p.shutdown()


def test_sends_stick_to_a_queue_per_batch_and_share_the_queues_out_evenly(dev: DevServer) -> None:
    topic, n = "AutoBatchSticky", 20_000
    with Admin(dev.namesrv_addr) as admin:
        admin.create_topic(topic, queues=4)
        wait_until(lambda: admin.topic_route(topic) is not None)
    p = producer(dev, "auto-batch-sticky")
    try:
        p.send(Message(topic, b"route"))
        before = sends(dev)
        futures = [p.send_async(Message(topic, b"x" * 100)) for _ in range(n)]
        results = [f.result(30) for f in futures]
        after = sends(dev)
    finally:
        p.shutdown()
    per_queue: dict[int, int] = defaultdict(int)
    for r in results:
        per_queue[r.message_queue.queue_id] += 1
    runs = 1 + sum(a.message_queue != b.message_queue for a, b in itertools.pairwise(results))
    # Every queue gets its share over time...
    assert len(per_queue) == 4 and min(per_queue.values()) > 0.6 * n / 4, dict(per_queue)
    # ...in runs of consecutive messages (one batch each), not one message per queue in turn.
    assert runs < n / 10, f"{runs} runs of one queue for {n} messages"
    requests = sum(after.get(c, 0) - before.get(c, 0) for c in (SEND_V2, SEND_BATCH))
    assert requests < n / 10, f"{requests} requests for {n} messages"


def test_waiting_for_a_result_inside_a_callback_is_refused_not_a_deadlock(dev: DevServer) -> None:
    # Send callbacks run on the one thread that completes sends: waiting there for another
    # send would wait forever. It is refused at once; a synchronous send there works.
    p = producer(dev, "auto-batch-wait-in-callback")
    seen: list[object] = []
    done = threading.Event()

    def callback(result: SendResult | None, error: BaseException | None) -> None:
        try:
            p.send_async(Message("AutoBatchWait", b"inner")).result(30)
        except ClientError as e:
            seen.append(e)
        seen.append(p.send(Message("AutoBatchWait", b"sync")).status)
        done.set()

    try:
        p.send_async(Message("AutoBatchWait", b"outer"), callback).result(30)
        assert done.wait(30)
    finally:
        p.shutdown()
    refused, status = seen
    assert isinstance(refused, ClientError) and "callback" in str(refused)
    assert status is SendStatus.SEND_OK
