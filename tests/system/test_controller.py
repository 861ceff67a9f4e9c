"""Controller mode (RocketMQ 5.x automatic failover, docs/controller-design.md) against real
controllers on loopback ports: mqadmin's controller commands through ``rocketpy admin``, their
output compared byte for byte with §6; brokers joining, heartbeating and being elected; a
controller inside ``rocketpy namesrv -c``; ``rocketpy controller -p``.

The brokers are played by the raw-socket client of ``tests/rmq_wire.py``: the native
``RemotingClient`` takes a request header only by attribute name through the header spec of
its code, and BROKER_HEARTBEAT (904), ALTER_SYNC_STATE_SET (1001), REGISTER_BROKER (1003),
GET_NEXT_BROKER_ID (1012) and APPLY_BROKER_ID (1013) have none ("request code 1012 has no
request header")."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from rmq_wire import Frame, Wire
from servers import NAMESRV_READY, free_port, rocketpy_process

from helpers import wait_until
from rocketpy._native import Controller, NameServer, RemotingClient
from rocketpy.admin.controller import ControllerAdmin, ReplicasInfo
from rocketpy.cli import main as rocketpy_main
from rocketpy.errors import ConfigError
from rocketpy.protocol import ControllerRequestCode as Code
from rocketpy.protocol import ControllerResponseCode as Ctl
from rocketpy.protocol import ResponseCode

CLUSTER, GROUP = "DefaultCluster", "broker-a"


def controller_conf(port: int, store: Path) -> str:
    """A one-controller group's controller.conf (RocketMQ's keys), elections allowed at once."""
    return (
        f"controllerDLegerGroup=group1\ncontrollerDLegerPeers=n0-127.0.0.1:{port}\n"
        f"controllerDLegerSelfId=n0\ncontrollerStorePath={store}\nelectionWarmUpMillis=0\n"
    )


@pytest.fixture
def controller(tmp_path: Path) -> Iterator[Controller]:
    """A controller leading its one-member group."""
    text = controller_conf(free_port(), tmp_path / "controller")
    c = Controller.start(text, {"scanNotActiveBrokerInterval": "100"})
    try:
        assert wait_until(lambda: c.is_leader, 10), "the controller did not lead"
        yield c
    finally:
        c.shutdown()


def admin(capsys: pytest.CaptureFixture[str], *args: str, status: int = 0) -> str:
    """``rocketpy admin <args>``: its stdout, or its stderr when it must fail (``status``)."""
    capsys.readouterr()
    try:
        rocketpy_main(["admin", *args])
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr()
    assert code == status, (code, out.out, out.err)
    return out.out if status == 0 else out.err


def replicas(addr: str) -> ReplicasInfo:
    client = RemotingClient()
    try:
        return ControllerAdmin(client).sync_state_data(addr, [GROUP])[GROUP]
    finally:
        client.shutdown()


class Inbound(Wire):
    """A connection the controller opened to a broker (its NOTIFY_BROKER_ROLE_CHANGED)."""

    def __init__(self, sock: socket.socket) -> None:
        sock.settimeout(10)
        self.sock, self.buf, self.serialize_type = sock, b"", 0
        self.inbox: list[Frame] = []


class FakeBroker:
    """A broker as the controller sees it: a port of its own (where notifications arrive) and
    one connection to the controller, which carries its requests and heartbeats (closing it
    is the broker's death, as a kill -9's)."""

    def __init__(self, controller: str, broker_id: int) -> None:
        self.id = broker_id
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(10)
        self.addr = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.wire = Wire(controller)
        self.fields = {"clusterName": CLUSTER, "brokerName": GROUP, "brokerId": str(broker_id)}

    def close(self) -> None:
        self.wire.close()
        self.listener.close()

    def call(self, code: int, fields: dict[str, str], body: bytes = b"", ok: int = 0) -> Frame:
        resp = self.wire.call(code, fields, body)
        assert resp.code == ok, (code, resp.code, resp.remark)
        return resp

    def join(self) -> None:
        """GET_NEXT_BROKER_ID, APPLY_BROKER_ID, REGISTER_BROKER: a broker's first start."""
        base = {"clusterName": CLUSTER, "brokerName": GROUP}
        assert self.call(Code.CONTROLLER_GET_NEXT_BROKER_ID, base).fields["nextBrokerId"] == str(
            self.id
        )
        check_code = f"{self.addr};{int(time.time() * 1000)}"
        apply = {**base, "appliedBrokerId": str(self.id), "registerCheckCode": check_code}
        self.call(Code.CONTROLLER_APPLY_BROKER_ID, apply)
        resp = self.call(
            Code.CONTROLLER_REGISTER_BROKER, {**self.fields, "brokerAddress": self.addr}
        )
        assert "masterBrokerId" not in resp.fields  # no master yet

    def heartbeat(self) -> None:
        beat = {**self.fields, "brokerAddr": self.addr, "epoch": "0", "maxOffset": "0"}
        resp = self.call(Code.BROKER_HEARTBEAT, {**beat, "heartbeatTimeoutMills": "10000"})
        assert resp.remark == "Heart beat success"

    def notifications(self) -> Generator[Frame, None, None]:
        """What the controller pushes to this broker, in order (it waits up to 10 s)."""
        conn, _ = self.listener.accept()
        with Inbound(conn) as inbound:
            while True:
                yield inbound.read_frame()


