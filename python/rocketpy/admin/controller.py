"""Controller mode's admin requests (RocketMQ 5.x automatic failover): what mqadmin's
getControllerMetaData, getSyncStateSet, electMaster, getControllerConfig,
updateControllerConfig, cleanBrokerMetadata and getBrokerEpoch send, with the same codes,
headers and bodies (``docs/controller-design.md`` §1 and §6).

:class:`ControllerAdmin` talks over a :class:`~rocketpy._native.RemotingClient`, the one of an
:class:`~rocketpy.admin.Admin` (``admin.controller()``) or one of its own. Metadata and
configuration requests go to the address given; sync-state, elect and clean requests go to the
controller leader, which the given controller names (CONTROLLER_GET_METADATA_INFO), as mqadmin
finds it. Response headers are read by their wire names (``ext_fields``). Request headers are
given by attribute name, as everywhere in rocketpy: the native module turns them into wire
names through the header spec of the request code, so ELECT_MASTER and CLEAN_BROKER_DATA need
those specs (``designate_elect``, ``broker_controller_ids_to_clean``, ...) in
``rocketpy_protocol::header``; without them the request is refused before it is sent.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from rocketpy._native import InvalidArgumentError, RemotingClient, RemotingResponse
from rocketpy._util import json_body
from rocketpy.client.instance import check
from rocketpy.errors import ClientError
from rocketpy.protocol import ControllerRequestCode as Code
from rocketpy.protocol import ControllerResponseCode

#: Response header fields of a follower's CONTROLLER_NOT_LEADER answer naming the leader
#: (rocketpy's addition; RocketMQ's controllers leave them out).
_LEADER_ADDRESS = "leaderAddress"


@dataclass(frozen=True)
class ControllerMetadata:
    """A controller's view of its group (``GetMetaDataResponseHeader``)."""

    group: str | None
    leader_id: str | None
    leader_address: str | None
    is_leader: bool
    #: ``id:addr`` of every peer (``peers`` split on ``;``).
    peers: list[str] = field(default_factory=list)

    @staticmethod
    def decode(fields: dict[str, str]) -> ControllerMetadata:
        """From the response's extFields."""
        peers = fields.get("peers") or ""
        return ControllerMetadata(
            group=fields.get("group"),
            leader_id=fields.get("controllerLeaderId"),
            leader_address=fields.get("controllerLeaderAddress"),
            is_leader=_bool(fields.get("isLeader")),
            peers=[p for p in peers.split(";") if p],
        )


@dataclass(frozen=True)
class ReplicaIdentity:
    """One replica of a broker group (``BrokerReplicasInfo.ReplicaIdentity``)."""

    broker_name: str | None
    broker_id: int | None
    broker_address: str | None
    alive: bool | None

    @staticmethod
    def decode(d: dict[str, Any]) -> ReplicaIdentity:
        """From its JSON object."""
        alive = d.get("alive")
        return ReplicaIdentity(
            _str(d.get("brokerName")),
            _int(d.get("brokerId")),
            _str(d.get("brokerAddress")),
            None if alive is None else _bool(alive),
        )

    def __str__(self) -> str:
        """Java's ``ReplicaIdentity.toString``, as mqadmin prints it."""
        return (
            f"ReplicaIdentity{{brokerName='{java(self.broker_name)}', "
            f"brokerId={java(self.broker_id)}, brokerAddress='{java(self.broker_address)}', "
            f"alive={java(self.alive)}}}"
        )


@dataclass(frozen=True)
class ReplicasInfo:
    """A broker group's master and replicas as the controller leader knows them
    (``BrokerReplicasInfo.ReplicasInfo``)."""

    master_broker_id: int | None
    master_address: str | None
    master_epoch: int | None
    sync_state_set_epoch: int | None
    in_sync: list[ReplicaIdentity] = field(default_factory=list)
    not_in_sync: list[ReplicaIdentity] = field(default_factory=list)

    @staticmethod
    def decode(d: dict[str, Any]) -> ReplicasInfo:
        """From its JSON object."""
        return ReplicasInfo(
            _int(d.get("masterBrokerId")),
            _str(d.get("masterAddress")),
            _int(d.get("masterEpoch")),
            _int(d.get("syncStateSetEpoch")),
            [ReplicaIdentity.decode(r) for r in d.get("inSyncReplicas") or []],
            [ReplicaIdentity.decode(r) for r in d.get("notInSyncReplicas") or []],
        )


