"""CHECK_CLIENT_CONFIG: a consumer asks the masters of a topic whether they serve its SQL92
subscription before relying on it, as RocketMQ's clients do at start."""

from __future__ import annotations

import json
import logging

from rocketpy.client.instance import ClientInstance
from rocketpy.consumer.model import Subscription
from rocketpy.errors import BrokerResponseError, ClientError, RemotingError
from rocketpy.protocol import MASTER_ID, RequestCode, ResponseCode
from rocketpy.selector import TAG

log = logging.getLogger(__name__)


def check_in_brokers(inst: ClientInstance, group: str, sub: Subscription) -> None:
    """Raises :class:`ClientError` with the broker's answer when a master of ``sub.topic``
    (by the cached route) refuses ``sub`` (``enablePropertyFilter=false``); tag subscriptions
    are not asked about, and a master that cannot be reached now is left to the pulls."""
    route = inst.route(sub.topic)
    if sub.type == TAG or route is None:
        return
    body = json.dumps(
        {"clientId": inst.client_id, "group": group, "subscriptionData": sub.data()}
    ).encode()
    for broker in route.broker_datas:
        addr = dict(broker.broker_addrs).get(MASTER_ID)
        if addr is None:
            continue
        try:
            resp = inst.remoting.invoke(addr, RequestCode.CHECK_CLIENT_CONFIG, None, body, 3000)
        except RemotingError as e:
            log.warning("could not check the subscription of %s with %s: %s", sub.topic, addr, e)
            continue
        if resp.code != ResponseCode.SUCCESS:
            raise ClientError(
                f"broker {broker.broker_name} ({addr}) does not serve the {sub.type} "
                f"subscription {sub.expression!r} of {sub.topic!r}: {resp.remark} (brokers "
                "evaluate SQL92 filters with enablePropertyFilter=true)"
            ) from BrokerResponseError(resp.code, resp.remark, addr)
