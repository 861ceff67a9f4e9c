"""The one reading of the name servers' cluster table (GET_BROKER_CLUSTER_INFO's
``clusterAddrTable`` and ``brokerAddrTable``): ``clusterList``, the admin's master look-up
and the message-id look-up all list brokers through it, so what one command shows another
finds."""

from __future__ import annotations

from typing import Any, NamedTuple

from rocketpy.protocol import MASTER_ID


class BrokerEntry(NamedTuple):
    """One broker address the name servers know."""

    cluster: str
    name: str
    broker_id: int
    addr: str


def broker_entries(info: dict[str, Any], cluster: str | None = None) -> list[BrokerEntry]:
    """Every broker address of ``info`` (of ``cluster`` when given), sorted by cluster,
    broker name and id. A broker name in no cluster is listed under the cluster ``""``:
    a table caught between a broker's registration and its cluster entry still shows it."""
    table: dict[str, Any] = info.get("brokerAddrTable") or {}
    clusters: dict[str, Any] = info.get("clusterAddrTable") or {}
    named = {str(n) for names in clusters.values() for n in names or ()}
    groups = [(str(c), sorted(str(n) for n in names or ())) for c, names in clusters.items()]
    groups.append(("", sorted(str(n) for n in table if str(n) not in named)))
    out = []
    for c, names in sorted(groups):
        if cluster is not None and c != cluster:
            continue
        for name in names:
            addrs = (table.get(name) or {}).get("brokerAddrs") or {}
            for bid, addr in addrs.items():
                if addr:
                    out.append(BrokerEntry(c, name, int(bid), str(addr)))
    return sorted(out)


def masters(entries: list[BrokerEntry]) -> list[str]:
    """The master addresses among ``entries``."""
    return sorted(e.addr for e in entries if e.broker_id == MASTER_ID)