def ri(broker: FakeBroker) -> str:
    """A live replica as Java's ``ReplicaIdentity.toString`` writes it."""
    return (
        f"ReplicaIdentity{{brokerName='{GROUP}', brokerId={broker.id}, "
        f"brokerAddress='{broker.addr}', alive=true}}"
    )


def sync_text(master: FakeBroker, epoch: int, sss_epoch: int, in_sync: str, not_in: str) -> str:
    """getSyncStateSet's output for broker-a (§6), replicas given as ``ri`` strings."""
    head = (
        f"\n#brokerName\t{GROUP}\n#MasterBrokerId\t{master.id}\n#MasterAddr\t{master.addr}"
        f"\n#MasterEpoch\t{epoch}\n#SyncStateSetEpoch\t{sss_epoch}"
        f"\n#SyncStateSetNums\t{in_sync.count('ReplicaIdentity')}\n"
    )
    lines = [f"\nInSyncReplica:\t{r}\n" for r in in_sync.split("|") if r]
    lines += [f"\nNotInSyncReplica:\t{r}\n" for r in not_in.split("|") if r]
    return head + "".join(lines)


def test_metadata_and_configuration(
    controller: Controller, capsys: pytest.CaptureFixture[str]
) -> None:
    addr = controller.address
    assert admin(capsys, "getControllerMetaData", "-a", addr) == (
        f"\n#ControllerGroup\tgroup1\n#ControllerLeaderId\tn0\n#ControllerLeaderAddress\t{addr}"
        f"\n#Peer:\tn0:{addr}\n"
    )

    def config() -> dict[str, str]:
        out = admin(capsys, "getControllerConfig", "-a", addr).splitlines()
        assert out[0] == f"============{addr}============"
        pairs = [re.fullmatch(r"(\S+) *=  (.*)", line) for line in out[1:]]
        assert all(pairs), out
        return {m[1]: m[2] for m in pairs if m}

    before = config()
    assert before["controllerDLegerPeers"] == f"n0-{addr}"
    assert before["controllerDLegerSelfId"] == "n0"
    assert before["electionWarmUpMillis"] == "0"
    assert before["scanNotActiveBrokerInterval"] == "100"
    assert before["enableElectUncleanMaster"] == "false"
    assert "secretKey" not in before

    out = admin(
        capsys, "updateControllerConfig", "-a", addr, "-k", "enableElectUncleanMaster", "-v", "true"
    )
    assert out == f"update controller config success![{addr}]\nenableElectUncleanMaster : true\n"
    assert config()["enableElectUncleanMaster"] == "true"

    def refused(key: str, value: str, code: int) -> str:
        err = admin(capsys, "updateControllerConfig", "-a", addr, "-k", key, "-v", value, status=1)
        assert err.startswith("rocketpy admin updateControllerConfig: "), err
        assert f"CODE: {code} " in err, err
        return err

    # RocketMQ's configBlackList: NO_PERMISSION.
    assert "configStorePath" in refused("configStorePath", "/tmp/x", ResponseCode.NO_PERMISSION)
    # Keys read only at start: refused with why, rather than accepted and ignored.
    for key, value in [
        ("controllerStorePath", "/tmp/elsewhere"),
        ("controllerDLegerPeers", "n0-127.0.0.1:1"),
    ]:
        assert "restart" in refused(key, value, ResponseCode.SYSTEM_ERROR)
    assert "noSuchKey" in refused("noSuchKey", "1", ResponseCode.SYSTEM_ERROR)
    assert config() == {**before, "enableElectUncleanMaster": "true"}


