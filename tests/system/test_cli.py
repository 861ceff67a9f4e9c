"""The ``rocketpy`` command: separate name server and broker processes configured by a
broker.conf with RocketMQ key names, and clean stops on SIGTERM and SIGINT."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys

from servers import BROKER_READY, HOST_DISK_SETTINGS, free_port, namesrv, rocketpy_process

from rocketpy import Message, Producer


def test_namesrv_and_broker_with_conf_file(tmp_path):
    ns_port = free_port()
    ns = namesrv(ns_port).start()
    try:
        assert f"127.0.0.1:{ns_port}" in ns.ready_line, ns.ready_line
        conf = tmp_path / "broker.conf"
        conf.write_text(
            "# RocketMQ broker.conf\n"
            "brokerClusterName = TestCluster\n"
            "brokerName=broker-t\n"
            "brokerIP1=127.0.0.1\n"
            "defaultTopicQueueNums=2\n"
            "flushDiskType=SYNC_FLUSH\n"
            "autoCreateTopicEnable=true\n"
            "mapedFileSizeCommitLog=16777216\n"
            "unknownKeyIsIgnored=1\n" + "".join(f"{k}={v}\n" for k, v in HOST_DISK_SETTINGS.items())
        )
        store = tmp_path / "store"
        # Configured by the file alone (servers.broker() would add its own keys).
        broker = rocketpy_process(
            "broker", "-n", f"127.0.0.1:{ns_port}", "-c", str(conf),
            "--host", "127.0.0.1", "--port", "0", "--store-dir", str(store),
            ready=BROKER_READY,
        ).start()  # fmt: skip
        try:
            line = broker.ready_line
            assert re.search(r"listening on 127\.0\.0\.1:\d+ as 127\.0\.0\.1:\d+", line), line
            with Producer("cli-producer", f"127.0.0.1:{ns_port}", default_topic_queue_nums=8) as p:
                r = p.send(Message("CliTopic", b"x"))
                assert r.message_queue.broker_name == "broker-t"
                assert len(p.message_queues("CliTopic")) == 2, "min(client 8, template 2)"
        finally:
            code = broker.stop()
            assert code == 0, broker.text()
            assert "rocketpy broker stopped" in broker.text()
            assert "\x1b[" not in broker.text(), "a log that is not a terminal has no colours"
        topics = json.loads((store / "config" / "topics.json").read_text())["topicConfigTable"]
        assert {"TestCluster", "broker-t", "CliTopic"} <= set(topics)
    finally:
        code = ns.stop(signum=signal.SIGINT)
        assert code == 0, ns.text()


def test_bad_config_is_a_clear_error(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("listenPort=not-a-port\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rocketpy",
            "broker",
            "-c",
            str(conf),
            "--store-dir",
            str(tmp_path / "s"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "listenPort" in proc.stderr


def test_second_broker_on_same_store_is_refused(dev_server):
    proc = subprocess.run(
        [
            sys.executable, "-m", "rocketpy", "broker", "--host", "127.0.0.1", "--port", "0",
            "--store-dir", str(dev_server.store),
        ],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "locked" in proc.stderr, proc.stderr


def test_print_config_shows_the_effective_configuration(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=broker-x\nmapedFileSizeCommitLog=65536\nflushDiskType=SYNC_FLUSH\n")
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "rocketpy", "broker", "-c", str(conf), "--print-config"),
            *("--port", "10999", "--set", "messageIndexEnable=false"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln and not ln.startswith("#")]
    effective = dict(ln.split("=", 1) for ln in lines)
    assert effective["brokerName"] == "broker-x"
    assert effective["mapedFileSizeCommitLog"] == "65536"
    assert effective["flushDiskType"] == "SYNC_FLUSH"
    assert effective["listenPort"] == "10999"
    assert effective["messageIndexEnable"] == "false"
    assert effective["brokerClusterName"] == "DefaultCluster", "defaults are printed too"
    assert len(effective) == len(lines), "every key once"
    assert "# Bytes per CommitLog file" in proc.stdout, "each key with what it sets"
    assert not (tmp_path / "store").exists(), "printing opens no store"
