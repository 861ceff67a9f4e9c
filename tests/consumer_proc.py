"""A push consumer in its own process (for kill tests): appends every received message id to
a file and prints its assigned queues whenever they change. Args: namesrv group topic out."""

from __future__ import annotations

import sys
import threading
import time

from helpers import fast_config
from rocketpy import ConsumeFromWhere, ConsumeStatus, PushConsumer


def main() -> None:
    namesrv, group, topic, out = sys.argv[1:5]
    lock = threading.Lock()
    sink = open(out, "a", buffering=1)  # noqa: SIM115 (lives as long as the process)

    def listener(msgs):  # type: ignore[no-untyped-def]
        with lock:
            for m in msgs:
                sink.write(f"{m.msg_id}\n")
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        group,
        client_config=fast_config(namesrv),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    consumer.subscribe(topic)
    consumer.register_listener(listener)
    consumer.start()
    last = None
    while True:
        mine = sorted(q.queue_id for q in consumer.assigned_queues() if q.topic == topic)
        if mine != last:
            print("queues", ",".join(map(str, mine)), flush=True)
            last = mine
        time.sleep(0.1)


if __name__ == "__main__":
    main()
