"""Master/slave replication with real server processes: two broker groups (a, b), each a
SYNC_MASTER and its slave. Master a is killed while a producer and a push consumer run: sends
go on through b, the consumer finishes a's backlog from a's slave, and nothing acknowledged
is lost (duplicates are allowed — at-least-once — and counted)."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter

from servers import broker, free_port, ha_settings, in_process_dev, namesrv

from helpers import Collector, fast_config, pull_bodies, start_consumer, wait_until
from rocketpy import ConsumeFromWhere, Message, Producer, SendStatus
from rocketpy.admin import Admin
from rocketpy.errors import RocketpyError

TOPIC = "HaTopic"


def group(ns_addr: str, name: str, tmp_path, role: str = "SYNC_MASTER"):  # type: ignore[no-untyped-def]
    """A master and its slave of broker group ``name`` (explicit HA ports: free ones)."""
    common = {"slaveTimeout": "3000"}
    master = broker(
        ns_addr,
        free_port(),
        tmp_path / f"{name}-master",
        {**common, **ha_settings(name, role, ha_port=free_port())},
    )
    slave = broker(
        ns_addr, free_port(), tmp_path / f"{name}-slave", {**common, **ha_settings(name, "SLAVE")}
    )
    return master.start(), slave.start()


def test_consumers_ride_through_a_masters_death(tmp_path):
    ns_port = free_port()
    ns_addr = f"127.0.0.1:{ns_port}"
    ns = namesrv(ns_port).start()
    servers = [*group(ns_addr, "broker-a", tmp_path), *group(ns_addr, "broker-b", tmp_path)]
    master_a = servers[0]
    acked: list[bytes] = []
    statuses: Counter[str] = Counter()
    by_broker: Counter[str] = Counter()
    stop = threading.Event()
    collector = Collector()
    consumer = None
    producer = Producer("ha-p", client_config=fast_config(ns_addr))

    def produce() -> None:
        i = 0
        while not stop.is_set():
            body = f"m{i}".encode()
            try:
                result = producer.send(Message(TOPIC, body))
                statuses[result.status.value] += 1
                if result.status is SendStatus.SEND_OK:
                    acked.append(body)
                    by_broker[result.message_queue.broker_name] += 1
            except RocketpyError:
                statuses["error"] += 1
            i += 1
            time.sleep(0.002)

    try:
        with Admin(ns_addr) as admin:
            admin.create_topic(TOPIC, queues=4)
        producer.start()
        # Slaves connect within a registration period; until then a SYNC_MASTER answers
        # SLAVE_NOT_AVAILABLE (stored, but not on a slave): wait for SEND_OK from both.
        assert wait_until(
            lambda: (
                {producer.send(Message(TOPIC, b"probe")).status for _ in range(8)}
                == {SendStatus.SEND_OK}
            ),
            timeout=30,
        )
        sender = threading.Thread(target=produce)
        sender.start()
        assert wait_until(lambda: len(acked) >= 1500, timeout=60)
        # a's share is on its slave only once a is gone; the consumer starts after, so a's
        # backlog can come from nowhere else.
        assert master_a.kill() == -9
        on_a = by_broker["broker-a"]
        assert on_a > 300, by_broker
        consumer = start_consumer(
            "ha-c",
            "",
            TOPIC,
            collector,
            from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            client_config=fast_config(ns_addr),
        )
        before_kill = len(acked)
        assert wait_until(lambda: len(acked) >= before_kill + 1500, timeout=60), statuses
        stop.set()
        sender.join()
        # After the kill, sends went to b (a's slave takes none).
        assert by_broker["broker-a"] - on_a < 20, by_broker

        got = lambda: Counter(m.body for m in collector.messages)  # noqa: E731
        assert wait_until(lambda: set(acked) <= set(got()), timeout=90), (
            f"lost {len(set(acked) - set(got()))} of {len(acked)}: {sorted(set(acked) - set(got()))[:5]}"
        )
        counts = got()
        duplicates = sum(n - 1 for b, n in counts.items() if b != b"probe" and n > 1)
        print(f"acked {dict(by_broker)}, statuses {dict(statuses)}, duplicates {duplicates}")

        # Master a returns: the consumer commits its progress on a's queues to it again.
        master_a.start()
        master_a_addr = master_a.broker
        assert wait_until(
            lambda: committed(master_a_addr, "ha-c", 4) == queue_ends(master_a_addr, 4),
            timeout=60,
        ), (committed(master_a_addr, "ha-c", 4), queue_ends(master_a_addr, 4))
    finally:
        stop.set()
        if consumer is not None:
            consumer.shutdown()
        producer.shutdown()
        for s in servers:
            s.stop()
        ns.stop()


def test_dev_server_with_a_slave(tmp_path):
    with in_process_dev(tmp_path / "dev", ha=True) as dev:
        with Producer("dev-ha-p", client_config=fast_config(dev.namesrv_addr)) as p:
            # The slave connects right after start: every send waits for it (SYNC_MASTER).
            assert wait_until(
                lambda: p.send(Message("DevHa", b"x")).status is SendStatus.SEND_OK, timeout=30
            )
            for i in range(50):
                assert p.send(Message("DevHa", f"{i}".encode())).status is SendStatus.SEND_OK
        assert dev.slave_addr != dev.broker_addr
    assert (tmp_path / "dev-slave" / "commitlog").is_dir()


def _queue_query(addr: str, code: int, queues: int, **extra: object) -> list[int]:
    from rocketpy._native import RemotingClient

    client = RemotingClient()
    try:
        out = []
        for q in range(queues):
            resp = client.invoke(addr, code, dict(topic=TOPIC, queue_id=q, **extra), None, 3000)
            out.append(int(resp.header.offset) if resp.code == 0 else -1)
        return out
    finally:
        client.shutdown()


def committed(addr: str, group: str, queues: int) -> list[int]:
    """The group's committed offsets of TOPIC's queues on the broker at ``addr``."""
    from rocketpy.protocol import RequestCode

    return _queue_query(addr, RequestCode.QUERY_CONSUMER_OFFSET, queues, consumer_group=group)


def queue_ends(addr: str, queues: int) -> list[int]:
    """The max offsets of TOPIC's queues on the broker at ``addr``."""
    from rocketpy.protocol import RequestCode

    return _queue_query(addr, RequestCode.GET_MAX_OFFSET, queues)


