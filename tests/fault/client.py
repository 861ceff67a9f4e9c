"""The fault loop's clients, run inside the client namespace (``python client.py MODE ...``).

``load``: a producer sending SYNC, one at a time, unique keyed bodies (``<run>-<n>``) to queue
``n % queues`` of the topic, and a consumer (LitePullConsumer, a new group from the first
offset) reading it. Every send is a line of ``sends.jsonl`` (its start and end times, its
status or error, and for a stored message its queue, queue offset, CommitLog offset and the
address that stored it); every message read a line of ``reads.jsonl``. Stops on SIGTERM.

``agent``: answers one JSON request per stdin line with one JSON line on stdout: ``state``
(the controllers' leader, broker-a's master, epoch and SyncStateSet, the topic's route),
``topic`` (creates the topic on a broker), ``topic_on`` (which brokers have it), ``maxoffsets`` (each broker's CommitLog end), and
``dump`` (every message of every queue of one broker, to a JSON lines file).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocketpy import ClientConfig, ConsumeFromWhere, LitePullConsumer, Message, Producer
from rocketpy._native import RemotingClient
from rocketpy._util import json_body
from rocketpy.admin import Admin
from rocketpy.admin.controller import ControllerAdmin
from rocketpy.message import MessageQueue
from rocketpy.protocol import RequestCode, ResponseCode

# tests/helpers.py's pull header (this runs as a script in the client's namespace).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import pull_header

GROUP = "broker-a"


def config(namesrv: str, name: str) -> ClientConfig:
    """Short intervals: the clients learn a new master from the route within a second."""
    return ClientConfig(
        namesrv,
        instance_name=name,
        poll_name_server_interval_ms=500,
        heartbeat_broker_interval_ms=1000,
        persist_consumer_offset_interval_ms=1000,
        rebalance_interval_ms=1000,
        request_timeout_ms=2000,
    )


def store_of(offset_msg_id: str) -> tuple[str, int]:
    """The storing broker's ``ip:port`` and the CommitLog offset, from an offset message id."""
    ip = ".".join(str(int(offset_msg_id[i : i + 2], 16)) for i in range(0, 8, 2))
    return f"{ip}:{int(offset_msg_id[8:16], 16)}", int(offset_msg_id[16:32], 16)


class Lines:
    """A JSON lines file, one flushed line per record, safe across threads."""

    def __init__(self, path: str, mode: str = "a") -> None:
        self._f = open(path, mode, buffering=1)  # noqa: SIM115
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":"))
        with self._lock:
            self._f.write(line + "\n")

    def close(self) -> None:
        self._f.close()


def produce(args: argparse.Namespace, stop: threading.Event, out: Lines) -> None:
    producer = Producer("fault-p", client_config=config(args.namesrv, "fault-p"))
    producer.start()
    n = 0
    try:
        while not stop.is_set():
            key = f"{args.run}-{n}"
            rec: dict[str, Any] = {"k": key, "t0": time.time()}
            try:
                r = producer.send(
                    Message(args.topic, key.encode(), keys=key),
                    selector=lambda mqs, _m, i: mqs[int(i) % len(mqs)],
                    arg=n,
                )
                store, phys = store_of(r.offset_msg_id)
                rec.update(st=r.status.value, q=r.message_queue.queue_id, o=r.queue_offset)
                rec.update(phys=phys, at=store)
            except Exception as e:  # every failure is a record, never the end of the load
                rec["err"] = f"{type(e).__name__}: {str(e)[:300]}"
            rec["t1"] = time.time()
            out.write(rec)
            n += 1
            if "err" in rec:
                stop.wait(0.05)
            elif args.interval > 0:
                stop.wait(args.interval)
    finally:
        producer.shutdown()


def consume(args: argparse.Namespace, stop: threading.Event, out: Lines) -> None:
    consumer = LitePullConsumer(
        "fault-c",
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        client_config=config(args.namesrv, "fault-c"),
    )
    consumer.subscribe(args.topic, "*")
    consumer.start()
    try:
        while not stop.is_set():
            try:
                msgs = consumer.poll(timeout_ms=500)
            except Exception as e:
                out.write({"err": f"{type(e).__name__}: {str(e)[:300]}", "t": time.time()})
                stop.wait(0.5)
                continue
            now = time.time()
            for m in msgs:
                store, phys = store_of(m.offset_msg_id)
                out.write(
                    {"k": m.keys, "q": m.queue_id, "o": m.queue_offset, "phys": phys,
                     "at": store, "t": now}
                )  # fmt: skip
    finally:
        consumer.shutdown()


def load(args: argparse.Namespace) -> None:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    sends, reads = Lines(f"{args.out}/sends.jsonl"), Lines(f"{args.out}/reads.jsonl")
    workers = [
        threading.Thread(target=produce, args=(args, stop, sends), daemon=True),
        threading.Thread(target=consume, args=(args, stop, reads), daemon=True),
    ]
    for w in workers:
        w.start()
    print("load started", flush=True)
    while not stop.wait(0.2):
        pass
    for w in workers:
        w.join(15)
    sends.close()
    reads.close()
    print("load stopped", flush=True)


