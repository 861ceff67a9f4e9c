"""Where a producer's messages go: each topic's write queues (from the name servers, or the
auto-creation template), queue choice round-robin with latency fault avoidance, a broker's
master address, and what every send attempt teaches fault avoidance and the metrics."""

from __future__ import annotations

import time

from rocketpy.client.instance import ClientInstance
from rocketpy.client.route import TopicPublishInfo, publish_info
from rocketpy.errors import ClientError, RocketpyError
from rocketpy.message import Message, MessageQueue
from rocketpy.metrics import METRICS
from rocketpy.producer._prepare import Prepared, Preparing
from rocketpy.producer._selectors import (
    MessageQueueSelector,
    message_group_of,
    select_by_message_group,
)
from rocketpy.protocol import AUTO_CREATE_TOPIC_KEY


class Routing(Preparing):
    """The producer's routes and queue choice."""

    def _client(self) -> ClientInstance:
        if self._instance is None:
            raise ClientError("producer not started: call start() first")
        self._instance.check_process("producer")
        return self._instance

    def publish_info(self, topic: str) -> TopicPublishInfo:
        """The topic's write queues, fetching the route if needed; a topic without a route
        gets the TBW102 template's (the broker then auto-creates it on the first send)."""
        inst = self._client()
        with self._lock:
            info = self._publish.get(topic)
        if info is not None and info.ok() and not info.from_template:
            return info
        with self._lock:
            # Registers interest, so update_route hands this producer the route too.
            self._publish.setdefault(topic, TopicPublishInfo())
        route = inst.update_route(topic)
        if route is not None:
            info = publish_info(topic, route)
        else:
            template = inst.fetch_route(AUTO_CREATE_TOPIC_KEY)
            if template is None:
                raise ClientError(
                    f"no route info of topic {topic!r}: create it first (UPDATE_AND_CREATE_TOPIC) "
                    "or enable autoCreateTopicEnable on a broker"
                )
            inst.remember_brokers(template)
            info = publish_info(topic, template, self.default_topic_queue_nums)
        if not info.ok():
            raise ClientError(f"topic {topic!r} has no writable queue on any live master")
        with self._lock:
            self._publish[topic] = info
        return info

    def message_queues(self, topic: str) -> list[MessageQueue]:
        """The write queues of ``topic``."""
        return list(self.publish_info(topic).queues)

    def _select_queue(self, info: TopicPublishInfo, last_broker: str | None) -> MessageQueue:
        queues = info.queues
        start = next(self._index)
        if self.send_latency_fault_enable:
            for i in range(len(queues)):
                mq = queues[(start + i) % len(queues)]
                if self._faults.is_available(mq.broker_name) and mq.broker_name != last_broker:
                    return mq
            best = self._faults.pick_one_at_least()
            if best is not None:
                of_best = [mq for mq in queues if mq.broker_name == best]
                if of_best:
                    return of_best[start % len(of_best)]
                self._faults.remove(best)
        if last_broker is not None:
            for i in range(len(queues)):
                mq = queues[(start + i) % len(queues)]
                if mq.broker_name != last_broker:
                    return mq
        return queues[start % len(queues)]

    def _refresh_after_failure(self, topic: str, info: TopicPublishInfo) -> TopicPublishInfo:
        try:
            with self._lock:
                self._publish.pop(topic, None)
            return self.publish_info(topic)
        except RocketpyError:
            return info

    def _note_latency(self, mq: MessageQueue, started: float, failed: bool, count: int = 1) -> None:
        """One send attempt ended: fault avoidance and the client metrics learn of it."""
        self._note_elapsed(mq, time.monotonic() - started, failed, count)

    def _note_elapsed(self, mq: MessageQueue, elapsed: float, failed: bool, count: int) -> None:
        if self.send_latency_fault_enable:
            self._faults.update(mq.broker_name, elapsed * 1000, failed)
        inst = self._instance
        if METRICS is not None and inst is not None:
            METRICS.record_send(mq.topic, inst.client_id, elapsed, not failed, count)

    def _addr(self, mq: MessageQueue) -> str:
        inst = self._client()
        addr = inst.master_addr(mq.broker_name)
        if addr is None:
            inst.update_route(mq.topic)
            addr = inst.master_addr(mq.broker_name)
        if addr is None:
            # A topic the name servers do not route yet (created a moment ago, its broker's
            # registration still on the way): the broker's address is in the TBW102
            # template's route, where RocketMQ's tryToFindTopicPublishInfo finds it too.
            template = inst.fetch_route(AUTO_CREATE_TOPIC_KEY)
            if template is not None:
                inst.remember_brokers(template)
                addr = inst.master_addr(mq.broker_name)
        if addr is None:
            raise ClientError(f"broker {mq.broker_name} has no master address")
        return addr

    def _choose(
        self,
        prepared: Prepared,
        queue: MessageQueue | None,
        selector: MessageQueueSelector | None,
        arg: object,
        msg: Message | None,
    ) -> MessageQueue | None:
        """A fixed queue (given, selected, or its message group's), or None to let the retry
        loop pick."""
        if queue is not None:
            return queue
        if selector is not None:
            mqs = self.message_queues(prepared.topic)
            chosen = selector(mqs, msg if msg is not None else Message(prepared.topic, b"-"), arg)
            if chosen not in mqs:
                raise ClientError(
                    f"the selector chose {chosen}, which is not a queue of {prepared.topic!r}"
                )
            return chosen
        group = message_group_of(msg)
        if group is not None:
            # One queue per group, kept on failure (no retry elsewhere): the group's order.
            return select_by_message_group(self.message_queues(prepared.topic), group)
        return None
