"""The one rule for asking the name servers: each address in turn from a starting one, the
first that answers as a name server wins, and when none does the error says why in terms of
what the user configured.

What must stay true: a failure to reach every name server is a :class:`RemotingError` of the
last failure's class (connect or timeout) with that failure as ``__cause__``; an address that
is not a name server (a broker's remoting port, a gRPC endpoint) is a :class:`ConfigError`
naming what it is, because no retry can make it answer.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Sequence

from rocketpy._native import RemotingResponse
from rocketpy.errors import ConfigError, RemotingConnectError, RemotingError, RocketpyError
from rocketpy.protocol import RequestCode, ResponseCode

log = logging.getLogger("rocketpy.client")

#: Requests every name server serves: "not supported" to one of them means the address is
#: something else (a broker answers the remoting protocol but serves none of these).
ALWAYS_SERVED = frozenset(
    {
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        RequestCode.GET_BROKER_CLUSTER_INFO,
        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    }
)

#: What to give instead, said by every "not a name server" error.
_HINT = (
    "namesrv_addr takes the name servers' host:port list (';' between them; RocketMQ's "
    "default port is 9876; `rocketpy dev` prints its name server's address)"
)

#: HTTP/2's client preface and an empty SETTINGS frame: a gRPC server answers with its own
#: SETTINGS frame (type 4 on stream 0), which nothing speaking RocketMQ's remoting protocol does.
#: Addresses already reported as not being name servers.
_warned: set[str] = set()

_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def namesrv_addrs(given: str | None) -> list[str]:
    """The name servers of ``given`` (``host:port`` separated by ``;``), or of the environment
    variable ``NAMESRV_ADDR`` when ``given`` is empty — where RocketMQ's clients and mqadmin
    look when no address is configured. Raises :class:`ConfigError` when both are empty."""
    text = given or os.environ.get("NAMESRV_ADDR", "")
    addrs = [a.strip() for a in text.split(";") if a.strip()]
    if not addrs:
        raise ConfigError(
            "no name server: give namesrv_addr (host:port, ';' between several) or set the "
            "NAMESRV_ADDR environment variable"
        )
    return addrs


def answers_http2(addr: str, timeout: float = 1.0) -> bool:
    """Whether ``addr`` speaks HTTP/2 (a gRPC endpoint, such as a RocketMQ 5.x proxy); asked
    only to explain a failure, never on the normal path."""
    host, _, port = addr.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as s:
            s.sendall(_H2_PREFACE)
            head = s.recv(9)
    except (OSError, ValueError):
        return False
    return len(head) >= 5 and head[3] == 4


def not_a_namesrv(addr: str, code: int, resp: RemotingResponse) -> ConfigError | None:
    """The error for ``resp``, the answer of ``addr`` to ``code``, when it shows that ``addr``
    is not a name server; None when it may be one."""
    if code in ALWAYS_SERVED and resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
        return ConfigError(
            f"{addr} is not a name server: it answered as a RocketMQ broker (request code "
            f"{code} not supported). {_HINT}"
        )
    return None


def invoke_in_turn(
    addrs: Sequence[str],
    start: int,
    code: int,
    invoke: Callable[[str], RemotingResponse],
) -> tuple[int, RemotingResponse]:
    """Sends ``code`` with ``invoke`` to ``addrs`` from index ``start`` on, each once; returns
    the index of the first name server that answered and its answer."""
    failures: list[tuple[str, RocketpyError]] = []
    for k in range(len(addrs)):
        i = (start + k) % len(addrs)
        addr = addrs[i]
        try:
            resp = invoke(addr)
        except RemotingError as e:
            failures.append((addr, e))
            log.debug("name server %s failed (%s); trying the next", addr, e)
            continue
        wrong = not_a_namesrv(addr, code, resp)
        if wrong is not None:
            if addr not in _warned:
                # Once per address: the list may hold good name servers after it.
                _warned.add(addr)
                log.warning("%s", wrong)
            failures.append((addr, wrong))
            continue
        return i, resp
    raise no_answer(addrs, failures)


def no_answer(addrs: Sequence[str], failures: list[tuple[str, RocketpyError]]) -> RocketpyError:
    """The error when no name server of ``addrs`` answered: a :class:`ConfigError` when every
    address is something else than a name server, else the last network failure's class."""
    explained: list[tuple[str, RocketpyError]] = []
    for addr, e in failures:
        if isinstance(e, RemotingConnectError) and answers_http2(addr):
            wrong = ConfigError(
                f"{addr} is not a name server: it is a gRPC endpoint (RocketMQ 5.x clients "
                f"connect there; rocketpy's clients speak the 4.x protocol). {_HINT}"
            )
            wrong.__cause__ = e
            e = wrong
        explained.append((addr, e))
    what = "; ".join(f"{a}: {e}" for a, e in explained)
    network = [e for _, e in explained if isinstance(e, RemotingError)]
    if not network:
        if len(explained) == 1:
            return explained[0][1]
        error: RocketpyError = ConfigError(f"no name server answered (tried {list(addrs)}): {what}")
        error.__cause__ = explained[-1][1] if explained else None
        return error
    last = network[-1]
    error = type(last)(f"no name server answered (tried {list(addrs)}): {what}")
    error.__cause__ = last
    return error
