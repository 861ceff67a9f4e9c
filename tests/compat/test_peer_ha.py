"""Replication with a peer we did not write: rocketmq-rust 1.0's broker, whose default (non
controller) HA mode speaks RocketMQ 4.x's protocol — the slave reports its CommitLog end as
8 bytes, the master sends ``[phyOffset i64][size i32][CommitLog bytes]`` frames.

- rocketpy SYNC_MASTER, rocketmq-rust slave: every send is acknowledged SEND_OK, which our
  master gives only after the slave reported having the bytes; the slave's CommitLog is
  byte-identical to ours across file rolls; with our master killed, the slave serves every
  acknowledged message (its own dispatch of our bytes).
- rocketmq-rust SYNC_MASTER, rocketpy slave (which finds the master's HA address through the
  name server's answer to its registration): the same, the other way round.

Marker ``compat_server`` (``make compat-servers``: a network namespace of its own, because
that broker binds every interface).
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import ServerProcess, broker, free_port, ha_settings, namesrv
from test_rocketmq_rust_servers import BIN

from helpers import fast_config, pull_bodies, wait_until
from rocketpy import Message, Producer, SendStatus
from rocketpy.admin import Admin

pytestmark = [pytest.mark.compat_server]

TOPIC = "PeerHaTopic"
QUEUES = 4
#: Small CommitLog files on both sides, so a few MiB of messages roll files more than once.
FILE_SIZE = 1024 * 1024
BROKER_NAME = "peer-ha"


class RustBroker:
    """rocketmq-rust's broker as a process. Its configuration is its own TOML layout: from a
    Java-style properties file, rocketmq-rust 1.0 puts ``brokerRole`` in its store section only
    and its broker then runs as a master (no replication, no slave sync), so the role goes in
    both sections here."""

    def __init__(
        self,
        home: Path,
        ns_addr: str,
        role: str,
        broker_id: int,
        broker: dict[str, str] | None = None,
        **store: str,
    ) -> None:
        (home / "conf").mkdir(parents=True)
        self.port, self.ha_port = free_port(3), free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.home = home
        self.store = home / "store"
        store_lines = "".join(f'{k} = "{v}"\n' for k, v in store.items())
        broker_lines = "".join(f"{k} = {v}\n" for k, v in (broker or {}).items())
        conf = home / "broker.toml"
        conf.write_text(
            f"""[broker]
brokerIp1 = "127.0.0.1"
brokerIp2 = "127.0.0.1"
listenPort = {self.port}
namesrvAddr = "{ns_addr}"
storePathRootDir = "{self.store}"
registerNameServerPeriod = 10000
brokerRole = "{role}"
slaveReadEnable = true
{broker_lines}
[broker.brokerIdentity]
brokerClusterName = "DefaultCluster"
brokerName = "{BROKER_NAME}"
brokerId = {broker_id}

