"""Controller mode's admin side without a server: what :class:`ControllerAdmin` sends (codes,
headers by attribute name, bodies, to which controller), how it reads the answers, and what
the mqadmin commands print (Java's formats, byte for byte) through ``rocketpy.mqadmin.main``
with the :class:`Admin` replaced by one over a scripted client."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

import rocketpy.mqadmin as mqadmin
from rocketpy.admin.controller import ControllerAdmin, ReplicaIdentity, java, parse_properties
from rocketpy.errors import BrokerResponseError, ClientError
from rocketpy.protocol import ControllerRequestCode as Code
from rocketpy.protocol import ControllerResponseCode

FOLLOWER, LEADER = "127.0.0.1:9868", "127.0.0.1:9878"
B0, B1 = "127.0.0.1:30911", "127.0.0.1:30921"


class Resp:
    """What the native client's ``RemotingResponse`` offers the admin module."""

    def __init__(
        self, code: int = 0, fields: dict[str, str] | None = None, body: bytes = b"", remark=None
    ):
        self.code, self.ext_fields, self.body, self.remark = code, fields or {}, body, remark


Answer = Resp | Callable[[dict[str, Any] | None, bytes | None], Resp]


class Client:
    """A scripted ``RemotingClient``: answers by (address, code); records every request."""

    def __init__(self, answers: dict[tuple[str, int], Answer]):
        self.answers = answers
        self.calls: list[tuple[str, int, dict[str, Any] | None, bytes | None]] = []

    def invoke(self, addr, code, header=None, body=None, timeout_ms=3000):
        self.calls.append((addr, code, header, body))
        answer = self.answers[(addr, code)]
        return answer(header, body) if callable(answer) else answer


def meta(leader: str = LEADER, **extra: str) -> Resp:
    fields = dict(
        group="DefaultControllerGroup",
        controllerLeaderId="n0",
        controllerLeaderAddress=leader,
        isLeader="false",
        peers=f"n0:{LEADER};n1:{FOLLOWER};",
    )
    return Resp(fields={**fields, **extra})


REPLICAS = {
    "replicasInfoTable": {
        "broker-a": {
            "masterBrokerId": 1,
            "masterAddress": B0,
            "masterEpoch": 2,
            "syncStateSetEpoch": 3,
            "inSyncReplicas": [
                {"brokerName": "broker-a", "brokerId": 1, "brokerAddress": B0, "alive": True}
            ],
            "notInSyncReplicas": [
                {"brokerName": "broker-a", "brokerId": 2, "brokerAddress": B1, "alive": False}
            ],
        }
    }
}

SYNC_TEXT = (
    "\n#brokerName\tbroker-a\n#MasterBrokerId\t1\n#MasterAddr\t127.0.0.1:30911\n#MasterEpoch\t2"
    "\n#SyncStateSetEpoch\t3\n#SyncStateSetNums\t1\n"
    "\nInSyncReplica:\tReplicaIdentity{brokerName='broker-a', brokerId=1, "
    "brokerAddress='127.0.0.1:30911', alive=true}\n"
    "\nNotInSyncReplica:\tReplicaIdentity{brokerName='broker-a', brokerId=2, "
    "brokerAddress='127.0.0.1:30921', alive=false}\n"
)

CLUSTER_INFO = {
    "brokerAddrTable": {
        "broker-a": {"cluster": "c1", "brokerName": "broker-a", "brokerAddrs": {0: B0, 1: B1}}
    },
    "clusterAddrTable": {"c1": ["broker-a"]},
}


class FakeAdmin:
    """Stands in for :class:`rocketpy.admin.Admin` in ``mqadmin.main``."""

    made: ClassVar[list[FakeAdmin]] = []

    def __init__(self, client: Client, namesrv: str | None, **_: Any):
        self.client, self.namesrv = client, namesrv
        FakeAdmin.made.append(self)

    def __enter__(self) -> FakeAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def controller(self) -> ControllerAdmin:
        return ControllerAdmin(self.client, 1000)  # type: ignore[arg-type]

    def cluster_info(self) -> dict[str, Any]:
        assert self.namesrv, "the name servers were asked without -n"
        return CLUSTER_INFO


