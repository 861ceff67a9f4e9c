"""Controller mode's commands (RocketMQ 5.x automatic failover): getControllerMetaData,
getSyncStateSet, electMaster, getControllerConfig, updateControllerConfig,
cleanBrokerMetadata and getBrokerEpoch, with mqadmin's options and its output to the byte (Java's
``printf`` formats, ``null`` for an absent value). ``-i`` repeats a command every so many seconds
until Ctrl-C, as mqadmin does."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, replace

from rocketpy.admin import Admin
from rocketpy.admin.cluster_table import broker_entries
from rocketpy.admin.controller import (
    BrokerEpoch,
    ControllerMetadata,
    ElectMasterResult,
    ReplicasInfo,
    java,
)
from rocketpy.errors import ClientError
from rocketpy.mqadmin.command import Command
from rocketpy.mqadmin.output import dump_json

#: mqadmin's ``-i`` without a value: every 3 s.
DEFAULT_INTERVAL = 3


def _out(text: str) -> None:
    sys.stdout.write(text)


def controller_addrs(value: str) -> list[str]:
    """The addresses of a ``;``-separated ``-a`` (blanks dropped)."""
    addrs = [a.strip() for a in value.split(";") if a.strip()]
    if not addrs:
        raise ClientError("no controller address: give -a host:port")
    return addrs


def repeat(interval: int | None, once: Callable[[], None]) -> None:
    """Runs ``once``; with an ``interval`` (s), again after every ``interval`` until Ctrl-C,
    which ends the command normally. An error ends it, as in mqadmin."""
    if interval is None:
        once()
        return
    try:
        while True:
            once()
            sys.stdout.flush()
            time.sleep(interval)
    except KeyboardInterrupt:
        sys.stdout.flush()


def _interval(text: str) -> int:
    seconds = int(text)
    if seconds < 1:
        raise argparse.ArgumentTypeError("the interval is whole seconds, at least 1")
    return seconds


def _interval_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-i",
        "--interval",
        type=_interval,
        nargs="?",
        const=DEFAULT_INTERVAL,
        help=f"repeat every so many seconds until Ctrl-C (no value: {DEFAULT_INTERVAL})",
    )


# -- What each command prints (mqadmin's formats) ----------------------------------------------


def metadata_text(meta: ControllerMetadata) -> str:
    """getControllerMetaData's output."""
    text = (
        f"\n#ControllerGroup\t{java(meta.group)}"
        f"\n#ControllerLeaderId\t{java(meta.leader_id)}"
        f"\n#ControllerLeaderAddress\t{java(meta.leader_address)}"
    )
    text += "".join(f"\n#Peer:\t{peer}" for peer in meta.peers)
    return text + "\n"


def sync_state_text(table: dict[str, ReplicasInfo]) -> str:
    """getSyncStateSet's output for the groups of one answer."""
    text = ""
    for name, info in table.items():
        text += (
            f"\n#brokerName\t{name}\n#MasterBrokerId\t{java(info.master_broker_id)}"
            f"\n#MasterAddr\t{java(info.master_address)}\n#MasterEpoch\t{java(info.master_epoch)}"
            f"\n#SyncStateSetEpoch\t{java(info.sync_state_set_epoch)}"
            f"\n#SyncStateSetNums\t{len(info.in_sync)}\n"
        )
        text += "".join(f"\nInSyncReplica:\t{r}\n" for r in info.in_sync)
        text += "".join(f"\nNotInSyncReplica:\t{r}\n" for r in info.not_in_sync)
    return text


def elect_text(cluster: str, broker_name: str, result: ElectMasterResult) -> str:
    """electMaster's output: the new master, then every member of the group (from the body's
    ``brokerMemberGroup``; Java's mqadmin decodes the body as a bare group and prints none)."""
    text = (
        f"\n#ClusterName\t{cluster}\n#BrokerName\t{broker_name}"
        f"\n#BrokerMasterAddr\t{java(result.master_address)}"
        f"\n#MasterEpoch\t{java(result.master_epoch)}"
        f"\n#SyncStateSetEpoch\t{java(result.sync_state_set_epoch)}\n"
    )
    members = result.member_group.broker_addrs if result.member_group else {}
    return text + "".join(f"\t#Broker\t{bid}\t{members[bid]}\n" for bid in sorted(members))