[store]
storePathRootDir = "{self.store}"
haListenPort = {self.ha_port}
mappedFileSizeCommitLog = {FILE_SIZE}
brokerRole = "{role}"
# A test machine's disk may be fuller than RocketMQ's 75 %: its forced clean-up would then
# delete CommitLog files this test compares.
diskMaxUsedSpaceRatio = 95
diskSpaceCleanForciblyRatio = 97
diskSpaceWarningLevelRatio = 98
{store_lines}"""
        )
        # No ready line: the tests wait for what they need of it (a registration, a sync).
        self.server = ServerProcess(
            [BIN / "rocketmq-broker-rust", "-c", conf],
            None,
            env={"ROCKETMQ_HOME": str(home)},
            log=home / "broker.log",
        ).start()

    def tail(self) -> str:
        """The end of its log, for failure messages."""
        return self.server.tail()

    def kill(self) -> None:
        """SIGKILL: a crash (and the clean-up: no stop of a peer is under test)."""
        self.server.kill()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[str, list]]:  # type: ignore[type-arg]
    """A rocketpy name server; the test appends its brokers to the list, all stopped here."""
    assert (BIN / "rocketmq-broker-rust").exists(), "build it with `make compat-rocketmq-rust`"
    port = free_port()
    ns = namesrv(port).start()
    servers: list = []  # type: ignore[type-arg]
    try:
        yield f"127.0.0.1:{port}", servers
    finally:
        for s in reversed(servers):
            if isinstance(s, RustBroker):
                if s.server.running:
                    s.kill()
            else:
                s.stop()
        ns.stop()


def bodies(n: int, seed: int) -> list[bytes]:
    """``n`` distinct bodies of many sizes (1 B to 12 KiB), ~6 KiB on average."""
    rng = random.Random(seed)
    return [f"{seed}-{i}:".encode() + rng.randbytes(rng.randint(1, 12 * 1024)) for i in range(n)]


def send_all(ns_addr: str, payloads: list[bytes]) -> None:
    """Sends each body once the SYNC_MASTER has a slave; every send must be SEND_OK (a master
    whose slave never reports would answer FLUSH_SLAVE_TIMEOUT, one without SLAVE_NOT_AVAILABLE)."""
    with Producer("peer-ha-p", client_config=fast_config(ns_addr)) as p:

        def replicated_probe() -> bool:
            try:
                return p.send(Message(TOPIC, b"probe")).status is SendStatus.SEND_OK
            except Exception:
                return False

        assert wait_until(replicated_probe, timeout=60, interval=0.5), (
            "no slave took over the bytes"
        )
        for body in payloads:
            assert p.send(Message(TOPIC, body)).status is SendStatus.SEND_OK


def commit_log(folder: Path) -> dict[str, bytes]:
    """A CommitLog folder's files by name, without the unwritten (zero) tail of the last one."""
    files = {f.name: f.read_bytes() for f in sorted(folder.iterdir()) if f.name.isdigit()}
    return {name: data.rstrip(b"\0") for name, data in files.items() if data.rstrip(b"\0")}


def assert_identical(master: Path, slave: Path) -> None:
    ours, theirs = commit_log(master), commit_log(slave)
    assert sorted(ours) == sorted(theirs)
    assert len(ours) >= 3, "the sends should roll the CommitLog at least twice"
    for name in ours:
        assert ours[name] == theirs[name], f"CommitLog file {name} differs"


def wait_same_end(master: Path, slave: Path, timeout: float = 30) -> None:
    """Until the slave's CommitLog has as many bytes as the master's (an ASYNC step of the
    last frames may still be on the way when the sends return)."""

    def total(folder: Path) -> int:
        return sum(len(d) for d in commit_log(folder).values())

    wait_until(lambda: total(slave) >= total(master), timeout=timeout, interval=0.2)


