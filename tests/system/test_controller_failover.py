"""Controller mode (RocketMQ 5.x automatic failover) as a user sees it: a name server running a
controller (``enableControllerInNamesrv``) and two brokers of group broker-a in this process
(``rocketpy._native.Broker``, ``enableControllerMode=true``). A producer started once sends
SYNC; the master stops; the same producer goes on once the controller has made the in-sync
replica master; a consumer of a new group then receives every acknowledged message; the old
master's store, started again, rejoins as a replica and is back in the SyncStateSet."""

from __future__ import annotations

import logging
import time
from collections import Counter
from pathlib import Path

import pytest
from servers import (
    CONTROLLER_MODE_BROKER_SETTINGS,
    HOST_DISK_SETTINGS,
    TEST_COMMIT_LOG_FILE,
    free_port,
)

from helpers import (
    Collector,
    controller_replicas,
    fast_config,
    pull_bodies,
    start_consumer,
    wait_until,
)
from rocketpy import ConsumeFromWhere, Message, Producer, SendResult, SendStatus
from rocketpy._native import Broker, NameServer
from rocketpy.admin import Admin
from rocketpy.admin.controller import ReplicasInfo
from rocketpy.cli import main as rocketpy_main
from rocketpy.errors import RocketpyError

GROUP, TOPIC = "broker-a", "FailoverTopic"
BEFORE, AFTER = 200, 100  # messages sent before and after the master stops
DEADLINE = 20.0  # seconds a message sent during the failover may take to be acknowledged


def namesrv_conf(port: int, store: Path) -> str:
    """A name server with a one-controller group on ``port``, electing at once."""
    return (
        "enableControllerInNamesrv=true\ncontrollerDLegerGroup=group1\n"
        f"controllerDLegerPeers=n0-127.0.0.1:{port}\ncontrollerDLegerSelfId=n0\n"
        f"controllerStorePath={store}\nelectionWarmUpMillis=0\n"
        "scanNotActiveBrokerInterval=200\nscanInactiveMasterInterval=200\n"
    )


def broker_keys(namesrv: str, controller: str, store: Path) -> dict[str, str]:
    """A broker of broker-a in controller mode (the keys of the Rust test controller_mode.rs),
    on fixed free ports so that a restart comes back at the same address."""
    store.mkdir(parents=True, exist_ok=True)
    return {
        **HOST_DISK_SETTINGS,
        "namesrvAddr": namesrv,
        "bindAddress": "127.0.0.1",
        "brokerIP1": "127.0.0.1",
        "listenPort": str(free_port(span=3)),
        "haListenPort": str(free_port()),
        "storePathRootDir": str(store),
        "mapedFileSizeCommitLog": str(TEST_COMMIT_LOG_FILE),
        "brokerName": GROUP,
        **CONTROLLER_MODE_BROKER_SETTINGS,
        "controllerAddr": controller,
    }


def store_port(result: SendResult) -> int:
    """The port of the broker that stored a sent message (from its offset message id)."""
    return int(result.offset_msg_id[8:16], 16)


def replicas(controller: str) -> ReplicasInfo | None:
    """broker-a's master and SyncStateSet as the controller knows them (None: not yet)."""
    return controller_replicas(controller, GROUP)


def in_sync(controller: str) -> dict[str, int]:
    """Address -> broker id of broker-a's in-sync replicas."""
    info = replicas(controller)
    return {r.broker_address or "": r.broker_id or 0 for r in info.in_sync} if info else {}


def master(controller: str) -> str | None:
    """broker-a's master address as the controller knows it."""
    info = replicas(controller)
    return info.master_address if info else None


def route(admin: Admin) -> dict[int, str]:
    """broker-a's addresses by broker id in the topic's route (empty: no route yet)."""
    try:
        data = admin.topic_route(TOPIC)
    except RocketpyError:
        return {}
    groups = [b for b in data.broker_datas if b.broker_name == GROUP] if data else []
    return dict(groups[0].broker_addrs) if groups else {}


