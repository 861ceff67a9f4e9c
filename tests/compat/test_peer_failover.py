"""A client this project did not write across an automatic failover: the Apache RocketMQ C++
client (PyPI ``rocketmq`` 0.4.4, a 4.x client that knows nothing of controller mode) sends
SYNC to broker-a of ``rocketpy dev --controller`` (three brokers, a controller in the name
server); the master stops; the same producer, never restarted, goes on once its route names
the new master (a few sends fail meanwhile) — and a rocketpy consumer then reads every
message the C client saw acknowledged."""

from __future__ import annotations

from pathlib import Path

from servers import in_process_dev

from helpers import Collector, fast_config, start_consumer
from peerlib import Peer, cpp
from rocketpy import ConsumeFromWhere
from rocketpy.admin import Admin

TOPIC = "PeerFailover"


def test_cpp_producer_rides_out_a_failover_and_loses_nothing(
    tmp_path: Path, peers: list[Peer]
) -> None:
    with in_process_dev(tmp_path / "store", controller=True) as dev:
        with Admin(dev.namesrv_addr) as admin:
            admin.create_topic(TOPIC, queues=4)
        p = cpp(
            peers, tmp_path, action="produce", namesrv=dev.namesrv_addr, topic=TOPIC,
            prefix="cpp", keep_going=True, interval_ms=20, recovered=50, max_s=90,
        )  # fmt: skip
        assert len(p.wait_for("sent", 50, timeout=60)) >= 50, p.stderr[-20:]
        stopped = dev.stop_master()
        events = p.finish(timeout=120)
        sent = [e for e in events if e["event"] == "sent"]
        failed = [e for e in events if e["event"] == "failed"]
        assert failed, f"no send failed after {stopped} stopped: the test saw no failover"
        after = [e for e in sent if e["i"] > max(f["i"] for f in failed)]
        assert len(after) >= 50, "sends go on, on the new master, with the same producer"
        assert all(e["status"] == "SEND_OK" for e in sent)
        print(f"{len(failed)} sends failed during the failover; {len(sent)} acknowledged")

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
        lost = [e["i"] for e in sent if e["msg_id"] not in read]
        assert not lost, f"acknowledged, never read: {lost}"