def config_text(addr: str, config: dict[str, str]) -> str:
    """getControllerConfig's output for one controller."""
    text = f"============{addr}============\n"
    return text + "".join(f"{k:<50}=  {config[k]}\n" for k in sorted(config))


def epoch_text(broker_addr: str, cache: BrokerEpoch) -> str:
    """getBrokerEpoch's output for one broker: the last epoch ends at the broker's max
    offset (the broker sends ``Long.MAX_VALUE``)."""
    text = (
        f"\n#clusterName\t{java(cache.cluster_name)}\n#brokerName\t{java(cache.broker_name)}"
        f"\n#brokerAddr\t{broker_addr}\n#brokerId\t{java(cache.broker_id)}"
    )
    for i, entry in enumerate(cache.epochs):
        if i == len(cache.epochs) - 1 and cache.max_offset is not None:
            entry = replace(entry, end_offset=cache.max_offset)
        text += f"\n#Epoch: {entry}"
    return text + "\n"


# -- The commands --------------------------------------------------------------------------


def _controller_arg(p: argparse.ArgumentParser, what: str = "the address of controller") -> None:
    p.add_argument("-a", "--controllerAddress", required=True, help=what)


def _json_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="JSON output")


def _metadata_args(p: argparse.ArgumentParser) -> None:
    _controller_arg(p)
    _json_arg(p)


def _metadata(admin: Admin, a: argparse.Namespace) -> None:
    meta = admin.controller().metadata(controller_addrs(a.controllerAddress)[0])
    if a.json:
        dump_json(asdict(meta))
    else:
        _out(metadata_text(meta))


def _group_args(p: argparse.ArgumentParser, what: str) -> None:
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("-c", "--clusterName", help=f"{what} of every broker group of this cluster")
    target.add_argument("-b", "--brokerName", help=f"{what} of this broker group")


def _cluster_names(admin: Admin, a: argparse.Namespace) -> list[str]:
    """The broker names of ``-c`` in the name servers' cluster table (mqadmin's
    ``CommandUtil.fetchBrokerNameByClusterName``)."""
    if not a.namesrvAddr:
        raise ClientError("-c reads the cluster from the name servers: give -n or NAMESRV_ADDR")
    clusters = admin.cluster_info().get("clusterAddrTable") or {}
    names = clusters.get(a.clusterName)
    if not names:
        raise ClientError(
            f"cluster {a.clusterName!r} is not in the name servers' cluster table (see clusterList)"
        )
    return sorted(str(n) for n in names)


def _sync_state_args(p: argparse.ArgumentParser) -> None:
    _controller_arg(p, "the address of controller (the first of a ';' list is asked)")
    _group_args(p, "the SyncStateSet")
    _interval_arg(p)
    _json_arg(p)


def _sync_state(admin: Admin, a: argparse.Namespace) -> None:
    addr = controller_addrs(a.controllerAddress)[0]
    ctl = admin.controller()

    def once() -> None:
        names = [a.brokerName] if a.brokerName else _cluster_names(admin, a)
        table = ctl.sync_state_data(addr, names)
        if a.json:
            dump_json({name: asdict(info) for name, info in table.items()})
        else:
            _out(sync_state_text(table))

    repeat(a.interval, once)


def _elect_args(p: argparse.ArgumentParser) -> None:
    _controller_arg(p)
    p.add_argument(
        "-b", "--brokerId", type=int, required=True, help="the broker id to become master"
    )
    p.add_argument("-bn", "--brokerName", required=True, help="its broker group")
    p.add_argument("-c", "--clusterName", required=True, help="its cluster")


def _elect(admin: Admin, a: argparse.Namespace) -> None:
    addr = controller_addrs(a.controllerAddress)[0]
    result = admin.controller().elect_master(addr, a.clusterName, a.brokerName, a.brokerId)
    _out(elect_text(a.clusterName, a.brokerName, result))


def _config_args(p: argparse.ArgumentParser) -> None:
    _controller_arg(p, "controller addresses, host:port;host:port")
    _json_arg(p)


def _config(admin: Admin, a: argparse.Namespace) -> None:
    ctl = admin.controller()
    configs = {addr: ctl.config(addr) for addr in controller_addrs(a.controllerAddress)}
    if a.json:
        dump_json(configs)
        return
    for addr, config in configs.items():
        _out(config_text(addr, config))