def test_brokers_join_are_elected_and_cleaned(
    controller: Controller, capsys: pytest.CaptureFixture[str]
) -> None:
    addr = controller.address
    b1, b2 = FakeBroker(addr, 1), FakeBroker(addr, 2)
    try:
        for b in (b1, b2):
            b.join()
            b.heartbeat()
        # An id held under another check code is refused; a heartbeat needs a brokerId.
        taken = {"clusterName": CLUSTER, "brokerName": GROUP, "appliedBrokerId": "1"}
        taken["registerCheckCode"] = f"{b2.addr};1"
        b2.call(Code.CONTROLLER_APPLY_BROKER_ID, taken, ok=Ctl.CONTROLLER_BROKER_ID_INVALID)
        anonymous = {"clusterName": CLUSTER, "brokerName": GROUP, "brokerAddr": b2.addr}
        b2.call(Code.BROKER_HEARTBEAT, anonymous, ok=Ctl.CONTROLLER_INVALID_REQUEST)
        # The first election of a group: the broker asking becomes master.
        elected = b1.call(Code.CONTROLLER_ELECT_MASTER, b1.fields).fields
        assert (elected["masterBrokerId"], elected["masterAddress"]) == ("1", b1.addr)
        assert (elected["masterEpoch"], elected["syncStateSetEpoch"]) == ("1", "1")
        sync = ("getSyncStateSet", "-a", addr, "-b", GROUP)
        assert admin(capsys, *sync) == sync_text(b1, 1, 1, ri(b1), ri(b2))

        elect = ("electMaster", "-a", addr, "-c", CLUSTER, "-bn", GROUP, "-b", "2")
        err = admin(capsys, *elect[:-3], "broker-z", "-b", "2", status=1)
        assert f"CODE: {Ctl.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED} " in err, err
        # Broker 2 is not in the SyncStateSet: nobody to elect.
        err = admin(capsys, *elect, status=1)
        assert f"CODE: {Ctl.CONTROLLER_ELECT_MASTER_FAILED} " in err, err
        # The master reports broker 2 in sync.
        alter = {"brokerName": GROUP, "masterBrokerId": "1", "masterEpoch": "1"}
        body = b'{"syncStateSet":[1,2],"syncStateSetEpoch":1}'
        resp = b1.call(Code.CONTROLLER_ALTER_SYNC_STATE_SET, alter, body)
        assert resp.fields["newSyncStateSetEpoch"] == "2"
        assert admin(capsys, *sync) == sync_text(b1, 1, 2, f"{ri(b1)}|{ri(b2)}", "")

        assert admin(capsys, *elect) == (
            f"\n#ClusterName\t{CLUSTER}\n#BrokerName\t{GROUP}\n#BrokerMasterAddr\t{b2.addr}"
            f"\n#MasterEpoch\t2\n#SyncStateSetEpoch\t3\n"
            f"\t#Broker\t1\t{b1.addr}\n\t#Broker\t2\t{b2.addr}\n"
        )
        assert admin(capsys, *sync) == sync_text(b2, 2, 3, ri(b2), ri(b1))
        # Asked again, the master stays: mqadmin reports CONTROLLER_MASTER_STILL_EXIST.
        err = admin(capsys, *elect, status=1)
        assert f"CODE: {Ctl.CONTROLLER_MASTER_STILL_EXIST} " in err, err
        # Both elections were pushed to broker 2.
        pushed = b2.notifications()
        for epoch in ("1", "2"):
            n = next(pushed)
            assert n.code == Code.NOTIFY_BROKER_ROLE_CHANGED
            assert n.fields["masterEpoch"] == epoch
        assert (n.fields["masterBrokerId"], n.fields["masterAddress"]) == ("2", b2.addr)
        pushed.close()

        # A living broker's metadata stays.
        clean = ("cleanBrokerMetadata", "-a", addr, "-bn", GROUP, "-c", CLUSTER, "-b", "1")
        err = admin(capsys, *clean, status=1)
        assert f"CODE: {Ctl.CONTROLLER_INVALID_CLEAN_BROKER_METADATA} " in err, err
        # Broker 1's connection closes: it is dead, the master stays, and it can be cleaned.
        b1.close()
        assert wait_until(lambda: replicas(addr).not_in_sync[0].alive is False, 10)
        assert replicas(addr).master_broker_id == 2
        out = admin(capsys, *clean)
        assert out == f"clear broker {GROUP} metadata from controller success! \n"
        assert admin(capsys, *sync) == sync_text(b2, 2, 3, ri(b2), "")
        # -l forgets the whole group, living master included.
        admin(capsys, "cleanBrokerMetadata", "-a", addr, "-bn", GROUP, "-l")
        assert admin(capsys, *sync) == ""
    finally:
        b1.close()
        b2.close()