@pytest.fixture
def cli(monkeypatch, capsys):
    """``cli(client, *argv)`` -> (exit code, stdout, stderr) of one mqadmin command."""
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    FakeAdmin.made.clear()

    def run(client: Client, *argv: str) -> tuple[int, str, str]:
        monkeypatch.setattr(
            mqadmin, "Admin", lambda ns, **kw: FakeAdmin(client, ns, **kw), raising=True
        )
        capsys.readouterr()
        try:
            mqadmin.main(list(argv))
            code = 0
        except SystemExit as e:
            code = int(e.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return run


# -- ControllerAdmin -------------------------------------------------------------------------


def test_metadata_is_read_from_the_header_of_any_controller():
    client = Client({(FOLLOWER, Code.CONTROLLER_GET_METADATA_INFO): meta()})
    m = ControllerAdmin(client).metadata(FOLLOWER)  # type: ignore[arg-type]
    assert (m.group, m.leader_id, m.leader_address, m.is_leader) == (
        "DefaultControllerGroup",
        "n0",
        LEADER,
        False,
    )
    assert m.peers == [f"n0:{LEADER}", f"n1:{FOLLOWER}"]
    assert client.calls == [(FOLLOWER, 1005, None, None)]


def test_no_leader_is_a_client_error():
    client = Client({(FOLLOWER, 1005): meta(controllerLeaderAddress="")})
    with pytest.raises(ClientError, match="knows no leader"):
        ControllerAdmin(client).leader_address(FOLLOWER)  # type: ignore[arg-type]


def test_sync_state_data_goes_to_the_leader_with_a_json_array_of_names():
    client = Client(
        {
            (FOLLOWER, 1005): meta(),
            (LEADER, 1006): Resp(body=json.dumps(REPLICAS).encode()),
        }
    )
    table = ControllerAdmin(client).sync_state_data(FOLLOWER, ["broker-a", "broker-b"])  # type: ignore[arg-type]
    assert client.calls[1] == (LEADER, 1006, None, b'["broker-a", "broker-b"]')
    info = table["broker-a"]
    assert (info.master_broker_id, info.master_address, info.master_epoch) == (1, B0, 2)
    assert info.sync_state_set_epoch == 3
    assert info.in_sync == [ReplicaIdentity("broker-a", 1, B0, True)]
    assert info.not_in_sync == [ReplicaIdentity("broker-a", 2, B1, False)]


def test_an_empty_answer_and_no_names_give_no_groups():
    client = Client({(FOLLOWER, 1005): meta(), (LEADER, 1006): Resp()})
    admin = ControllerAdmin(client)  # type: ignore[arg-type]
    assert admin.sync_state_data(FOLLOWER, ["broker-a"]) == {}
    calls = len(client.calls)
    assert admin.sync_state_data(FOLLOWER, []) == {}
    assert len(client.calls) == calls


def test_a_not_leader_answer_naming_the_leader_is_followed_once():
    client = Client(
        {
            (FOLLOWER, 1005): meta(leader=FOLLOWER),  # a stale view: it names itself
            (FOLLOWER, 1006): Resp(
                ControllerResponseCode.CONTROLLER_NOT_LEADER, {"leaderAddress": LEADER}
            ),
            (LEADER, 1006): Resp(body=json.dumps(REPLICAS).encode()),
        }
    )
    table = ControllerAdmin(client).sync_state_data(FOLLOWER, ["broker-a"])  # type: ignore[arg-type]
    assert list(table) == ["broker-a"]
    assert [c[0] for c in client.calls] == [FOLLOWER, FOLLOWER, LEADER]


def test_not_leader_without_a_leader_is_the_error():
    client = Client(
        {(FOLLOWER, 1005): meta(leader=FOLLOWER), (FOLLOWER, 1006): Resp(2007, remark="nope")}
    )
    with pytest.raises(BrokerResponseError) as e:
        ControllerAdmin(client).sync_state_data(FOLLOWER, ["broker-a"])  # type: ignore[arg-type]
    assert (e.value.code, e.value.remark, e.value.addr) == (2007, "nope", FOLLOWER)


ELECT_BODY = (
    b'{"brokerMemberGroup":{"cluster":"c1","brokerName":"broker-a",'
    b'"brokerAddrs":{2:"127.0.0.1:30921",1:"127.0.0.1:30911"}},"syncStateSet":[1,2]}'
)
ELECT_FIELDS = dict(masterBrokerId="2", masterAddress=B1, masterEpoch="4", syncStateSetEpoch="5")


def test_elect_master_designates_the_broker_and_reads_header_and_member_group():
    client = Client(
        {(FOLLOWER, 1005): meta(), (LEADER, 1002): Resp(fields=ELECT_FIELDS, body=ELECT_BODY)}
    )
    before = int(time.time() * 1000)
    r = ControllerAdmin(client).elect_master(FOLLOWER, "c1", "broker-a", 2)  # type: ignore[arg-type]
    addr, code, header, body = client.calls[1]
    assert (addr, code, body) == (LEADER, Code.CONTROLLER_ELECT_MASTER, None)
    assert header is not None and header.pop("invoke_time") >= before
    assert header == dict(
        cluster_name="c1", broker_name="broker-a", broker_id=2, designate_elect=True
    )
    assert (r.master_broker_id, r.master_address, r.master_epoch, r.sync_state_set_epoch) == (
        2,
        B1,
        4,
        5,
    )
    assert r.member_group is not None and r.member_group.broker_addrs == {1: B0, 2: B1}
    assert r.sync_state_set == [1, 2]


def test_master_still_exist_is_an_error_with_code_and_remark():
    client = Client(
        {
            (FOLLOWER, 1005): meta(),
            (LEADER, 1002): Resp(2011, ELECT_FIELDS, b'{"syncStateSet":[1]}', "still master"),
        }
    )
    with pytest.raises(BrokerResponseError) as e:
        ControllerAdmin(client).elect_master(FOLLOWER, "c1", "broker-a", 1)  # type: ignore[arg-type]
    assert (e.value.code, e.value.remark, e.value.addr) == (2011, "still master", LEADER)


def test_config_is_properties_text_both_ways():
    client = Client(
        {
            (LEADER, 1010): Resp(body=b"controllerType=DLedger\n#c=1\n\nscanInterval = 5000\n"),
            (LEADER, 1009): Resp(),
        }
    )
    admin = ControllerAdmin(client)  # type: ignore[arg-type]
    assert admin.config(LEADER) == {"controllerType": "DLedger", "scanInterval": "5000"}
    admin.update_config(LEADER, {"a": "1", "b": "x=y"})
    assert client.calls[-1] == (LEADER, 1009, None, b"a=1\nb=x=y\n")
    assert parse_properties("k=v=w") == {"k": "v=w"}


def test_clean_broker_metadata_header():
    client = Client({(FOLLOWER, 1005): meta(), (LEADER, 1011): Resp()})
    admin = ControllerAdmin(client)  # type: ignore[arg-type]
    admin.clean_broker_metadata(FOLLOWER, "broker-a", [1, 2], "c1", False)
    header = client.calls[-1][2]
    assert header is not None and isinstance(header.pop("invoke_time"), int)
    assert header == dict(
        broker_name="broker-a",
        broker_controller_ids_to_clean="1;2",
        cluster_name="c1",
        is_clean_living_broker=False,
    )
    admin.clean_broker_metadata(FOLLOWER, "broker-a", None, None, True)
    header = client.calls[-1][2]
    assert header is not None and set(header) == {
        "broker_name",
        "is_clean_living_broker",
        "invoke_time",
    }


EPOCH_BODY = json.dumps(
    {
        "clusterName": "c1",
        "brokerName": "broker-a",
        "brokerId": 0,
        "epochList": [
            {"epoch": 1, "startOffset": 0, "endOffset": 5120},
            {"epoch": 2, "startOffset": 5120, "endOffset": 2**63 - 1},
        ],
        "maxOffset": 8192,
    }
).encode()


def test_broker_epoch_is_asked_of_the_broker():
    client = Client({(B0, Code.GET_BROKER_EPOCH_CACHE): Resp(body=EPOCH_BODY)})
    e = ControllerAdmin(client).broker_epoch(B0)  # type: ignore[arg-type]
    assert (e.cluster_name, e.broker_name, e.broker_id, e.max_offset) == ("c1", "broker-a", 0, 8192)
    assert [str(x) for x in e.epochs] == [
        "EpochEntry{epoch=1, startOffset=0, endOffset=5120}",
        f"EpochEntry{{epoch=2, startOffset=5120, endOffset={2**63 - 1}}}",
    ]


def test_java_strings():
    assert [java(None), java(True), java(False), java(3), java("a")] == [
        "null",
        "true",
        "false",
        "3",
        "a",
    ]
    assert str(ReplicaIdentity(None, None, None, None)) == (
        "ReplicaIdentity{brokerName='null', brokerId=null, brokerAddress='null', alive=null}"
    )


# -- mqadmin ----------------------------------------------------------------------------


def test_get_controller_meta_data_prints_mqadmins_lines_without_a_name_server(cli):
    client = Client({(FOLLOWER, 1005): meta()})
    code, out, _ = cli(client, "getControllerMetaData", "-a", FOLLOWER)
    assert code == 0
    assert out == (
        "\n#ControllerGroup\tDefaultControllerGroup\n#ControllerLeaderId\tn0"
        f"\n#ControllerLeaderAddress\t{LEADER}\n#Peer:\tn0:{LEADER}\n#Peer:\tn1:{FOLLOWER}\n"
    )
    assert FakeAdmin.made[-1].namesrv is None
    code, out, _ = cli(client, "getControllerMetaData", "-a", FOLLOWER, "--json")
    assert json.loads(out)["leader_address"] == LEADER


def test_get_sync_state_set_by_broker_name_asks_the_first_controller_for_the_leader(cli):
    client = Client(
        {(FOLLOWER, 1005): meta(), (LEADER, 1006): Resp(body=json.dumps(REPLICAS).encode())}
    )
    code, out, _ = cli(client, "getSyncStateSet", "-a", f"{FOLLOWER};{LEADER}", "-b", "broker-a")
    assert (code, out) == (0, SYNC_TEXT)
    assert client.calls[0][0] == FOLLOWER


def test_get_sync_state_set_by_cluster_reads_the_name_servers(cli):
    client = Client(
        {(FOLLOWER, 1005): meta(), (LEADER, 1006): Resp(body=json.dumps(REPLICAS).encode())}
    )
    code, out, _ = cli(client, "getSyncStateSet", "-n", "ns:9876", "-a", FOLLOWER, "-c", "c1")
    assert (code, out) == (0, SYNC_TEXT)
    assert client.calls[-1][3] == b'["broker-a"]'
    code, _, err = cli(client, "getSyncStateSet", "-a", FOLLOWER, "-c", "c1")
    assert code == 1 and "give -n" in err
    code, _, err = cli(client, "getSyncStateSet", "-n", "ns:9876", "-a", FOLLOWER, "-c", "c9")
    assert code == 1 and "'c9' is not in the name servers' cluster table" in err


def test_interval_repeats_until_ctrl_c(cli, monkeypatch):
    client = Client(
        {(FOLLOWER, 1005): meta(), (LEADER, 1006): Resp(body=json.dumps(REPLICAS).encode())}
    )
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(time, "sleep", sleep)
    code, out, _ = cli(client, "getSyncStateSet", "-a", FOLLOWER, "-b", "broker-a", "-i")
    assert (code, out, slept) == (0, SYNC_TEXT * 2, [3, 3])
    slept.clear()
    code, out, _ = cli(client, "getSyncStateSet", "-a", FOLLOWER, "-i", "7", "-b", "broker-a")
    assert (code, slept) == (0, [7, 7])
    code, _, _ = cli(client, "getSyncStateSet", "-a", FOLLOWER, "-b", "broker-a", "-i", "0")
    assert code == 2


def test_elect_master_prints_the_new_master_and_the_members(cli):
    client = Client(
        {(FOLLOWER, 1005): meta(), (LEADER, 1002): Resp(fields=ELECT_FIELDS, body=ELECT_BODY)}
    )
    argv = ["electMaster", "-a", FOLLOWER, "-bn", "broker-a", "-b", "2", "-c", "c1"]
    code, out, _ = cli(client, *argv)
    assert code == 0
    assert out == (
        f"\n#ClusterName\tc1\n#BrokerName\tbroker-a\n#BrokerMasterAddr\t{B1}\n#MasterEpoch\t4"
        f"\n#SyncStateSetEpoch\t5\n\t#Broker\t1\t{B0}\n\t#Broker\t2\t{B1}\n"
    )
    assert client.calls[-1][2]["broker_id"] == 2  # type: ignore[index]
    client.answers[(LEADER, 1002)] = Resp(2011, ELECT_FIELDS, b"{}", "The old master is elected")
    code, out, err = cli(client, *argv)
    assert (code, out) == (1, "")
    assert "CODE: 2011 DESC: The old master is elected" in err


def test_get_and_update_controller_config(cli):
    client = Client(
        {
            (LEADER, 1010): Resp(
                body=b"scanNotActiveBrokerInterval=5000\ncontrollerType=DLedger\n"
            ),
            (FOLLOWER, 1010): Resp(body=b"controllerType=DLedger\n"),
            (LEADER, 1009): Resp(),
            (FOLLOWER, 1009): Resp(),
        }
    )
    code, out, _ = cli(client, "getControllerConfig", "-a", f"{LEADER};{FOLLOWER}")
    assert code == 0
    pad = "{:<50}=  {}\n".format  # mqadmin's %-50s=  %s
    assert out == (
        f"============{LEADER}============\n"
        + pad("controllerType", "DLedger")
        + pad("scanNotActiveBrokerInterval", "5000")
        + f"============{FOLLOWER}============\n"
        + pad("controllerType", "DLedger")
    )
    assert pad("k", "v") == "k" + " " * 49 + "=  v\n"
    argv = ["updateControllerConfig", "-a", f"{LEADER};{FOLLOWER}", "-k", "k1", "-v", "v1"]
    code, out, _ = cli(client, *argv)
    assert (code, out) == (0, f"update controller config success![{LEADER}, {FOLLOWER}]\nk1 : v1\n")
    assert [c[:2] + c[3:] for c in client.calls[-2:]] == [
        (LEADER, 1009, b"k1=v1\n"),
        (FOLLOWER, 1009, b"k1=v1\n"),
    ]


def test_clean_broker_metadata(cli):
    client = Client({(FOLLOWER, 1005): meta(), (LEADER, 1011): Resp()})
    argv = ["cleanBrokerMetadata", "-a", FOLLOWER, "-bn", "broker-a"]
    code, out, _ = cli(client, *argv, "-b", "1;2", "-c", "c1")
    assert (code, out) == (0, "clear broker broker-a metadata from controller success! \n")
    assert client.calls[-1][2]["broker_controller_ids_to_clean"] == "1;2"  # type: ignore[index]
    code, out, _ = cli(client, *argv, "-l")
    assert code == 0 and client.calls[-1][2]["is_clean_living_broker"] is True  # type: ignore[index]
    code, _, err = cli(client, *argv)
    assert code == 1 and "clusterName option can not be empty" in err
    code, _, err = cli(client, *argv, "-c", "c1", "-b", "1;x")
    assert code == 2 and "brokerControllerIdsToClean" in err


def test_get_broker_epoch_asks_every_address_of_the_group(cli):
    client = Client(
        {
            (B0, 1007): Resp(body=EPOCH_BODY),
            (B1, 1007): Resp(body=EPOCH_BODY.replace(b'"brokerId": 0', b'"brokerId": 1')),
        }
    )
    code, out, _ = cli(client, "getBrokerEpoch", "-n", "ns:9876", "-b", "broker-a")
    assert code == 0
    block = (
        "\n#clusterName\tc1\n#brokerName\tbroker-a\n#brokerAddr\t{addr}\n#brokerId\t{bid}"
        "\n#Epoch: EpochEntry{{epoch=1, startOffset=0, endOffset=5120}}"
        "\n#Epoch: EpochEntry{{epoch=2, startOffset=5120, endOffset=8192}}\n"
    )
    assert out == block.format(addr=B0, bid=0) + block.format(addr=B1, bid=1)
    code, out2, _ = cli(client, "getBrokerEpoch", "-n", "ns:9876", "-c", "c1")
    assert (code, out2) == (0, out)
    code, _, err = cli(client, "getBrokerEpoch", "-b", "broker-a")
    assert code == 2 and "no name server" in err
    code, _, err = cli(client, "getBrokerEpoch", "-n", "ns:9876", "-b", "broker-z")
    assert code == 1 and "'broker-z'" in err
