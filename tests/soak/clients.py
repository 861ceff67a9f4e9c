"""The soak's client processes (run by soak.py as ``python clients.py ROLE NAMESRV DIR``).

Each writes what it did, one line per message, to ``DIR/<role>.log`` (flushed twice a
second), prints ``ready`` once started, and stops when ``DIR/stop-<role>`` appears:
- ``producers-a``: 10 producers sending to SoakTopic; logs each acknowledged body.
- ``producers-b``: 5 more to SoakTopic and 5 ordered producers to SoakOrdered (each with its
  own 10 sharding keys, sequence numbers per key, the next only after the last is acked).
- ``clustering``: group SoakClustering, 5 concurrent consumers.
- ``orderly``: group SoakOrderly, 5 orderly consumers of SoakOrdered.
- ``broadcasting``: group SoakBroadcasting, 5 broadcasting consumers (each logs its index).
- ``retrying``: group SoakRetrying, 5 consumers failing 5 % of first deliveries into retry.
"""

from __future__ import annotations

import itertools
import logging
import random
import sys
import threading
import time
from pathlib import Path

from rocketpy import (
    ClientConfig,
    ConsumeFromWhere,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    Message,
    MessageModel,
    Producer,
    PushConsumer,
    RocketpyError,
    select_by_hash,
)

TOPIC, ORDERED = "SoakTopic", "SoakOrdered"
#: Messages per second of each producer.
RATE = 10


class Log:
    """Lines appended to a file by many threads, flushed every half second.

    Binary, on purpose: a text file queues each write in a list until 8 KiB are pending, and
    that list's item array (600 B to 1 KiB as it grows) is reallocated by whichever listener
    thread appends; glibc keeps the freed arrays in that thread's cache (tcache, 7 per size),
    so the ~50 listener threads of the broadcasting client came to hold ~0.5 MiB of them
    (heap in use creeping for minutes after warm-up, and pinning arena pages). A buffered
    binary file copies each line into one fixed 64 KiB buffer."""

    def __init__(self, path: Path) -> None:
        self._f = path.open("ab", buffering=1 << 16)
        self._lock = threading.Lock()
        threading.Thread(target=self._flusher, daemon=True).start()

    def write(self, line: str) -> None:
        data = (line + "\n").encode()
        with self._lock:
            self._f.write(data)

    def _flusher(self) -> None:
        while True:
            time.sleep(0.5)
            self.flush()

    def flush(self) -> None:
        with self._lock:
            self._f.flush()


def config(namesrv: str, name: str) -> ClientConfig:
    return ClientConfig(
        namesrv,
        instance_name=name,
        poll_name_server_interval_ms=5_000,
        heartbeat_broker_interval_ms=5_000,
        rebalance_interval_ms=5_000,
        persist_consumer_offset_interval_ms=1_000,
    )


def produce(namesrv: str, role: str, log: Log, stop: threading.Event) -> list[threading.Thread]:
    plain = 10 if role == "producers-a" else 5
    threads = []
    for i in range(plain):
        name = f"{role}-{i}"
        threads.append(threading.Thread(target=send_plain, args=(namesrv, name, log, stop)))
    if role == "producers-b":
        for i in range(5):
            threads.append(threading.Thread(target=send_ordered, args=(namesrv, i, log, stop)))
    for t in threads:
        t.start()
    return threads


def send_plain(namesrv: str, name: str, log: Log, stop: threading.Event) -> None:
    with Producer(f"soak-{name}", client_config=config(namesrv, name)) as p:
        for seq in itertools.count():
            if stop.is_set():
                return
            body = f"{name}:{seq}"
            try:
                p.send(Message(TOPIC, body.encode(), keys=body))
                log.write(f"acked {body}")
            except RocketpyError:
                log.write(f"failed {body}")
            time.sleep(1 / RATE)


def send_ordered(namesrv: str, index: int, log: Log, stop: threading.Event) -> None:
    """Keys ``index*10 .. index*10+9`` in turn; a key's next number only once the last is
    acknowledged, so the consumers must see each key's numbers in order."""
    name = f"ordered-{index}"
    with Producer(f"soak-{name}", client_config=config(namesrv, name)) as p:
        for seq in itertools.count():
            key = index * 10 + seq % 10
            body = f"o:{key}:{seq // 10}"
            while not stop.is_set():
                try:
                    p.send(Message(ORDERED, body.encode()), selector=select_by_hash, arg=key)
                    log.write(f"acked {body}")
                    break
                except RocketpyError:
                    log.write(f"failed {body}")
                    time.sleep(0.5)
            if stop.is_set():
                return
            time.sleep(1 / RATE)


def consume(namesrv: str, role: str, log: Log) -> list[PushConsumer]:
    consumers = []
    for i in range(5):
        name = f"{role}-{i}"
        model = MessageModel.BROADCASTING if role == "broadcasting" else MessageModel.CLUSTERING
        c = PushConsumer(
            f"Soak{role.capitalize()}",
            client_config=config(namesrv, name),
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            message_model=model,
            offset_store_dir=Path(sys.argv[3]) / "offsets",
        )
        c.subscribe(ORDERED if role == "orderly" else TOPIC, "*")
        c.register_listener(listener(role, i, log), orderly=role == "orderly")
        c.start()
        consumers.append(c)
    return consumers


def listener(role: str, index: int, log: Log):  # type: ignore[no-untyped-def]
    rng = random.Random(index)

    def on_messages(msgs: list) -> object:  # type: ignore[type-arg]
        if role == "retrying" and any(m.reconsume_times == 0 for m in msgs) and rng.random() < 0.05:
            for m in msgs:
                log.write(f"failed {m.body.decode()} {m.reconsume_times}")
            return ConsumeStatus.RECONSUME_LATER
        for m in msgs:
            log.write(f"got {index} {m.body.decode()} {m.reconsume_times}")
        return ConsumeOrderlyStatus.SUCCESS if role == "orderly" else ConsumeStatus.CONSUME_SUCCESS

    return on_messages


def main() -> None:
    role, namesrv, folder = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    logging.basicConfig(
        filename=folder / f"{role}.errors", level=logging.WARNING, format="%(asctime)s %(message)s"
    )
    log = Log(folder / f"{role}.log")
    stop_file = folder / f"stop-{role}"
    stop = threading.Event()
    if role.startswith("producers"):
        threads = produce(namesrv, role, log, stop)
        print("ready", flush=True)
        while not stop_file.exists():
            time.sleep(0.2)
        stop.set()
        for t in threads:
            t.join()
    else:
        consumers = consume(namesrv, role, log)
        print("ready", flush=True)
        while not stop_file.exists():
            time.sleep(0.2)
        for c in consumers:
            c.shutdown()
    log.flush()


if __name__ == "__main__":
    main()
