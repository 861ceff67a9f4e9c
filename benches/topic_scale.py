"""Scale with topics: one ``rocketpy dev`` (separate process, loopback) grown to 100, 1,000
and 10,000 topics of 4 queues with one message per queue. Printed at each level:

- creating a topic (UPDATE_AND_CREATE_TOPIC, mean of the last 100 creations);
- the first send to a new queue, and a second send to the same queue (means over 100 queues
  of topics whose routes are known; the first creates the queue's ConsumeQueue file);
- a route lookup on the name server (GET_ROUTEINFO_BY_TOPIC, mean of 200);
- consumer groups: min(topics, 1,000) groups are registered by heartbeats; the first
  heartbeat of a new group (which creates its subscription group and retry topic, mean of the
  last 100) and a heartbeat of a known group (mean of 200);
- broker RSS and the store's disk blocks (as ``du``).

Run: ``make bench-scale`` (or ``python benches/topic_scale.py [--levels 100,1000,10000]``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from servers import dev as servers_dev

from rocketpy import Message, MessageQueue, Producer
from rocketpy._native import RemotingClient
from rocketpy.admin import Admin
from rocketpy.protocol import RequestCode

QUEUES = 4


def du(path: Path) -> int:
    total = 0
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            with contextlib.suppress(FileNotFoundError):
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def mean_ms(samples: list[float]) -> float:
    return 1000 * sum(samples) / max(1, len(samples))


def heartbeat_body(client_id: str, group: str, topic: str) -> bytes:
    return json.dumps(
        {
            "clientID": client_id,
            "producerDataSet": [],
            "consumerDataSet": [
                {
                    "groupName": group,
                    "consumeType": "CONSUME_PASSIVELY",
                    "messageModel": "CLUSTERING",
                    "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
                    "unitMode": False,
                    "subscriptionDataSet": [
                        {
                            "topic": topic,
                            "subString": "*",
                            "tagsSet": [],
                            "codeSet": [],
                            "subVersion": 0,
                            "classFilterMode": False,
                            "expressionType": "TAG",
                        }
                    ],
                }
            ],
        }
    ).encode()


def time_registration(
    client: RemotingClient, namesrv: str, broker: str
) -> tuple[list[float], list[float]]:
    """Round trips of the name server's REGISTER_BROKER with the broker's whole topic table,
    as the broker sends it every registerNameServerPeriod (the same broker, topics and
    addresses, so the routes do not change), and of the QUERY_DATA_VERSION that replaces it
    when the broker has ``forceRegister=false``."""
    table = client.invoke(broker, RequestCode.GET_ALL_TOPIC_CONFIG, None, None, 10_000).body
    body = json.dumps(
        {"topicConfigSerializeWrapper": json.loads(table or b"{}"), "filterServerList": []}
    ).encode()
    host, port = broker.rsplit(":", 1)
    header = {
        "broker_name": "broker-a",
        "broker_addr": broker,
        "cluster_name": "DefaultCluster",
        "ha_server_addr": f"{host}:{int(port) + 1}",
        "broker_id": 0,
        "compressed": False,
        "body_crc32": zlib.crc32(body) & 0x7FFFFFFF,
    }
    samples = []
    for _ in range(10):
        t0 = time.perf_counter()
        resp = client.invoke(namesrv, RequestCode.REGISTER_BROKER, header, body, 10_000)
        samples.append(time.perf_counter() - t0)
        if resp.code != 0:
            raise SystemExit(f"registration refused: {resp.code} {resp.remark}")
    version = json.dumps(json.loads(table or b"{}").get("dataVersion", {})).encode()
    who = {k: header[k] for k in ("broker_name", "broker_addr", "cluster_name", "broker_id")}
    queries = []
    for _ in range(10):
        t0 = time.perf_counter()
        resp = client.invoke(namesrv, RequestCode.QUERY_DATA_VERSION, who, version, 10_000)
        queries.append(time.perf_counter() - t0)
        if resp.code != 0 or resp.header.changed:
            raise SystemExit(f"data version query: {resp.code} {resp.remark} {resp.header}")
    return samples, queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="100,1000,10000")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        dev = servers_dev(store, settings={"mapedFileSizeCommitLog": "67108864"}).start()
        assert dev.proc is not None
        admin = Admin(dev.namesrv)
        producer = Producer("scale_producer", dev.namesrv, retry_times_when_send_failed=0)
        producer.start()
        client = RemotingClient()
        rows = []
        created = 0
        filled = 0
        groups = 0
        try:
            for level in levels:
                creations: list[float] = []
                while created < level:
                    t0 = time.perf_counter()
                    admin.create_topic(f"Scale{created}", queues=QUEUES)
                    creations.append(time.perf_counter() - t0)
                    created += 1
                # Routes reach the name server by the broker's (asynchronous) registration.
                deadline = time.monotonic() + 60
                while admin.topic_route(f"Scale{created - 1}") is None:
                    if time.monotonic() > deadline:
                        raise SystemExit("routes never arrived")
                    time.sleep(0.1)
                time.sleep(float(os.environ.get("SCALE_SETTLE_S", "0")))
                firsts: list[float] = []
                seconds: list[float] = []
                fresh = [f"Scale{i}" for i in range(max(0, created - 100), created)]
                for topic in fresh:
                    for q in range(QUEUES):
                        mq = MessageQueue(topic, "broker-a", q)
                        t0 = time.perf_counter()
                        producer.send(Message(topic, b"x" * 100), mq)
                        t1 = time.perf_counter()
                        producer.send(Message(topic, b"y" * 100), mq)
                        t2 = time.perf_counter()
                        if q > 0:  # q == 0 also pays the producer's route lookup
                            firsts.append(t1 - t0)
                            seconds.append(t2 - t1)
                # Every queue holds a message (the fresh ones got theirs above).
                for i in range(filled, created - len(fresh)):
                    for q in range(QUEUES):
                        mq = MessageQueue(f"Scale{i}", "broker-a", q)
                        producer.send(Message(mq.topic, b"x" * 100), mq)
                filled = created
                lookups: list[float] = []
                for i in range(200):
                    t0 = time.perf_counter()
                    client.invoke(
                        dev.namesrv,
                        RequestCode.GET_ROUTEINFO_BY_TOPIC,
                        {"topic": f"Scale{i * 7919 % created}"},
                        None,
                        5000,
                    )
                    lookups.append(time.perf_counter() - t0)
                new_beats: list[float] = []
                while groups < min(created, 1000):
                    body = heartbeat_body(
                        f"127.0.0.1@bench{groups}", f"group{groups}", f"Scale{groups % created}"
                    )
                    t0 = time.perf_counter()
                    client.invoke(dev.broker, RequestCode.HEART_BEAT, None, body, 5000)
                    new_beats.append(time.perf_counter() - t0)
                    groups += 1
                beats: list[float] = []
                for i in range(200):
                    g = i * 7919 % groups
                    body = heartbeat_body(f"127.0.0.1@bench{g}", f"group{g}", f"Scale{g % created}")
                    t0 = time.perf_counter()
                    client.invoke(dev.broker, RequestCode.HEART_BEAT, None, body, 5000)
                    beats.append(time.perf_counter() - t0)
                registrations, queries = time_registration(client, dev.namesrv, dev.broker)
                time.sleep(1.5)  # let the store flush
                row = {
                    "topics": created,
                    "create_ms": round(mean_ms(creations[-100:]), 3),
                    "first_send_ms": round(mean_ms(firsts), 3),
                    "second_send_ms": round(mean_ms(seconds), 3),
                    "route_lookup_ms": round(mean_ms(lookups), 3),
                    "groups": groups,
                    "new_group_heartbeat_ms": round(mean_ms(new_beats[-100:]), 3),
                    "heartbeat_ms": round(mean_ms(beats), 3),
                    "registration_ms": round(mean_ms(registrations), 3),
                    "version_query_ms": round(mean_ms(queries), 3),
                    "broker_rss_mb": round(rss(dev.proc.pid) / 1e6, 1),
                    "disk_mb": round(du(store) / 1e6, 1),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            producer.shutdown()
            admin.close()
            client.shutdown()
            dev.stop()
    print()
    print(
        "| topics (x4 queues) | create topic | first send to a new queue | second send | route lookup "
        "| groups | new group's heartbeat | heartbeat | registration | data version query "
        "| broker RSS | disk (du) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['topics']:,} | {r['create_ms']} ms | {r['first_send_ms']} ms | {r['second_send_ms']} ms | "
            f"{r['route_lookup_ms']} ms | {r['groups']:,} | {r['new_group_heartbeat_ms']} ms | "
            f"{r['heartbeat_ms']} ms | {r['registration_ms']} ms | {r['version_query_ms']} ms | "
            f"{r['broker_rss_mb']} MB | {r['disk_mb']} MB |"
        )
    if len(rows) >= 2:
        print(
            f"\ncreation at {rows[-1]['topics']:,} topics / at {rows[0]['topics']:,}: "
            f"{rows[-1]['create_ms'] / max(rows[0]['create_ms'], 1e-9):.2f}x"
        )


if __name__ == "__main__":
    main()