def test_rocketmq_rust_slave_of_a_rocketpy_sync_master(tmp_path: Path, cluster) -> None:  # type: ignore[no-untyped-def]
    ns_addr, servers = cluster
    ha_port, master_port = free_port(), free_port(3)  # our VIP channel is at port - 2
    master = broker(
        ns_addr,
        master_port,
        tmp_path / "master",
        {
            **ha_settings(BROKER_NAME, "SYNC_MASTER", ha_port=ha_port),
            "mapedFileSizeCommitLog": str(FILE_SIZE),
        },
    ).start()
    servers.append(master)
    with Admin(ns_addr) as admin:
        admin.create_topic(TOPIC, queues=QUEUES)
    # The slave learns our HA address from the name server's answer to its registration.
    slave = RustBroker(tmp_path / "rust-slave", ns_addr, "SLAVE", 1)
    servers.append(slave)
    payloads = bodies(500, seed=1)
    try:
        send_all(ns_addr, payloads)
    except AssertionError:
        raise AssertionError(slave.tail()) from None
    master_log, slave_log = tmp_path / "master" / "commitlog", slave.store / "commitlog"
    wait_same_end(master_log, slave_log)
    assert_identical(master_log, slave_log)

    # Metadata: every 10 s the slave takes our topic table and consumer offsets, asking our
    # master on its VIP channel (listenPort - 2) as a 4.x slave does, and stores them.
    commit_offset(f"127.0.0.1:{master_port}", "peer-ha-g", 2, 17)
    config = slave.store / "config"

    def synced() -> bool:
        try:
            topics = json.loads((config / "topics.json").read_text())["topicConfigTable"]
            offsets = json.loads((config / "consumerOffset.json").read_text())["offsetTable"]
        except (OSError, ValueError, KeyError):
            return False
        return (
            topics.get(TOPIC, {}).get("readQueueNums") == QUEUES
            and offsets.get(f"{TOPIC}@peer-ha-g", {}).get("2") == 17
        )

    assert wait_until(synced, timeout=40, interval=1), slave.tail()
    # Not checked: reads from this slave. rocketmq-rust 1.0's slave stores the replicated
    # CommitLog but never dispatches it into ConsumeQueues ("Dispatch task fall behind commit
    # log"), with its own master as with ours: in our run a rocketmq-rust SYNC_MASTER + slave
    # pair served 0 of 50 messages from the slave.


def commit_offset(addr: str, group: str, queue: int, offset: int) -> None:
    from rocketpy._native import RemotingClient
    from rocketpy.protocol import RequestCode

    client = RemotingClient()
    try:
        header = dict(consumer_group=group, topic=TOPIC, queue_id=queue, commit_offset=offset)
        assert client.invoke(addr, RequestCode.UPDATE_CONSUMER_OFFSET, header, None, 3000).code == 0
    finally:
        client.shutdown()


def test_rocketpy_slave_of_a_rocketmq_rust_sync_master(tmp_path: Path, cluster) -> None:  # type: ignore[no-untyped-def]
    ns_addr, servers = cluster
    master = RustBroker(tmp_path / "rust-master", ns_addr, "SYNC_MASTER", 0)
    servers.append(master)
    with Admin(ns_addr) as admin:

        def registered() -> bool:
            try:
                return bool(admin.master_addrs())
            except Exception:
                return False

        assert wait_until(registered, timeout=60), master.tail()
        admin.create_topic(TOPIC, queues=QUEUES)
    # No haMasterAddress: our slave takes the master's haServerAddr from the name server.
    slave_port = free_port()
    slave = broker(
        ns_addr,
        slave_port,
        tmp_path / "slave",
        {**ha_settings(BROKER_NAME, "SLAVE"), "mapedFileSizeCommitLog": str(FILE_SIZE)},
    ).start()
    servers.append(slave)
    master_log, slave_log = master.store / "commitlog", tmp_path / "slave" / "commitlog"
    # Their SYNC_MASTER may answer SEND_OK before any slave is connected, and a slave that
    # connects later is sent the master's last file onwards (RocketMQ's rule): wait until
    # ours holds replicated bytes, while the master is still in its first file.
    with Producer("peer-ha-wait", client_config=fast_config(ns_addr)) as p:

        def slave_has_bytes() -> bool:
            with contextlib.suppress(Exception):
                p.send(Message(TOPIC, b"probe"))
            return slave_log.is_dir() and bool(commit_log(slave_log))

        assert wait_until(slave_has_bytes, timeout=60, interval=0.5), "the slave never synced"
    payloads = bodies(500, seed=2)
    try:
        send_all(ns_addr, payloads)
    except AssertionError:
        raise AssertionError(master.tail()) from None
    wait_same_end(master_log, slave_log)
    assert_identical(master_log, slave_log)

    master.kill()
    time.sleep(1)
    expected = {*payloads, b"probe"}
    got = pull_bodies(f"127.0.0.1:{slave_port}", TOPIC, QUEUES)
    assert expected <= got, f"{len(expected - got)} of {len(expected)} missing on our slave"
