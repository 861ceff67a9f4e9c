"""``rocketpy console``: a web console for a RocketMQ cluster (rocketpy or Apache RocketMQ
4.x/5.x), in the spirit of rocketmq-dashboard — cluster, topics, consumer groups with lag,
message search, dead-letter messages and live charts — over the same requests as
``rocketpy admin``. Reads are free; every change asks for confirmation first. It binds
127.0.0.1 unless told otherwise: it has no login of its own.

Needs Flask and waitress (``pip install rocketpy-mq[console]``)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

__all__ = ["MISSING_EXTRA", "ConsoleServer", "create_app", "missing_extra"]

#: What to do when the console's dependencies are not installed (said instead of a traceback).
MISSING_EXTRA = "the console needs Flask and waitress: pip install 'rocketpy-mq[console]'"


def missing_extra() -> str | None:
    """:data:`MISSING_EXTRA` when Flask or waitress cannot be imported, else None: asked by
    the CLI before it starts anything, so a missing extra is one line, not a traceback from
    the middle of a start."""
    try:
        import flask  # noqa: F401
        import waitress  # noqa: F401
    except ImportError:
        return MISSING_EXTRA
    return None


def create_app(
    namesrv: str, allowed_hosts: Iterable[str] = (), controller: str | None = None
) -> Any:
    """The console's Flask application for the name server ``namesrv``; ``allowed_hosts``:
    the names it is reached by besides ``localhost`` and IP addresses; ``controller``: a
    controller's ``host:port`` (controller mode), whose view of each broker group the
    cluster page shows."""
    from rocketpy.console.web import create_app as make

    return make(namesrv, allowed_hosts, controller)


class ConsoleServer:
    """The console served by waitress on a background thread.

    Args:
        namesrv: the name server, ``host:port``.
        host: interface to listen on (127.0.0.1 by default: the console has no login).
        port: port (0 = a free one).
        allowed_hosts: names the console is reached by (its ``Host`` header) besides
            ``localhost`` and IP addresses; requests under any other name are refused (a
            page of another site whose name points here), as are changes whose ``Origin`` is
            not the console's own.
        controller: a controller's ``host:port`` (controller mode): the cluster page shows
            each broker group's master, epochs and replicas as its leader knows them.
    """

    def __init__(
        self,
        namesrv: str,
        host: str = "127.0.0.1",
        port: int = 8080,
        allowed_hosts: Iterable[str] = (),
        controller: str | None = None,
    ) -> None:
        from waitress.server import create_server

        self.app = create_app(namesrv, allowed_hosts, controller)
        # The server's sockets (listener, wake-up trigger, connections): closed together.
        self._map: dict[int, Any] = {}
        self._server = create_server(self.app, map=self._map, host=host, port=port, threads=4)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Where the console is."""
        host, port = self._server.effective_host, self._server.effective_port
        return f"http://{host}:{port}/"

    def start(self) -> ConsoleServer:
        """Serves on a daemon thread; returns self."""
        self._thread = threading.Thread(
            target=self._server.run, name="rocketpy-console", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serves on this thread until interrupted."""
        self._server.run()

    def stop(self) -> None:
        """Stops serving and closes the console's cluster connections."""
        if self._thread is not None and self._thread.is_alive():
            # Closed on the serving thread, woken by the server's trigger: sockets closed from
            # here while that thread polls them made its poll fail (EBADF). With every socket
            # closed its loop has nothing left and returns.
            self._server.trigger.pull_trigger(self._close_all)
            self._thread.join(10)
        else:
            self._close_all()
        self.app.extensions["rocketpy_cluster"].close()

    def _close_all(self) -> None:
        from waitress import wasyncore

        self._server.task_dispatcher.shutdown()
        wasyncore.close_all(self._map)

    def __enter__(self) -> ConsoleServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