# -- the agent ----------------------------------------------------------------------------------


def state(req: dict[str, Any], client: RemotingClient, admin: Admin) -> dict[str, Any]:
    out: dict[str, Any] = {"leader": None, "master": None, "epoch": None, "in_sync": []}
    ctl = ControllerAdmin(client, 1500)
    for addr in req["controllers"]:
        try:
            leader = ctl.metadata(addr).leader_address
        except Exception:
            continue
        if leader:
            out["leader"] = leader
            break
    if out["leader"]:
        try:
            info = ctl.sync_state_data(out["leader"], [GROUP]).get(GROUP)
            if info is not None:
                out["master"] = info.master_address
                out["epoch"] = info.master_epoch
                out["in_sync"] = sorted(r.broker_address or "" for r in info.in_sync)
        except Exception as e:
            out["error"] = f"{type(e).__name__}: {str(e)[:200]}"
    try:
        route = admin.topic_route(req["topic"])
        datas = [b for b in route.broker_datas if b.broker_name == GROUP] if route else []
        out["route"] = {str(k): v for k, v in datas[0].broker_addrs.items()} if datas else {}
    except Exception:
        out["route"] = {}
    return out


def create_topic(req: dict[str, Any], client: RemotingClient, admin: Admin) -> dict[str, Any]:
    admin.create_topic(req["topic"], queues=req["queues"], broker_addrs=[req["addr"]])
    return {"ok": True}


def topic_on(req: dict[str, Any], client: RemotingClient, admin: Admin) -> dict[str, Any]:
    """Which brokers have the topic in their topic config (GET_ALL_TOPIC_CONFIG)."""
    has: dict[str, bool | None] = {}
    for addr in req["addrs"]:
        try:
            resp = client.invoke(addr, RequestCode.GET_ALL_TOPIC_CONFIG, None, None, 2000)
            table = json_body(resp.body, "topic config").get("topicConfigTable") or {}
            has[addr] = resp.code == ResponseCode.SUCCESS and req["topic"] in table
        except Exception:
            has[addr] = None
    return {"has": has}


def max_offsets(req: dict[str, Any], client: RemotingClient, admin: Admin) -> dict[str, Any]:
    ends: dict[str, int | None] = {}
    for addr in req["addrs"]:
        try:
            ends[addr] = int(admin.broker_runtime_info(addr)["commitLogMaxOffset"])
        except Exception:
            ends[addr] = None
    return {"ends": ends}


def pull(client: RemotingClient, addr: str, topic: str, q: int, offset: int) -> Any:
    header = pull_header("fault-check", topic, q, offset)
    return client.invoke(addr, RequestCode.PULL_MESSAGE, header, None, 5000)


def dump(req: dict[str, Any], client: RemotingClient, admin: Admin) -> dict[str, Any]:
    """Every message of every queue of ``addr``, in offset order; per queue its min and max
    offsets (what the broker says) and whether the messages read were contiguous."""
    addr, topic, queues = req["addr"], req["topic"], {}
    out = Lines(req["out"], "w")
    for q in range(req["queues"]):
        mq = MessageQueue(topic, GROUP, q)
        lo, hi = admin.min_offset(mq, addr), admin.max_offset(mq, addr)
        offset, problems, read = lo, [], 0
        while offset < hi:
            resp = pull(client, addr, topic, q, offset)
            msgs = resp.decode_messages() if resp.code == ResponseCode.SUCCESS else []
            if not msgs:
                problems.append(f"pull at {offset} (max {hi}): code {resp.code} {resp.remark}")
                break
            for m in msgs:
                if m.queue_offset != offset:
                    problems.append(f"expected offset {offset}, read {m.queue_offset}")
                store, phys = store_of(m.offset_msg_id)
                out.write({"k": m.keys, "q": q, "o": m.queue_offset, "phys": phys, "at": store})
                offset, read = m.queue_offset + 1, read + 1
        queues[q] = {"min": lo, "max": hi, "read": read, "problems": problems}
    out.close()
    return {"queues": queues}


OPS: dict[str, Callable[[dict[str, Any], RemotingClient, Admin], dict[str, Any]]] = {
    "state": state,
    "topic": create_topic,
    "maxoffsets": max_offsets,
    "topic_on": topic_on,
    "dump": dump,
}


def agent(args: argparse.Namespace) -> None:
    client = RemotingClient()
    admin = Admin(args.namesrv, timeout_ms=2000)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        try:
            answer = OPS[req["op"]](req, client, admin)
        except Exception as e:
            answer = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        print(json.dumps(answer), flush=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["load", "agent"])
    p.add_argument("--namesrv", required=True)
    p.add_argument("--topic", default="FaultTopic")
    p.add_argument("--run", default="m")
    p.add_argument("--out", default=".")
    p.add_argument("--interval", type=float, default=0.005)
    args = p.parse_args()
    load(args) if args.mode == "load" else agent(args)


if __name__ == "__main__":
    main()
