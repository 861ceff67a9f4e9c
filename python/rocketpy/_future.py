"""``SendFuture``: the :class:`concurrent.futures.Future` an asynchronous send returns, made
cheap for the common case where nobody waits on it one by one.

A plain ``Future`` makes a ``Condition`` (an ``RLock`` and more) when created and takes it
when finished: together that costs more than the rest of an auto-batched send. Here the
condition is made the first time anything needs it — ``result()``, ``exception()``,
``add_done_callback()``, ``cancel()``, ``concurrent.futures.wait`` or ``asyncio.wrap_future``
— and :meth:`SendFuture._finish` skips it when it was never made. Everything else is
``Future``'s own code, so the object is a ``Future`` in every respect.

A new future's state is the class's: its attributes are class-level defaults (immutable
values only) that an instance overrides when it first sets them, so making one — which the
native auto-batching does for every message (``send_results.rs``) — sets nothing.

What must stay true (relying on the GIL ordering single attribute loads and stores): anyone
who waits makes the condition *before* reading the state, and ``_finish`` sets the state
*before* checking whether the condition exists; so either the waiter sees the result, or
``_finish`` sees the condition and notifies through it. The native completion of
auto-batched sends (``send_results.rs``) follows the same rule.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

from rocketpy._native import on_callback_thread
from rocketpy.errors import ClientError

T = TypeVar("T")

_PENDING = "PENDING"
_FINISHED = "FINISHED"

#: Guards the lazy creation of every future's condition (held for a few bytecodes, rarely).
_MAKING = threading.Lock()


class SendFuture(Future, Generic[T]):  # type: ignore[type-arg]
    """A :class:`concurrent.futures.Future` whose condition is made on first use."""

    # A new future's state (see the module docs): only immutable values here.
    _lazy_condition: threading.Condition | None = None
    _state: str = _PENDING
    _result: Any = None
    _exception: BaseException | None = None
    _lazy_waiters: list[Any] | None = None
    _lazy_callbacks: list[Any] | None = None

    def __init__(self) -> None:
        # Future.__init__ is not called: it would make the condition at once. The state
        # starts as the class's defaults.
        pass

    @property
    def _condition(self) -> threading.Condition:  # type: ignore[override]
        cond = self._lazy_condition
        if cond is None:
            with _MAKING:
                cond = self._lazy_condition
                if cond is None:
                    cond = self._lazy_condition = threading.Condition()
        return cond

    # Future keeps two lists per instance; made on first use too (only waiters and added
    # callbacks use them, and both make the condition first).
    @property
    def _waiters(self) -> list[Any]:  # type: ignore[override]
        if self._lazy_waiters is None:
            self._lazy_waiters = []
        return self._lazy_waiters

    @property
    def _done_callbacks(self) -> list[Any]:
        if self._lazy_callbacks is None:
            self._lazy_callbacks = []
        return self._lazy_callbacks

    def result(self, timeout: float | None = None) -> T:
        """The send's result, waiting up to ``timeout`` seconds (see :class:`Future`).

        Raises:
            ClientError: called on rocketpy's callback thread (in a send callback) before the
                send finished: that thread is what finishes it, so the wait could never end.
        """
        self._refuse_waiting_on_the_callback_thread()
        return super().result(timeout)  # type: ignore[no-any-return]

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The send's error, or None (see :meth:`result` for what is refused)."""
        self._refuse_waiting_on_the_callback_thread()
        return super().exception(timeout)

    def _refuse_waiting_on_the_callback_thread(self) -> None:
        if self._state == _PENDING and on_callback_thread():
            raise ClientError(
                "waiting for a send's result inside a rocketpy callback would never end: "
                "the callback thread is what completes sends; chain a callback "
                "(send_async(msg, callback) or add_done_callback) or send synchronously "
                "with Producer.send()"
            )

    def _finish(self, result: T | None, error: BaseException | None) -> bool:
        """Ends the future with ``result`` or ``error``; False when it had been cancelled."""
        if self._lazy_condition is None:
            if self._state != _PENDING:
                return False
            self._result = result
            self._exception = error
            self._state = _FINISHED
            if self._lazy_condition is None:
                # Nobody waits, and nobody added a callback (that makes the condition).
                return True
            # Someone started waiting meanwhile: wake them as Future does.
            with self._condition:
                for waiter in self._waiters:
                    if error is None:
                        waiter.add_result(self)
                    else:
                        waiter.add_exception(self)
                self._condition.notify_all()
            self._invoke_callbacks()
            return True
        try:
            if error is None:
                self.set_result(result)
            else:
                self.set_exception(error)
        except Exception:  # InvalidStateError: cancelled
            return False
        return True
