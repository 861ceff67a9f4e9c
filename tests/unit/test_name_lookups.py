"""Where clients find name servers (the argument, else ``$NAMESRV_ADDR``) and brokers (the one
reading of the name servers' cluster table, shared by clusterList, the admin's master look-up
and the message-id look-up)."""

from __future__ import annotations

import pytest

from rocketpy.admin.cluster_table import BrokerEntry, broker_entries, masters

INFO = {
    "clusterAddrTable": {"c1": ["broker-b", "broker-a"], "c2": ["broker-c"]},
    "brokerAddrTable": {
        "broker-a": {"brokerAddrs": {"0": "10.0.0.1:10911", "1": "10.0.0.2:10911"}},
        "broker-b": {"brokerAddrs": {"1": "10.0.0.3:10911"}},
        "broker-c": {"brokerAddrs": {"0": "10.0.0.4:10911"}},
        # Registered, not yet in any cluster's list: still shown, under no cluster.
        "broker-d": {"brokerAddrs": {"0": "10.0.0.5:10911"}},
    },
}


def test_every_address_sorted_with_its_cluster_and_id():
    assert broker_entries(INFO) == [
        BrokerEntry("", "broker-d", 0, "10.0.0.5:10911"),
        BrokerEntry("c1", "broker-a", 0, "10.0.0.1:10911"),
        BrokerEntry("c1", "broker-a", 1, "10.0.0.2:10911"),
        BrokerEntry("c1", "broker-b", 1, "10.0.0.3:10911"),
        BrokerEntry("c2", "broker-c", 0, "10.0.0.4:10911"),
    ]


def test_masters_of_a_cluster_are_those_clusterlist_shows_with_id_0():
    assert masters(broker_entries(INFO, "c1")) == ["10.0.0.1:10911"]
    assert masters(broker_entries(INFO)) == ["10.0.0.1:10911", "10.0.0.4:10911", "10.0.0.5:10911"]
    assert masters(broker_entries(INFO, "nope")) == []
    assert broker_entries({}) == []


def test_name_servers_come_from_the_argument_or_namesrv_addr(monkeypatch):
    from rocketpy.client.namesrv import namesrv_addrs
    from rocketpy.errors import ConfigError

    monkeypatch.setenv("NAMESRV_ADDR", "10.0.0.9:9876; 10.0.0.8:9876")
    assert namesrv_addrs("a:1;b:2") == ["a:1", "b:2"]
    assert namesrv_addrs("") == ["10.0.0.9:9876", "10.0.0.8:9876"]  # as RocketMQ's clients
    monkeypatch.delenv("NAMESRV_ADDR")
    with pytest.raises(ConfigError, match="NAMESRV_ADDR"):
        namesrv_addrs(None)