def _update_config_args(p: argparse.ArgumentParser) -> None:
    _controller_arg(p, "controller addresses, host:port;host:port")
    p.add_argument("-k", "--key", required=True)
    p.add_argument("-v", "--value", required=True)


def _update_config(admin: Admin, a: argparse.Namespace) -> None:
    addrs = controller_addrs(a.controllerAddress)
    key, value = a.key.strip(), a.value.strip()
    ctl = admin.controller()
    for addr in addrs:
        ctl.update_config(addr, {key: value})
    _out(f"update controller config success![{', '.join(addrs)}]\n{key} : {value}\n")


def _broker_ids(text: str) -> list[int]:
    try:
        return [int(i) for i in text.strip().split(";") if i.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            "please set the option <brokerControllerIdsToClean> according to the format"
        ) from None


def _clean_args(p: argparse.ArgumentParser) -> None:
    _controller_arg(p)
    p.add_argument(
        "-b",
        "--brokerControllerIdsToClean",
        type=_broker_ids,
        help="broker ids to clean, e.g. 1;2;3 (default: the whole group)",
    )
    p.add_argument("-bn", "--brokerName", required=True, help="the broker group")
    p.add_argument("-c", "--clusterName", help="its cluster (required without -l)")
    p.add_argument("-l", "--cleanLivingBroker", action="store_true", help="clean live brokers too")


def _clean(admin: Admin, a: argparse.Namespace) -> None:
    if not a.cleanLivingBroker and not a.clusterName:
        raise ClientError("cleanLivingBroker option is false, clusterName option can not be empty.")
    admin.controller().clean_broker_metadata(
        controller_addrs(a.controllerAddress)[0],
        a.brokerName,
        a.brokerControllerIdsToClean or None,
        a.clusterName,
        a.cleanLivingBroker,
    )
    _out(f"clear broker {a.brokerName} metadata from controller success! \n")


def _epoch_args(p: argparse.ArgumentParser) -> None:
    _group_args(p, "the epochs")
    _interval_arg(p)
    _json_arg(p)


def _epoch_addrs(admin: Admin, a: argparse.Namespace) -> list[str]:
    """Every master and slave address of ``-b`` or ``-c`` in the name servers' cluster table
    (mqadmin's ``fetchMasterAndSlaveAddrBy*``)."""
    info = admin.cluster_info()
    if a.brokerName:
        addrs = ((info.get("brokerAddrTable") or {}).get(a.brokerName) or {}).get("brokerAddrs")
        found = sorted((int(bid), str(addr)) for bid, addr in (addrs or {}).items() if addr)
        if not found:
            raise ClientError(f"broker {a.brokerName!r} is not in the name servers' cluster table")
        return list(dict.fromkeys(addr for _, addr in found))
    if a.clusterName not in (info.get("clusterAddrTable") or {}):
        raise ClientError(
            f"cluster {a.clusterName!r} is not in the name servers' cluster table (see clusterList)"
        )
    return list(dict.fromkeys(e.addr for e in broker_entries(info, a.clusterName)))


def _epoch(admin: Admin, a: argparse.Namespace) -> None:
    ctl = admin.controller()

    def once() -> None:
        caches = {addr: ctl.broker_epoch(addr) for addr in _epoch_addrs(admin, a)}
        if a.json:
            dump_json({addr: asdict(cache) for addr, cache in caches.items()})
            return
        for addr, cache in caches.items():
            _out(epoch_text(addr, cache))

    repeat(a.interval, once)


COMMANDS = [
    Command(
        "getControllerMetaData",
        "Get controller cluster's metadata.",
        _metadata_args,
        _metadata,
        namesrv=False,
    ),
    Command(
        "getSyncStateSet",
        "Fetch syncStateSet for target brokers",
        _sync_state_args,
        _sync_state,
        namesrv=False,
    ),
    Command(
        "electMaster",
        "Re-elect the specified broker as master",
        _elect_args,
        _elect,
        namesrv=False,
    ),
    Command("getControllerConfig", "Get controller config.", _config_args, _config, namesrv=False),
    Command(
        "updateControllerConfig",
        "Update controller config.",
        _update_config_args,
        _update_config,
        namesrv=False,
    ),
    Command(
        "cleanBrokerMetadata",
        "Clean metadata of broker on controller",
        _clean_args,
        _clean,
        namesrv=False,
    ),
    Command("getBrokerEpoch", "Fetch broker epoch entries", _epoch_args, _epoch),
]
