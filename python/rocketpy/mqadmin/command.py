"""What every command module declares: its mqadmin name, help, options and action."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from rocketpy.admin import Admin
from rocketpy.admin.cluster_table import broker_entries
from rocketpy.errors import ClientError
from rocketpy.protocol import Perm


@dataclass(frozen=True)
class Command:
    """One mqadmin sub-command. ``namesrv``: whether it always needs the name servers (the
    controller commands given only ``-a`` run without them)."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[Admin, argparse.Namespace], None]
    namesrv: bool = True


def cut(text: str, width: int) -> str:
    """RocketMQ's ``UtilAll.frontStringAtLeast``: at most ``width`` characters."""
    return text[:width]


def perm_text(perm: int) -> str:
    """RocketMQ's ``PermName.perm2String``: ``R``, ``W`` and ``X`` (inherit) or ``-``."""
    return (
        ("R" if perm & Perm.READ else "-")
        + ("W" if perm & Perm.WRITE else "-")
        + ("X" if perm & Perm.INHERIT else "-")
    )


def no_master(admin: Admin, cluster: str) -> ClientError:
    """The error of a command given ``cluster`` where the name servers list no master: it
    names the clusters they do list (what ``clusterList`` shows)."""
    known = sorted({e.cluster for e in broker_entries(admin.cluster_info()) if e.cluster})
    return ClientError(
        f"cluster {cluster!r} has no master; the name servers list "
        + (f"the cluster(s) {known} (see clusterList)" if known else "no broker yet")
    )