@dataclass(frozen=True)
class BrokerMemberGroup:
    """A broker group's members (``BrokerMemberGroup``): broker id -> address."""

    cluster: str | None
    broker_name: str | None
    broker_addrs: dict[int, str] = field(default_factory=dict)

    @staticmethod
    def decode(d: dict[str, Any]) -> BrokerMemberGroup:
        """From its JSON object (fastjson writes the ids unquoted)."""
        addrs = d.get("brokerAddrs") or {}
        return BrokerMemberGroup(
            _str(d.get("cluster")),
            _str(d.get("brokerName")),
            {int(k): str(v) for k, v in addrs.items()},
        )


@dataclass(frozen=True)
class ElectMasterResult:
    """The answer to CONTROLLER_ELECT_MASTER: ``ElectMasterResponseHeader`` and the body's
    ``brokerMemberGroup`` and ``syncStateSet``."""

    master_broker_id: int | None
    master_address: str | None
    master_epoch: int | None
    sync_state_set_epoch: int | None
    member_group: BrokerMemberGroup | None
    sync_state_set: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class EpochEntry:
    """One epoch of a broker's epoch file: the CommitLog range written under it."""

    epoch: int
    start_offset: int
    end_offset: int

    def __str__(self) -> str:
        """Java's ``EpochEntry.toString``, as mqadmin prints it."""
        return (
            f"EpochEntry{{epoch={self.epoch}, startOffset={self.start_offset}, "
            f"endOffset={self.end_offset}}}"
        )


@dataclass(frozen=True)
class BrokerEpoch:
    """A broker's epoch cache (``EpochEntryCache``, GET_BROKER_EPOCH_CACHE). The last entry's
    ``end_offset`` is ``Long.MAX_VALUE`` as the broker sends it; ``max_offset`` is its CommitLog
    end."""

    cluster_name: str | None
    broker_name: str | None
    broker_id: int | None
    epochs: list[EpochEntry]
    max_offset: int | None

    @staticmethod
    def decode(d: dict[str, Any]) -> BrokerEpoch:
        """From GET_BROKER_EPOCH_CACHE's body."""
        return BrokerEpoch(
            _str(d.get("clusterName")),
            _str(d.get("brokerName")),
            _int(d.get("brokerId")),
            [
                EpochEntry(
                    int(e.get("epoch", 0)), int(e.get("startOffset", 0)), int(e.get("endOffset", 0))
                )
                for e in d.get("epochList") or []
            ],
            _int(d.get("maxOffset")),
        )