def test_sync_master_killed_at_random_moments_loses_nothing_on_its_slave(tmp_path):
    """The single-broker crash loop with the slave as the survivor: each cycle sends to a
    SYNC_MASTER for a random moment and kills it with SIGKILL; everything it acknowledged
    (SEND_OK) is on the slave."""
    import random

    ns_port = free_port()
    ns_addr = f"127.0.0.1:{ns_port}"
    ns = namesrv(ns_port).start()
    master, slave = group(ns_addr, "broker-a", tmp_path)
    slave_addr = slave.broker
    rng = random.Random(7)
    acked: set[bytes] = set()
    # `make ha-crash-loop` runs many more (HA_CRASH_CYCLES).
    cycles = int(os.environ.get("HA_CRASH_CYCLES", "5"))
    try:
        with Admin(ns_addr) as admin:
            admin.create_topic(TOPIC, queues=2)
        for cycle in range(cycles):
            with Producer(f"crash-p{cycle}", client_config=fast_config(ns_addr)) as p:
                # The slave reconnects within its 5 s delay: until then SLAVE_NOT_AVAILABLE.
                assert wait_until(
                    lambda p=p: p.send(Message(TOPIC, b"probe")).status is SendStatus.SEND_OK,
                    timeout=30,
                )
                stop_at = time.monotonic() + rng.uniform(0.2, 1.0)
                i = 0
                killer = threading.Timer(stop_at - time.monotonic(), master.kill)
                killer.start()
                while time.monotonic() < stop_at + 0.5:
                    body = f"c{cycle}-{i}".encode()
                    i += 1
                    try:
                        if p.send(Message(TOPIC, body)).status is SendStatus.SEND_OK:
                            acked.add(body)
                    except RocketpyError:
                        pass
                killer.join()
            on_slave = pull_bodies(slave_addr, TOPIC, 2)
            lost = acked - on_slave
            assert not lost, f"cycle {cycle}: {len(lost)} acknowledged messages not on the slave"
            master.start()
        print(f"{cycles} kills, {len(acked)} acknowledged, 0 lost")
    finally:
        master.stop()
        slave.stop()
        ns.stop()