def test_namesrv_runs_a_controller_from_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = tmp_path / "namesrv.conf"
    port = free_port()
    conf.write_text("enableControllerInNamesrv=true\n" + controller_conf(port, tmp_path / "ctl"))
    args = ("namesrv", "--host", "127.0.0.1", "--port", "0", "-c", str(conf))
    server = rocketpy_process(*args, ready=NAMESRV_READY).start()
    try:
        line = server.wait_for_line(r"controller \(enableControllerInNamesrv\) listening on (\S+)")
        addr = line[1]
        assert addr == f"127.0.0.1:{port}"
        client = RemotingClient()
        try:
            ctl = ControllerAdmin(client)
            assert wait_until(lambda: ctl.metadata(addr).is_leader, 10)
        finally:
            client.shutdown()
        out = admin(capsys, "getControllerMetaData", "-a", addr)
        assert f"\n#ControllerLeaderAddress\t{addr}\n#Peer:\tn0:{addr}\n" in out
    finally:
        assert server.stop(signum=signal.SIGINT) == 0, server.text()
    assert "rocketpy name server stopped" in server.text()


def test_namesrv_refuses_controller_keys_it_does_not_serve(tmp_path: Path) -> None:
    # A controller key without enableControllerInNamesrv: refused, naming the key.
    text = controller_conf(free_port(), tmp_path / "ctl")
    with pytest.raises(ConfigError, match=r"controllerDLegerSelfId.*enableControllerInNamesrv"):
        NameServer.start("127.0.0.1", 0, config_text=text).shutdown()
    # A key neither the name server nor the controller knows.
    for enabled in ("true", "false"):
        text = f"enableControllerInNamesrv={enabled}\nnoSuchKey=1\n"
        with pytest.raises(ConfigError, match="noSuchKey"):
            NameServer.start("127.0.0.1", 0, config_text=text).shutdown()


def test_controller_print_config(tmp_path: Path) -> None:
    conf = tmp_path / "controller.conf"
    conf.write_text(controller_conf(19878, tmp_path / "ctl"))

    def rocketpy(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "rocketpy", "--log-level", "warn", *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=30)

    done = rocketpy("controller", "-c", str(conf), "-p", "--set", "notifyBrokerRoleChanged=false")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    keys = dict(line.split("=", 1) for line in lines if not line.startswith("#"))
    assert keys["controllerDLegerPeers"] == "n0-127.0.0.1:19878"
    assert keys["controllerStorePath"] == str(tmp_path / "ctl")
    assert keys["notifyBrokerRoleChanged"] == "false"  # --set wins
    assert keys["scanInactiveMasterInterval"] == "1000"  # rocketpy's default (RocketMQ: 5000)
    assert len([line for line in lines if line.startswith("# ")]) == len(keys)  # one doc each
    assert "secretKey" in keys
    done = rocketpy("controller", "-p", "--set", "noSuchKey=1")
    assert done.returncode == 1
    assert "noSuchKey" in done.stderr