class ControllerAdmin:
    """Controller-mode administration over ``client`` (``timeout_ms`` per request).

    Every method raises :class:`~rocketpy.errors.BrokerResponseError` (with the server's
    ``code`` and ``remark``) when the answer is not SUCCESS, and a
    :class:`~rocketpy.errors.RemotingError` when the server cannot be reached.
    """

    def __init__(self, client: RemotingClient, timeout_ms: int = 5000) -> None:
        self._client = client
        self._timeout = timeout_ms

    def _call(
        self,
        addr: str,
        code: int,
        header: dict[str, object] | None = None,
        body: bytes | None = None,
    ) -> RemotingResponse:
        try:
            return self._client.invoke(addr, code, header, body, self._timeout)
        except InvalidArgumentError as e:
            raise ClientError(
                f"request code {code} cannot be sent: this build of rocketpy's native module "
                f"has no header spec for it ({e})"
            ) from e

    def _leader_call(
        self,
        addr: str,
        code: int,
        header: dict[str, object] | None = None,
        body: bytes | None = None,
    ) -> tuple[str, RemotingResponse]:
        """Sends to the leader ``addr`` names; once more to the leader a follower's
        CONTROLLER_NOT_LEADER answer names, if it names one. Returns the leader and its
        SUCCESS answer."""
        leader = self.leader_address(addr)
        resp = self._call(leader, code, header, body)
        moved = resp.ext_fields.get(_LEADER_ADDRESS)
        if resp.code == ControllerResponseCode.CONTROLLER_NOT_LEADER and moved:
            leader = moved
            resp = self._call(leader, code, header, body)
        return leader, check(resp, leader)

    def metadata(self, addr: str) -> ControllerMetadata:
        """CONTROLLER_GET_METADATA_INFO: ``addr``'s group, its leader, and its peers. Any
        controller answers, leader or not."""
        resp = check(self._call(addr, Code.CONTROLLER_GET_METADATA_INFO), addr)
        return ControllerMetadata.decode(resp.ext_fields)

    def leader_address(self, addr: str) -> str:
        """The controller leader's address, as controller ``addr`` knows it.

        Raises:
            ClientError: ``addr`` knows no leader (an election is under way).
        """
        meta = self.metadata(addr)
        if not meta.leader_address:
            raise ClientError(f"controller {addr} knows no leader (group {meta.group})")
        return meta.leader_address

    def sync_state_data(self, addr: str, broker_names: list[str]) -> dict[str, ReplicasInfo]:
        """CONTROLLER_GET_SYNC_STATE_DATA to the leader: the master, epochs and in-sync and
        not-in-sync replicas of each group in ``broker_names`` (the leader leaves out groups
        it does not know)."""
        if not broker_names:
            return {}
        body = json.dumps(list(broker_names)).encode()
        _, resp = self._leader_call(addr, Code.CONTROLLER_GET_SYNC_STATE_DATA, None, body)
        if not resp.body:
            return {}
        table = json_body(resp.body, "BrokerReplicasInfo").get("replicasInfoTable") or {}
        return {str(name): ReplicasInfo.decode(info or {}) for name, info in table.items()}

    def elect_master(
        self, addr: str, cluster: str, broker_name: str, broker_id: int
    ) -> ElectMasterResult:
        """CONTROLLER_ELECT_MASTER with ``designateElect=true`` to the leader: makes
        ``broker_id`` the master of ``broker_name`` or nobody.

        Raises:
            BrokerResponseError: any answer but SUCCESS, including
                CONTROLLER_MASTER_STILL_EXIST (2011, the broker is the master already), as
                mqadmin treats it.
        """
        header: dict[str, object] = dict(
            cluster_name=cluster,
            broker_name=broker_name,
            broker_id=broker_id,
            designate_elect=True,
            invoke_time=int(time.time() * 1000),
        )
        _, resp = self._leader_call(addr, Code.CONTROLLER_ELECT_MASTER, header)
        fields = resp.ext_fields
        body = json_body(resp.body, "ElectMasterResponseBody") if resp.body else {}
        group = body.get("brokerMemberGroup")
        return ElectMasterResult(
            _int(fields.get("masterBrokerId")),
            fields.get("masterAddress") or None,
            _int(fields.get("masterEpoch")),
            _int(fields.get("syncStateSetEpoch")),
            BrokerMemberGroup.decode(group) if isinstance(group, dict) else None,
            [int(i) for i in body.get("syncStateSet") or []],
        )

    def config(self, addr: str) -> dict[str, str]:
        """GET_CONTROLLER_CONFIG: controller ``addr``'s configuration."""
        resp = check(self._call(addr, Code.GET_CONTROLLER_CONFIG), addr)
        return parse_properties(resp.body.decode("utf-8", "replace"))

    def update_config(self, addr: str, props: dict[str, str]) -> None:
        """UPDATE_CONTROLLER_CONFIG: changes keys of controller ``addr`` (NO_PERMISSION for a
        key of its ``configBlackList``)."""
        body = "".join(f"{k}={v}\n" for k, v in props.items()).encode()
        check(self._call(addr, Code.UPDATE_CONTROLLER_CONFIG, None, body), addr)

    def clean_broker_metadata(
        self,
        addr: str,
        broker_name: str,
        broker_ids: list[int] | None = None,
        cluster: str | None = None,
        clean_living: bool = False,
    ) -> None:
        """CLEAN_BROKER_DATA to the leader: forgets ``broker_ids`` of ``broker_name`` (the
        whole group when None); live brokers only with ``clean_living``."""
        header: dict[str, object] = dict(
            broker_name=broker_name,
            is_clean_living_broker=clean_living,
            invoke_time=int(time.time() * 1000),
        )
        if cluster:
            header["cluster_name"] = cluster
        if broker_ids:
            header["broker_controller_ids_to_clean"] = ";".join(str(i) for i in broker_ids)
        self._leader_call(addr, Code.CLEAN_BROKER_DATA, header)

    def broker_epoch(self, broker_addr: str) -> BrokerEpoch:
        """GET_BROKER_EPOCH_CACHE to a **broker** (SYSTEM_ERROR from one not in controller
        mode)."""
        resp = check(self._call(broker_addr, Code.GET_BROKER_EPOCH_CACHE), broker_addr)
        return BrokerEpoch.decode(json_body(resp.body, "EpochEntryCache"))


def parse_properties(text: str) -> dict[str, str]:
    """``key=value`` lines (``MixAll.properties2String``) as a dict; blank and ``#`` lines
    are skipped."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and not key.lstrip().startswith("#"):
            out[key.strip()] = value.strip()
    return out


def java(value: object) -> str:
    """``value`` as Java's ``String.valueOf`` / ``%s`` writes it: ``null``, ``true``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() == "true"


def _int(value: object) -> int | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, int) else int(str(value).strip())


def _str(value: object) -> str | None:
    return None if value is None else str(value)
