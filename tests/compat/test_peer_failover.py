"""Clients this project did not write across an automatic failover of ``rocketpy dev
--controller`` (three brokers of broker-a, a controller in the name server), each sending
all along with one producer that is never restarted:

- the Apache RocketMQ C++ client (PyPI ``rocketmq`` 0.4.4, a 4.x client that knows nothing of
  controller mode) follows the new master through the name server's route;
- the official RocketMQ 5.x Python client (gRPC) keeps the endpoint of a broker that is not
  the master: that broker's proxy reaches whichever broker is master.

The master stops; sends fail for a moment (or not at all, where the client's retries cover
it), then go on; a rocketpy consumer reads every message the client saw acknowledged."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from servers import in_process_dev

from helpers import Collector, fast_config, start_consumer
from peerlib import Peer, start_peer
from rocketpy import ConsumeFromWhere
from rocketpy.admin import Admin

TOPIC = "PeerFailover"
#: Acknowledged sends after the master stopped that show the client goes on.
AFTER = 50


@pytest.mark.parametrize("client", ["cpp", "py5"])
def test_a_peer_producer_rides_out_a_failover_and_loses_nothing(
    client: str, tmp_path: Path, peers: list[Peer]
) -> None:
    with in_process_dev(tmp_path / "store", controller=True, grpc_port=0) as dev:
        with Admin(dev.namesrv_addr) as admin:
            admin.create_topic(TOPIC, queues=4)
        master = dev.broker
        assert master is not None
        if client == "cpp":
            where = {"namesrv": dev.namesrv_addr}
        else:
            survivor = next(b for b in dev.replicas.values() if b is not master)
            where = {"endpoint": survivor.grpc_address}
        p = start_peer(
            client, peers, tmp_path, action="produce", topic=TOPIC, prefix=client,
            keep_going=True, interval_ms=20, max_s=120, **where,
        )  # fmt: skip
        assert len(p.wait_for("sent", AFTER, timeout=60)) >= AFTER, p.stderr[-20:]
        stopped = dev.stop_master()
        before = len(p.of("sent")) + len(p.of("failed"))  # sends numbered from here began after

        def acked_after() -> int:
            return len([e for e in p.of("sent") if e["i"] >= before])

        deadline = time.monotonic() + 60
        while acked_after() < AFTER and time.monotonic() < deadline:
            time.sleep(0.1)
        events = p.finish(timeout=60)
        sent = [e for e in events if e["event"] == "sent"]
        failed = [e for e in events if e["event"] == "failed"]
        assert len([e for e in sent if e["i"] >= before]) >= AFTER, (
            f"{client}: sends did not go on after {stopped} stopped: {failed[-3:]}"
        )
        print(f"{client}: {len(failed)} sends failed during the failover, {len(sent)} acked")

        got = Collector()
        c = start_consumer(
            "peer-failover-reader", dev.namesrv_addr, TOPIC, got, "*",
            ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            client_config=fast_config(dev.namesrv_addr),
        )  # fmt: skip
        try:
            msgs = got.wait_for(len(sent), timeout=60)
        finally:
            c.shutdown()
        read = {m.msg_id for m in msgs}
        key = "msg_id" if client == "cpp" else "message_id"
        lost = [e["i"] for e in sent if e[key] not in read]
        assert not lost, f"acknowledged, never read: {lost}"
