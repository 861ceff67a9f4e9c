"""The other direction: rocketpy's Python client against a RocketMQ server it did not write, the
rocketmq-rust 1.0 name server and broker (crates.io ``rocketmq-namesrv``/``rocketmq-broker``,
built by ``make compat-rocketmq-rust`` into ``~/.cache/rocketpy``).

Not in ``make test`` (marker ``compat_server``): ``make compat-servers`` runs it inside a
network namespace of its own, because that broker binds every interface (with
``bindAddress=127.0.0.1`` it does not start), and tests may only use loopback.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import ServerProcess, free_port

from helpers import Collector, fast_config, start_consumer, wait_until
from rocketpy import (
    ConsumeFromWhere,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    LitePullConsumer,
    Message,
    MessageExt,
    MessageModel,
    Producer,
    PushConsumer,
    select_by_hash,
)
from rocketpy.admin import Admin

BIN = (
    Path(os.environ.get("ROCKETPY_ROCKETMQ_RUST", Path.home() / ".cache/rocketpy/rocketmq-rust"))
    / "bin"
)
FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
SERVER = "rust-server"
features = pytest.mark.features

pytestmark = [pytest.mark.compat_server]


class RustCluster:
    """rocketmq-rust's name server and broker, as processes (they print no ready line: the
    broker is ready once it registered)."""

    def __init__(self, home: Path) -> None:
        (home / "conf").mkdir(parents=True)
        env = {"ROCKETMQ_HOME": str(home)}
        ns_port, broker_port, ha_port = free_port(), free_port(3), free_port()
        self.namesrv = f"127.0.0.1:{ns_port}"
        namesrv = ServerProcess(
            [BIN / "rocketmq-namesrv-rust", "--listenPort", str(ns_port),
             "--bindAddress", "127.0.0.1", "--rocketmqHome", str(home)],
            None, env=env, log=home / "namesrv.log",
        )  # fmt: skip
        self.servers = [namesrv.start()]
        conf = home / "broker.conf"
        conf.write_text(
            "\n".join(
                [
                    "brokerClusterName=DefaultCluster",
                    "brokerName=rust-broker",
                    "brokerId=0",
                    "brokerIP1=127.0.0.1",
                    "brokerIP2=127.0.0.1",
                    f"listenPort={broker_port}",
                    f"haListenPort={ha_port}",
                    f"namesrvAddr={self.namesrv}",
                    f"storePathRootDir={home / 'store'}",
                    "autoCreateTopicEnable=true",
                    "messageDelayLevel=" + " ".join(["1s"] * 18),
                ]
            )
        )
        broker = ServerProcess(
            [BIN / "rocketmq-broker-rust", "-c", conf], None, env=env, log=home / "broker.log"
        )
        self.servers.append(broker.start())
        try:
            with Admin(self.namesrv) as admin:

                def registered() -> bool:
                    try:
                        return bool(admin.master_addrs())
                    except Exception:
                        return False

                assert wait_until(registered, timeout=60), broker.tail(3000)
        except BaseException:
            self.stop()  # the fixture that would stop them never gets the cluster
            raise

    def stop(self) -> None:
        for server in reversed(self.servers):
            server.stop()


@pytest.fixture(scope="module")
def rust_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RustCluster]:
    assert (BIN / "rocketmq-broker-rust").exists(), "build it with `make compat-rocketmq-rust`"
    c = RustCluster(tmp_path_factory.mktemp("rocketmq-rust"))
    yield c
    c.stop()


def consumer(
    cluster: RustCluster,
    group: str,
    topic: str,
    listener: object,
    expression: str = "*",
    **kw: object,
) -> PushConsumer:
    return start_consumer(
        group, cluster.namesrv, topic, listener, expression, FIRST,  # type: ignore[arg-type]
        client_config=fast_config(cluster.namesrv), **kw,
    )  # fmt: skip


@features(
    "send sync", "send async", "send oneway", "send batch", "tags, keys, user properties",
    "born host and timestamps", "push consumer, concurrent", "tag filter expression",
    "message ids (UNIQ_KEY, offsetMsgId)", clients=[SERVER],
)  # fmt: skip
def test_send_modes_and_filtered_consumption(rust_cluster: RustCluster):
    topic = "RpSend"
    ids = {}
    with Producer("rp-send", rust_cluster.namesrv) as p:
        for i in range(4):
            m = Message(topic, f"sync-{i}".encode(), tags="TagA" if i % 2 else "TagC", keys=f"k{i}")
            m.properties["color"] = "blue"
            ids[f"sync-{i}"] = p.send(m)
        futures = [
            p.send_async(Message(topic, f"async-{i}".encode(), tags="TagA")) for i in range(3)
        ]
        for f in futures:
            f.result(30)
        p.send_oneway(Message(topic, b"oneway-0", tags="TagB"))
        p.send_batch([Message(topic, f"batch-{i}".encode(), tags="TagB") for i in range(3)])
    got = Collector()
    c = consumer(rust_cluster, "rp-send-g", topic, got, "TagA || TagB")
    try:
        msgs = got.wait_for(9, timeout=60)
        time.sleep(2)
        msgs = list(got.messages)
    finally:
        c.shutdown()
    bodies = sorted(m.body.decode() for m in msgs)
    assert bodies == sorted(
        ["sync-1", "sync-3", "async-0", "async-1", "async-2", "oneway-0"]
        + [f"batch-{i}" for i in range(3)]
    )
    for m in msgs:
        if m.body.startswith(b"sync"):
            result = ids[m.body.decode()]
            assert (m.keys, m.get_property("color")) == (f"k{m.body[-1:].decode()}", "blue")
            assert m.msg_id == result.msg_id and m.offset_msg_id == result.offset_msg_id
        assert m.born_host.startswith("127.0.0.1:")
        assert abs(m.store_timestamp - time.time() * 1000) < 120_000


@features("bulk send (send_many, send_arrow)", clients=[SERVER])
def test_bulk_send(rust_cluster: RustCluster):
    """Their broker stores rocketpy's natively built batch requests row by row, keys and
    tags included."""
    topic, n = "RpBulk", 2000
    bodies = [f"bulk-{i}".encode() for i in range(n)]
    with Producer("rp-bulk", rust_cluster.namesrv) as p:
        result = p.send_many(topic, bodies, keys=[f"bk{i}" for i in range(n)], tags="TagBulk")
    assert result.count == n
    got = Collector()
    c = consumer(rust_cluster, "rp-bulk-g", topic, got, "TagBulk")
    try:
        got.wait_for(n, timeout=60)
    finally:
        c.shutdown()
    msgs = {m.body: m for m in got.messages}
    assert sorted(msgs) == sorted(bodies)
    assert all(m.keys == f"bk{m.body[5:].decode()}" for m in msgs.values())
    assert len({m.msg_id for m in msgs.values()}) == n


@features(
    "orderly send (queue selector)", "push consumer, orderly (broker queue locks)", clients=[SERVER]
)
def test_orderly(rust_cluster: RustCluster):
    topic = "RpOrder"
    with Admin(rust_cluster.namesrv) as admin:
        admin.create_topic(topic, queues=4)
    seen: dict[int, list[int]] = {}
    lock = threading.Lock()

    def listener(msgs: list[MessageExt]) -> ConsumeOrderlyStatus:
        with lock:
            for m in msgs:
                seen.setdefault(m.queue_id, []).append(int(m.body.split(b"-")[1]))
        return ConsumeOrderlyStatus.SUCCESS

    c = PushConsumer(
        "rp-order-g", consume_from_where=FIRST, client_config=fast_config(rust_cluster.namesrv)
    )
    c.subscribe(topic)
    c.register_listener(listener, orderly=True)
    c.start()
    try:
        with Producer("rp-order", rust_cluster.namesrv) as p:
            for i in range(40):
                p.send(
                    Message(topic, f"o-{i}".encode()), selector=select_by_hash, arg=f"key{i % 4}"
                )
        assert wait_until(lambda: sum(len(v) for v in seen.values()) >= 40, timeout=60)
    finally:
        c.shutdown()
    for seq in seen.values():
        assert seq == sorted(seq)
    assert sorted(x for v in seen.values() for x in v) == list(range(40))


@features("retry with reconsumeTimes", "dead-letter queue after max retries", clients=[SERVER])
def test_retry_and_dlq(rust_cluster: RustCluster):
    topic = "RpRetry"
    attempts: dict[str, list[int]] = {}
    lock = threading.Lock()

    def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        with lock:
            for m in msgs:
                attempts.setdefault(m.body.decode(), []).append(m.reconsume_times)
        if any(m.body == b"always" or len(attempts[m.body.decode()]) <= 2 for m in msgs):
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    c = consumer(rust_cluster, "rp-retry-g", topic, listener, max_reconsume_times=3)
    try:
        with Producer("rp-retry", rust_cluster.namesrv) as p:
            p.send(Message(topic, b"twice"))
            p.send(Message(topic, b"always"))
        assert wait_until(lambda: len(attempts.get("twice", [])) >= 3, timeout=90), attempts
        assert wait_until(lambda: len(attempts.get("always", [])) >= 4, timeout=90), attempts
        time.sleep(3)
    finally:
        c.shutdown()
    assert attempts["twice"] == [0, 1, 2]
    assert attempts["always"] == [0, 1, 2, 3], "then to %DLQ%rp-retry-g"
    with Admin(rust_cluster.namesrv) as admin:
        route = admin.topic_route("%DLQ%rp-retry-g")
        assert route is not None and route.queue_datas


@features("delay level", clients=[SERVER])
def test_delay_level(rust_cluster: RustCluster):
    got = Collector()
    c = consumer(rust_cluster, "rp-delay-g", "RpDelay", got)
    try:
        with Producer("rp-delay", rust_cluster.namesrv) as p:
            sent_at = time.time() * 1000
            p.send(Message("RpDelay", b"late", delay_level=3))
        (m,) = got.wait_for(1, timeout=60)
    finally:
        c.shutdown()
    assert m.store_timestamp - sent_at >= 900 and m.topic == "RpDelay"


@features("broadcasting", "pull consumer", clients=[SERVER])
def test_broadcasting_and_lite_pull(rust_cluster: RustCluster):
    topic = "RpBroadcast"
    with Admin(rust_cluster.namesrv) as admin:
        admin.create_topic(topic, queues=4)
    collectors = [Collector(), Collector()]
    members = [
        consumer(rust_cluster, "rp-bc-g", topic, got, message_model=MessageModel.BROADCASTING)
        for got in collectors
    ]
    try:
        with Producer("rp-bc", rust_cluster.namesrv) as p:
            for i in range(6):
                p.send(Message(topic, f"all-{i}".encode()))
        for got in collectors:
            assert sorted(m.body for m in got.wait_for(6, timeout=60)) == [
                f"all-{i}".encode() for i in range(6)
            ]
    finally:
        for m in members:
            m.shutdown()
    puller = LitePullConsumer(
        "rp-pull-g", consume_from_where=FIRST, client_config=fast_config(rust_cluster.namesrv)
    )
    puller.subscribe(topic)
    puller.start()
    try:
        pulled: list[MessageExt] = []
        deadline = time.monotonic() + 30
        while len(pulled) < 6 and time.monotonic() < deadline:
            pulled.extend(puller.poll(1000))
    finally:
        puller.shutdown()
    assert sorted(m.body for m in pulled) == [f"all-{i}".encode() for i in range(6)]


@features("offsets kept across consumer restart", "query by key", clients=[SERVER])
def test_offsets_across_restart_and_query_by_key(rust_cluster: RustCluster):
    topic = "RpRestart"
    with Producer("rp-restart", rust_cluster.namesrv) as p:
        first = Collector()
        c = consumer(rust_cluster, "rp-restart-g", topic, first)
        for i in range(5):
            p.send(Message(topic, f"one-{i}".encode(), keys=f"order-{i}"))
        assert len(first.wait_for(5, timeout=60)) == 5
        time.sleep(1)
        c.shutdown()  # commits the offsets
        for i in range(5):
            p.send(Message(topic, f"two-{i}".encode()))
    second = Collector()
    c = consumer(rust_cluster, "rp-restart-g", topic, second)
    try:
        second.wait_for(5, timeout=60)
        time.sleep(2)
    finally:
        c.shutdown()
    assert sorted(m.body for m in second.messages) == [f"two-{i}".encode() for i in range(5)]
    with Admin(rust_cluster.namesrv) as admin:
        found = admin.query_message(topic, "order-3")
    assert [m.body for m in found] == [b"one-3"]


def admin_cli(capsys: pytest.CaptureFixture[str], ns: str, *args: str) -> str:
    """``rocketpy admin <args> -n ns``'s output."""
    from rocketpy.mqadmin import main as mqadmin

    capsys.readouterr()
    mqadmin([args[0], "-n", ns, *args[1:]])
    return capsys.readouterr().out


