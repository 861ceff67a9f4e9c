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
from servers import HOST_DISK_SETTINGS, TEST_COMMIT_LOG_FILE, free_port

from helpers import Collector, fast_config, start_consumer, wait_until
from rocketpy import ConsumeFromWhere, Message, Producer, SendStatus
from rocketpy._native import Broker, NameServer, RemotingClient
from rocketpy.admin import Admin
from rocketpy.admin.controller import ControllerAdmin, ReplicasInfo
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
        "brokerRole": "SLAVE",
        "brokerId": "-1",
        "enableControllerMode": "true",
        "controllerAddr": controller,
        "allAckInSyncStateSet": "true",
        "syncBrokerMetadataPeriod": "200",
        "checkSyncStateSetPeriod": "200",
        "brokerHeartbeatInterval": "100",
        "registerNameServerPeriod": "1000",
        "haSendHeartbeatInterval": "200",
        "slaveTimeout": "5000",
    }


def replicas(controller: str) -> ReplicasInfo | None:
    """broker-a's master and SyncStateSet as the controller knows them (None: not yet)."""
    client = RemotingClient()
    try:
        return ControllerAdmin(client).sync_state_data(controller, [GROUP]).get(GROUP)
    except RocketpyError:
        return None
    finally:
        client.shutdown()


def in_sync(controller: str) -> dict[str, int]:
    """Address -> broker id of broker-a's in-sync replicas."""
    info = replicas(controller)
    return {r.broker_address or "": r.broker_id or 0 for r in info.in_sync} if info else {}


def route_master(admin: Admin) -> str | None:
    """broker-a's master address in the topic's route (None: no route, or no master)."""
    try:
        route = admin.topic_route(TOPIC)
    except RocketpyError:
        return None
    datas = [b for b in route.broker_datas if b.broker_name == GROUP] if route else []
    return datas[0].master_addr() if datas else None


def test_producer_and_consumer_ride_through_a_controller_failover(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    def report(line: str) -> None:
        with capsys.disabled():  # shown by pytest -s
            print(f"\n{line}", end="")

    ns = NameServer.start("127.0.0.1", 0, config_text=namesrv_conf(free_port(), tmp_path / "ctl"))
    brokers: dict[str, Broker] = {}
    producer = consumer = None
    try:
        controller = ns.controller_address
        assert controller is not None
        keys = {n: broker_keys(ns.address, controller, tmp_path / n) for n in ("a", "b")}
        brokers["a"] = Broker.start(None, keys["a"])
        a_addr = brokers["a"].broker_addr
        assert wait_until(lambda: (replicas(controller) or ReplicasInfo(*[None] * 4)).master_address
                          == a_addr, 15), replicas(controller)  # fmt: skip
        brokers["b"] = Broker.start(None, keys["b"])
        b_addr = brokers["b"].broker_addr
        assert wait_until(lambda: set(in_sync(controller)) == {a_addr, b_addr}, 15), replicas(
            controller
        )
        a_id = in_sync(controller)[a_addr]

        # 1. The topic on the master (b receives it with the master's metadata); its route.
        with Admin(ns.address) as admin:
            admin.create_topic(TOPIC, queues=4, broker_addrs=[a_addr])
            assert wait_until(lambda: route_master(admin) == a_addr, 10), admin.topic_route(TOPIC)

        # 2. SYNC sends: SEND_OK means stored on every in-sync replica.
        producer = Producer("failover-p", client_config=fast_config(ns.address))
        producer.start()
        acked: set[bytes] = set()
        stored_by: Counter[str] = Counter()
        for i in range(BEFORE):
            result = producer.send(Message(TOPIC, f"m{i}".encode(), keys=f"m{i}"))
            assert result.status is SendStatus.SEND_OK, (i, result)
            acked.add(f"m{i}".encode())
            if i >= BEFORE - 4:
                report(f"DBG {i} {result}")
        report(f"DBG a={a_addr} b={b_addr}")
        stored_by["before"] = len(acked)

        # 3. The master stops; the same producer goes on, each message retried until SEND_OK.
        stopped_at = time.monotonic()
        brokers.pop("a").shutdown()
        shutdown_s = time.monotonic() - stopped_at
        failures: Counter[str] = Counter()
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
                    failures[f"{type(e).__name__}: {str(e)[:120]}"] += 1
                assert time.monotonic() < give_up, (
                    f"m{i} not acknowledged {DEADLINE} s after its first try: {failures}"
                )
                time.sleep(0.05)
            if first_ok is None:
                first_ok = time.monotonic() - stopped_at
            acked.add(body)
            stored_by[result.message_queue.broker_name] += 1
            report(f"DBG {i} {time.monotonic() - stopped_at:.3f} {result}")
        info = replicas(controller)
        assert info is not None and info.master_address == b_addr, info
        for r in caplog.records:
            report(f"LOG {r.created:.3f} {r.name} {r.levelname} {r.getMessage()[:300]}")
        report(f"stopped at wall {time.time() - (time.monotonic() - stopped_at):.3f}")
        report(
            f"failover: shutdown of the master took {shutdown_s:.3f} s; first SEND_OK on the"
            f" new master {first_ok:.3f} s after the shutdown began; failed tries"
            f" {sum(failures.values())}: {dict(failures)}"
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
        extras = sorted(got() - acked)
        duplicates = sum(n - 1 for n in counts.values())
        report(f"received {len(got())} bodies, extras {extras}, duplicates {duplicates}")

        # 5. The old master's store starts again: a replica of b, back in the SyncStateSet.
        brokers["a"] = Broker.start(None, keys["a"])
        assert brokers["a"].broker_addr == a_addr
        assert wait_until(lambda: in_sync(controller) == {b_addr: in_sync(controller).get(b_addr, -1),
                                                          a_addr: a_id}, 20), replicas(controller)  # fmt: skip
        capsys.readouterr()
        rocketpy_main(["admin", "getSyncStateSet", "-a", controller, "-b", GROUP])
        out = capsys.readouterr().out
        assert f"#MasterAddr\t{b_addr}\n" in out, out
        assert f"brokerId={a_id}, brokerAddress='{a_addr}', alive=true" in out, out
        assert out.count("\nInSyncReplica:") == 2 and "NotInSyncReplica" not in out, out
        # The producer, never restarted, still sends (to b).
        assert producer.send(Message(TOPIC, b"after rejoin")).status is SendStatus.SEND_OK
    finally:
        if consumer is not None:
            consumer.shutdown()
        if producer is not None:
            producer.shutdown()
        for broker in brokers.values():
            broker.shutdown()
        ns.shutdown()
