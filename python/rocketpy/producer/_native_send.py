"""The native send paths' Python side: each topic's write queues handed to the native core
as lanes, the results of auto-batched requests, and what happens when a native send fails —
its retries go on in Python under the same :class:`RetryPolicy`, unique id and deadline."""

from __future__ import annotations

from rocketpy._future import SendFuture
from rocketpy._native import ProducerCore, RemotingResponse, SendOutcome
from rocketpy.errors import BrokerResponseError, ClientError, RocketpyError
from rocketpy.message import Message, MessageQueue, SendResult
from rocketpy.producer._python_send import PythonSends
from rocketpy.producer._retry import RetryPolicy, complete
from rocketpy.producer._selectors import SendCallback
from rocketpy.protocol import RETRY_GROUP_TOPIC_PREFIX
from rocketpy.validate import check_topic

#: An auto-batched message of a failed request: future, callback, id, message, and whether
#: the caller chose its queue.
Batched = tuple["SendFuture[SendResult]", SendCallback | None, str, Message, bool]


class NativeSends(PythonSends):
    """The native lanes and batches."""

    def _retry_direct(self, msg: Message, failed: SendOutcome, deadline: int) -> SendResult:
        """The first attempt of :meth:`send` (native) failed: raise, or go on with the
        retries in Python under the same unique id and deadline."""
        assert failed.lane is not None and failed.unique_id is not None
        uniq, resp, err = failed.unique_id, failed.response, failed.error
        addr, mq = self._lane_queues[failed.lane]
        self._forget_lanes(msg.topic)
        policy = RetryPolicy.of(self.retry_times_when_send_failed)
        if resp is not None:
            try:
                # Raises for every answer that is not "stored" (the native path took those).
                self._result(resp, addr, mq, uniq)
            except BrokerResponseError as e:
                if not policy.retryable(e):
                    raise
                err = e
        error: BaseException = err if err is not None else ClientError("no answer")
        policy.note(mq, 0, error)
        info = self.publish_info(msg.topic)
        if policy.more_after(0):
            info = self._refresh_after_failure(msg.topic, info)
        return self._send_sync(
            self._prepare(msg, uniq), None, None, deadline, 1, mq.broker_name, [error], info
        )

    def _batchable_topic(self, topic: str) -> bool:
        """Whether messages of ``topic`` may be batched (raises if the name is invalid):
        not a retry topic, which batch requests do not take."""
        check_topic(topic)
        return not topic.startswith(RETRY_GROUP_TOPIC_PREFIX)

    def _lanes_of(self, core: ProducerCore, topic: str) -> list[int]:
        """The lanes of ``topic``'s write queues (cached until the route changes); empty
        when its messages cannot take the native paths (a retry topic)."""
        if not self._batchable_topic(topic):
            return []
        info = self.publish_info(topic)
        inst = self._client()
        lanes = [
            self._lane(core, a, mq) for mq in info.queues if (a := inst.master_addr(mq.broker_name))
        ]
        if not lanes:
            # No cached address: look it up (and raise if there is none).
            mq = info.queues[0]
            lanes = [self._lane(core, self._addr(mq), mq)]
        elif not info.from_template:
            core.set_lanes(topic, lanes)
        return lanes

    def _next(self, lanes: list[int]) -> int:
        """The next of ``lanes`` in turn."""
        return lanes[next(self._index) % len(lanes)]

    def _forget_lanes(self, topic: str) -> None:
        """The native paths look ``topic``'s lanes up again (its route changed, or a send
        failed)."""
        core = self._core
        if core is not None:
            core.forget_lanes(topic)

    def _lane(self, core: ProducerCore, addr: str, mq: MessageQueue) -> int:
        """The core's lane to ``mq`` at ``addr``."""
        lane = core.lane(addr, mq.broker_name, mq.topic, mq.queue_id)
        self._lane_queues[lane] = (addr, mq)
        return lane

    def _batch_latency(self, broker_name: str, elapsed: float, failed: bool) -> None:
        """Fault avoidance learns the latency of an auto-batched request (callback thread)."""
        self._faults.update(broker_name, elapsed * 1000, failed)

    def _batch_failed(
        self,
        addr: str,
        topic: str,
        broker_name: str,
        queue_id: int,
        resp: RemotingResponse | None,
        err: BaseException | None,
        items: list[Batched],
    ) -> None:
        """An auto-batched request to ``queue_id`` was not stored (``resp`` the broker's
        answer, or ``err`` the transport's; on the callback thread): each of its messages is
        retried alone on another broker (when the policy allows it and its queue was not
        chosen by the caller), or fails."""
        self._forget_lanes(topic)
        error: BaseException
        if resp is not None:
            error = BrokerResponseError(resp.code, resp.remark, addr)
        else:
            error = err if err is not None else ClientError("no answer")
        policy = RetryPolicy.of(self.retry_times_when_send_async_failed)
        retry = policy.retryable(error) and policy.more_after(0)
        for future, callback, uniq, msg, fixed in items:
            if retry and not fixed and self._instance is not None:
                try:
                    prepared = self._prepare(msg, uniq)
                    self._attempt_async(
                        prepared, None, future, callback, None, 1, broker_name, [error]
                    )
                    continue
                except RocketpyError as e:
                    complete(future, callback, None, e)
                    continue
            complete(future, callback, None, error)
