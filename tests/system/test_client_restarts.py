"""Clients keep working across server restarts: a broker killed and started again on the
same port and store, and a name server restarted (the broker registers again, clients
refresh routes and reconnect). Nothing acknowledged is lost."""

from __future__ import annotations

from servers import broker, free_port, namesrv

from helpers import Collector, fast_config, start_consumer, wait_until
from rocketpy import ConsumeFromWhere, Message, Producer, RocketpyError

TOPIC = "RestartTopic"


def test_clients_survive_broker_and_name_server_restarts(tmp_path):
    ns_port, broker_port = free_port(), free_port()
    ns_addr = f"127.0.0.1:{ns_port}"
    ns = namesrv(ns_port).start()
    br = broker(ns_addr, broker_port, tmp_path / "store").start()
    producer = Producer("restart-p", client_config=fast_config(ns_addr))
    collector = Collector()
    consumer = None
    acked: set[bytes] = set()

    def send(tag: str, n: int, p: Producer = producer) -> int:
        """Sends n messages; how many failed."""
        failed = 0
        for i in range(n):
            body = f"{tag}-{i}".encode()
            try:
                p.send(Message(TOPIC, body))
                acked.add(body)
            except RocketpyError:
                failed += 1
        return failed

    try:
        producer.start()
        assert send("first", 20) == 0
        consumer = start_consumer(
            "restart-c",
            "",
            TOPIC,
            collector,
            from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            client_config=fast_config(ns_addr),
        )
        assert wait_until(lambda: len(collector.messages) >= 20)

        # The broker crashes and comes back on the same port and store.
        assert br.kill() == -9
        assert send("down", 3) == 3, "nothing is acknowledged while the broker is down"
        br.start()
        assert wait_until(lambda: send("probe", 1) == 0, timeout=30), "sends resume"
        assert send("after-broker", 20) == 0

        # The name server restarts with an empty table: the broker registers again within
        # registerNameServerPeriod, and a new client finds routes there.
        assert ns.stop() == 0
        ns.start()
        assert send("cached-route", 10) == 0, "sends with cached routes go on"
        with Producer("restart-p2", client_config=fast_config(ns_addr)) as fresh:
            assert wait_until(lambda: send("fresh", 1, fresh) == 0, timeout=30)
        assert send("after-namesrv", 20) == 0

        got = lambda: {m.body for m in collector.messages}  # noqa: E731
        assert wait_until(lambda: acked <= got(), timeout=60), sorted(acked - got())[:5]
    finally:
        if consumer is not None:
            consumer.shutdown()
        producer.shutdown()
        br.stop()
        ns.stop()
