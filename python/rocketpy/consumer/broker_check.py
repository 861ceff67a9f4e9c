"""What a consumer checks of a subscription at start and at subscribe: that its topic exists
(a warning when the name servers have no route: the consumer would wait silently), and
CHECK_CLIENT_CONFIG — the masters of the topic serve its SQL92 filter, as RocketMQ's clients
ask before relying on it."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from rocketpy.client.instance import ClientInstance
from rocketpy.client.route import TopicRouteData
from rocketpy.consumer.model import Subscription
from rocketpy.errors import BrokerResponseError, ClientError, RemotingError
from rocketpy.protocol import MASTER_ID, RETRY_GROUP_TOPIC_PREFIX, RequestCode, ResponseCode
from rocketpy.selector import TAG

log = logging.getLogger(__name__)

#: How long a topic may lack a route before the warning: a topic that a send just created
#: reaches the name servers with the broker's next registration, a moment after the answer.
WARN_AFTER_S = 3.0

#: ``later(delay_s, fn)``: runs ``fn`` on a scheduler after ``delay_s`` seconds.
Later = Callable[[float, Callable[[], None]], None]


def check_subscription(
    inst: ClientInstance, group: str, sub: Subscription, later: Later | None = None
) -> TopicRouteData | None:
    """What a running consumer asks before it keeps ``sub`` (so a refused subscription leaves
    it as it was): the topic's route (a warning when there is none) and the masters' word on
    an SQL92 filter. Returns the route, for the caller to hand its queues over once ``sub``
    is kept (fetched before, the route did not reach the consumer)."""
    route = route_or_warn(inst, sub.topic, later)
    check_in_brokers(inst, group, sub)
    return route


def route_or_warn(
    inst: ClientInstance, topic: str, later: Later | None = None
) -> TopicRouteData | None:
    """Fetches ``topic``'s route; when the topic does not exist, logs a warning saying how
    to create it (the consumer keeps the subscription and starts when the topic appears).
    With ``later``, the warning comes only if the route is still missing
    :data:`WARN_AFTER_S` seconds on (no false alarm for a topic a send just created). A
    group's retry topic, created by its first failed message, is not warned about."""
    route = inst.update_route(topic)
    if route is not None or topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return route
    if later is None:
        _warn_missing(topic)
    else:

        def again() -> None:
            try:
                if inst.update_route(topic) is None:
                    _warn_missing(topic)
            except Exception as e:  # a scheduler task must not raise
                log.debug("route of %s not checked again: %s", topic, e)

        later(WARN_AFTER_S, again)
    return route


def _warn_missing(topic: str) -> None:
    log.warning(
        "topic %r does not exist (the name servers have no route for it): nothing is "
        "consumed until it is created — `rocketpy admin updateTopic -t %s -c <cluster>`, "
        "Admin.create_topic, or a broker with autoCreateTopicEnable=true and a first send",
        topic,
        topic,
    )


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
