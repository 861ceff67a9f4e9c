"""The Python send paths, for what the native paths do not take (a queue the caller chose
with fault avoidance on, compressed bodies, batches, transactions' half messages, retries):
one attempt, then further attempts on other brokers as the :class:`RetryPolicy` says —
synchronously, or asynchronously with a future and a callback."""

from __future__ import annotations

import time
from concurrent.futures import Future

from rocketpy._future import SendFuture
from rocketpy._native import RemotingResponse
from rocketpy._util import now_millis
from rocketpy.client.route import TopicPublishInfo
from rocketpy.errors import BrokerResponseError, ClientError, RemotingError, RocketpyError
from rocketpy.message import MessageQueue, SendResult
from rocketpy.producer._prepare import Prepared
from rocketpy.producer._retry import RetryPolicy, complete
from rocketpy.producer._routing import Routing
from rocketpy.producer._selectors import SendCallback


class PythonSends(Routing):
    """Sending prepared messages from Python."""

    def _send_once(self, prepared: Prepared, mq: MessageQueue, timeout_ms: int) -> SendResult:
        addr = self._addr(mq)
        header = dict(prepared.header, queue_id=mq.queue_id)
        started = time.monotonic()
        try:
            resp = self._client().remoting.invoke(
                addr, prepared.code, header, prepared.body, max(1, timeout_ms), direct=True
            )
            result = self._result(resp, addr, mq, prepared.msg_id)
        except (RemotingError, ClientError, BrokerResponseError):
            self._note_latency(mq, started, True, prepared.count)
            raise
        self._note_latency(mq, started, False, prepared.count)
        return result

    def _send_sync(
        self,
        prepared: Prepared,
        fixed: MessageQueue | None,
        timeout_ms: int | None,
        deadline: int | None = None,
        first: int = 0,
        last_broker: str | None = None,
        errors: list[BaseException] | None = None,
        info: TopicPublishInfo | None = None,
    ) -> SendResult:
        """Sends ``prepared`` (to ``fixed`` only, or retrying on other brokers), from
        attempt number ``first`` on, until ``deadline`` (ms; default: ``timeout_ms`` from
        now)."""
        if deadline is None:
            deadline = now_millis() + (
                timeout_ms if timeout_ms is not None else self.send_timeout_ms
            )
        if fixed is not None:
            return self._send_once(prepared, fixed, max(1, deadline - now_millis()))
        if info is None:
            info = self.publish_info(prepared.topic)
        policy = RetryPolicy.of(self.retry_times_when_send_failed)
        errors = list(errors or ())
        for attempt in range(first, policy.attempts):
            left = deadline - now_millis()
            if left <= 0:
                break
            mq = self._select_queue(info, last_broker)
            last_broker = mq.broker_name
            try:
                return self._send_once(prepared, mq, left)
            except (BrokerResponseError, RemotingError, ClientError) as e:
                if not policy.retryable(e):
                    raise
                errors.append(e)
            policy.note(mq, attempt, errors[-1])
            if policy.more_after(attempt):
                info = self._refresh_after_failure(prepared.topic, info)
        raise policy.gave_up(prepared.topic, errors)

    def _send_async(
        self,
        prepared: Prepared,
        fixed: MessageQueue | None,
        callback: SendCallback | None,
        timeout_ms: int | None,
    ) -> Future[SendResult]:
        future: SendFuture[SendResult] = SendFuture()
        self._attempt_async(prepared, fixed, future, callback, timeout_ms, 0, None, [])
        return future

    def _attempt_async(
        self,
        prepared: Prepared,
        fixed: MessageQueue | None,
        future: SendFuture[SendResult],
        callback: SendCallback | None,
        timeout_ms: int | None,
        first: int,
        first_broker: str | None,
        first_errors: list[BaseException],
    ) -> None:
        """Sends ``prepared`` alone, from attempt number ``first`` on, retrying on other
        brokers; ends ``future`` and ``callback``."""
        timeout = timeout_ms if timeout_ms is not None else self.send_timeout_ms
        deadline = now_millis() + timeout
        policy = (
            RetryPolicy(1)
            if fixed is not None
            else RetryPolicy.of(self.retry_times_when_send_async_failed)
        )
        info = self.publish_info(prepared.topic) if fixed is None else None

        def attempt(n: int, last_broker: str | None, errors: list[BaseException]) -> None:
            left = deadline - now_millis()
            if left <= 0 or n >= policy.attempts:
                complete(future, callback, None, policy.gave_up(prepared.topic, errors))
                return
            mq = fixed if fixed is not None else self._select_queue(info, last_broker)  # type: ignore[arg-type]
            try:
                addr = self._addr(mq)
            except RocketpyError as e:
                complete(future, callback, None, e)
                return
            started = time.monotonic()

            def done(resp: RemotingResponse | None, err: BaseException | None) -> None:
                error: BaseException
                if resp is not None:
                    try:
                        result = self._result(resp, addr, mq, prepared.msg_id)
                    except BrokerResponseError as e:
                        error = e
                    else:
                        self._note_latency(mq, started, False, prepared.count)
                        complete(future, callback, result, None)
                        return
                else:
                    error = err if err is not None else ClientError("no answer")
                self._note_latency(mq, started, True, prepared.count)
                if not policy.retryable(error):
                    complete(future, callback, None, error)
                    return
                policy.note(mq, n, error)
                attempt(n + 1, mq.broker_name, [*errors, error])

            header = dict(prepared.header, queue_id=mq.queue_id)
            self._client().remoting.invoke_async(
                addr, prepared.code, header, prepared.body, max(1, left), done
            )

        attempt(first, first_broker, first_errors)