@features("mqadmin commands (rocketpy admin)", clients=[SERVER])
def test_rocketpy_admin_against_their_servers(
    rust_cluster: RustCluster, capsys: pytest.CaptureFixture[str]
):
    """rocketpy's admin client against name server and broker code it did not write: the
    topic, cluster, group and message commands give the state the clients made."""
    ns, topic, group = rust_cluster.namesrv, "RpAdmin", "rp-admin-g"
    out = admin_cli(
        capsys, ns, "updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "4", "-w", "4"
    )
    assert "success" in out
    assert topic in admin_cli(capsys, ns, "topicList").split()
    route = json.loads(admin_cli(capsys, ns, "topicRoute", "-t", topic))
    assert [b["brokerName"] for b in route["brokerDatas"]] == ["rust-broker"]
    with Producer("rp-admin", rust_cluster.namesrv) as p:
        for i in range(6):
            p.send(Message(topic, f"admin-{i}".encode(), keys=f"adm-{i}"))
    status = json.loads(admin_cli(capsys, ns, "topicStatus", "-t", topic, "--json"))
    assert sum(q["maxOffset"] for q in status) == 6
    busy = max(status, key=lambda q: q["maxOffset"])
    cq = admin_cli(capsys, ns, "queryCq", "-t", topic, "-q", str(busy["queueId"]), "-i", "0")
    assert f"max: {busy['maxOffset']}, min: 0" in cq
    assert cq.count("ConsumeQueueData{physicOffset=") == busy["maxOffset"]
    brokers = json.loads(admin_cli(capsys, ns, "clusterList", "--json"))
    assert [b["brokerName"] for b in brokers] == ["rust-broker"]
    got = Collector()
    c = consumer(rust_cluster, group, topic, got)
    try:
        got.wait_for(6, timeout=60)

        def caught_up() -> bool:
            progress = json.loads(admin_cli(capsys, ns, "consumerProgress", "-g", group, "--json"))
            return progress["diffTotal"] == 0 and len(progress["queues"]) >= 4

        assert wait_until(caught_up, timeout=30)
        conn = admin_cli(capsys, ns, "consumerConnection", "-g", group)
        assert "CLUSTERING" in conn and topic in conn
    finally:
        c.shutdown()
    found = admin_cli(capsys, ns, "queryMsgByKey", "-t", topic, "-k", "adm-4")
    assert len([line for line in found.splitlines() if line.strip() and line[0] != "#"]) == 1


@features("web console pages (rocketpy console)", clients=[SERVER])
def test_console_pages_against_their_servers(rust_cluster: RustCluster):
    """The console's reads against their name server and broker (the browser test runs
    against rocketpy's in `make test`): every page answers with what the clients made."""
    import urllib.request

    from rocketpy.console import ConsoleServer

    topic = "RpConsole"
    with Producer("rp-console", rust_cluster.namesrv) as p:
        p.send(Message(topic, b"console body", keys="rp-console-key"))
    with ConsoleServer(rust_cluster.namesrv, port=0) as console:

        def get(path: str) -> str:
            with urllib.request.urlopen(console.url + path, timeout=30) as r:
                assert r.status == 200, path
                return r.read().decode()

        assert "rust-broker" in get("")
        assert topic in get("topics")
        assert "1 message(s) stored" in get(f"topics/{topic}")
        found = get(f"messages?by=key&topic={topic}&key=rp-console-key")
        assert "1 message(s) found" in found and "console body" in found
        get("groups")
        get("dlq")