def test_producer_and_consumer_ride_through_a_controller_failover(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    def report(line: str) -> None:
        with capsys.disabled():  # shown by pytest -s
            print(f"\n{line}", end="")

    caplog.set_level(logging.WARNING, logger="rocketpy.producer")
    ns = NameServer.start("127.0.0.1", 0, config_text=namesrv_conf(free_port(), tmp_path / "ctl"))
    brokers: dict[str, Broker] = {}
    producer = consumer = None
    admin = Admin(ns.address)
    try:
        controller = ns.controller_address
        assert controller is not None
        keys = {n: broker_keys(ns.address, controller, tmp_path / n) for n in ("a", "b")}
        brokers["a"] = Broker.start(None, keys["a"])
        a_addr = brokers["a"].broker_addr
        assert wait_until(lambda: master(controller) == a_addr, 15), replicas(controller)
        brokers["b"] = Broker.start(None, keys["b"])
        b_addr = brokers["b"].broker_addr
        assert wait_until(lambda: set(in_sync(controller)) == {a_addr, b_addr}, 15), replicas(
            controller
        )
        ids = in_sync(controller)

        # 1. The topic, made on the master (b follows the master's metadata), and its route.
        admin.create_topic(TOPIC, queues=4, broker_addrs=[a_addr])
        assert wait_until(lambda: route(admin).get(0) == a_addr, 10), route(admin)

        # 2. SYNC sends: SEND_OK means stored on every in-sync replica.
        producer = Producer("failover-p", client_config=fast_config(ns.address))
        producer.start()
        acked: set[bytes] = set()
        for i in range(BEFORE):
            result = producer.send(Message(TOPIC, f"m{i}".encode(), keys=f"m{i}"))
            assert result.status is SendStatus.SEND_OK, (i, result)
            assert store_port(result) == brokers["a"].port, result
            acked.add(f"m{i}".encode())

        # 3. The master stops; the same producer goes on, each message tried until SEND_OK.
        caplog.clear()
        stopped_at = time.monotonic()
        brokers.pop("a").shutdown()
        shutdown_s = time.monotonic() - stopped_at
        failures: Counter[str] = Counter()  # what send() raised or answered short of SEND_OK
        first_ok: float | None = None
        for i in range(BEFORE, BEFORE + AFTER):
            body = f"m{i}".encode()
            give_up = time.monotonic() + DEADLINE
            while True:
                try:
                    result = producer.send(Message(TOPIC, body, keys=body.decode()))
                    if result.status is SendStatus.SEND_OK:
                        break
                    failures[f"status {result.status.value}"] += 1
                except RocketpyError as e:
                    failures[f"{type(e).__name__}: {str(e)[:200]}"] += 1
                assert time.monotonic() < give_up, (
                    f"m{i} not acknowledged in {DEADLINE} s: {failures}"
                )
                time.sleep(0.05)
            first_ok = first_ok or time.monotonic() - stopped_at
            assert store_port(result) == brokers["b"].port, result
            acked.add(body)
        assert master(controller) == b_addr, replicas(controller)
        assert route(admin).get(0) == b_addr, route(admin)
        # Attempts that failed inside send() (its retries): the producer logs each one.
        retried = [r.getMessage() for r in caplog.records if "failed (attempt" in r.getMessage()]
        report(
            f"failover: the master's shutdown took {shutdown_s:.3f} s; first SEND_OK (on the new"
            f" master) {first_ok:.3f} s after the shutdown began; sends that failed:"
            f" {dict(failures)}; attempts retried inside send(): {retried}"
        )

        # 4. A new group from the first offset: every acknowledged message.
        collector = Collector()
        consumer = start_consumer(
            "failover-c",
            "",
            TOPIC,
            collector,
            from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            client_config=fast_config(ns.address),
        )
        got = lambda: {m.body for m in collector.messages}  # noqa: E731
        assert wait_until(lambda: acked <= got(), 20), (
            f"{len(acked - got())} of {len(acked)} acknowledged messages not received:"
            f" {sorted(acked - got())[:10]}"
        )
        counts = Counter(m.body for m in collector.messages)
        duplicates = sum(n - 1 for n in counts.values())
        report(
            f"consumer: {len(acked)} acknowledged, all received; never acknowledged but"
            f" received: {sorted(got() - acked)}; duplicates: {duplicates}"
        )

        # 5. The old master's store starts again (same ports): a replica of b, with its id,
        # back in the SyncStateSet; the name server routes to b, a as a slave.
        brokers["a"] = Broker.start(None, keys["a"])
        assert brokers["a"].broker_addr == a_addr
        assert wait_until(lambda: in_sync(controller) == ids, 20), replicas(controller)
        assert master(controller) == b_addr, replicas(controller)
        expected_route = {0: b_addr, ids[a_addr]: a_addr}
        assert wait_until(lambda: route(admin) == expected_route, 10), route(admin)
        capsys.readouterr()
        rocketpy_main(["admin", "getSyncStateSet", "-a", controller, "-b", GROUP])
        out = capsys.readouterr().out
        assert f"#MasterAddr\t{b_addr}\n" in out, out
        assert f"brokerId={ids[a_addr]}, brokerAddress='{a_addr}', alive=true" in out, out
        assert out.count("\nInSyncReplica:") == 2 and "NotInSyncReplica" not in out, out
        # It caught up: it serves every acknowledged message (as a replica, from its own store).
        assert wait_until(lambda: acked <= pull_bodies(a_addr, TOPIC, 4), 10), sorted(
            acked - pull_bodies(a_addr, TOPIC, 4)
        )[:10]
        # The producer, never restarted, still sends to b.
        result = producer.send(Message(TOPIC, b"after rejoin"))
        assert result.status is SendStatus.SEND_OK and store_port(result) == brokers["b"].port
    finally:
        if consumer is not None:
            consumer.shutdown()
        if producer is not None:
            producer.shutdown()
        admin.close()
        for broker in reversed(brokers.values()):  # the replica first
            broker.shutdown()
        ns.shutdown()
