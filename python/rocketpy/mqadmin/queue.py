"""Queue commands: queryCq."""

from __future__ import annotations

import argparse
import json

from rocketpy.admin import Admin
from rocketpy.errors import ClientError
from rocketpy.message import MessageQueue
from rocketpy.mqadmin.command import Command

_RULE = "======================================"


def _query_cq_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-q", "--queue", type=int, required=True, help="queue id")
    p.add_argument("-i", "--index", type=int, required=True, help="start queue index")
    p.add_argument("-c", "--count", type=int, default=10, help="how many")
    p.add_argument("-b", "--broker", help="broker address (default: the route's first)")
    p.add_argument("-g", "--consumer", help="consumer group whose subscription to show")


def _query_cq(admin: Admin, a: argparse.Namespace) -> None:
    addr = a.broker
    broker_name = ""
    if not addr:
        # mqadmin asks the first broker of the route (its brokerId 0 address).
        route = admin.topic_route(a.topic)
        brokers = route.broker_datas if route else []
        if not brokers or not brokers[0].master_addr():
            raise ClientError("No topic route data!")
        addr, broker_name = brokers[0].master_addr(), brokers[0].broker_name
    mq = MessageQueue(a.topic, broker_name, a.queue)
    view = admin.query_consume_queue(mq, a.index, a.count, a.consumer, broker_addr=addr)
    if view.subscription_data is not None:
        print(f"Subscription data: \n{json.dumps(view.subscription_data, indent=chr(9))}")
        print(_RULE)
    if view.filter_data is not None:
        print(f"Filter data: \n{view.filter_data}")
        print(_RULE)
    print(f"Queue data: \nmax: {view.max_queue_index}, min: {view.min_queue_index}")
    print(_RULE)
    for i, unit in enumerate(view.units, start=a.index):
        print(f"idx: {i}\n{unit}\n{_RULE}")


COMMANDS = [Command("queryCq", "Query cq command.", _query_cq_args, _query_cq)]
