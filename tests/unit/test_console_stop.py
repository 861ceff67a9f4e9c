"""``ConsoleServer.stop`` closes waitress's sockets on its serving thread: stopping while
browsers hold connections open (and while requests arrive) ends that thread without an error
in it — the project's pytest settings turn an exception in any thread into a failure."""

from __future__ import annotations

import http.client
import threading

import pytest

pytest.importorskip("waitress")

from rocketpy.console import ConsoleServer


def test_stop_with_open_connections_ends_the_serving_thread_cleanly() -> None:
    for _ in range(20):
        # No name server behind it: the page asked for is the static one.
        console = ConsoleServer("127.0.0.1:1", port=0).start()
        host, port = console.url.removeprefix("http://").rstrip("/").split(":")
        idle = http.client.HTTPConnection(host, int(port), timeout=5)
        idle.request("GET", "/static/console.css")
        idle.getresponse().read()  # kept alive, open while the server stops
        busy = threading.Thread(target=_hammer, args=(host, int(port)), daemon=True)
        busy.start()
        console.stop()
        busy.join(5)
        idle.close()
        assert console._thread is not None and not console._thread.is_alive()


def _hammer(host: str, port: int) -> None:
    for _ in range(50):
        c = http.client.HTTPConnection(host, port, timeout=2)
        try:
            c.request("GET", "/static/console.css")
            c.getresponse().read()
        except (OSError, http.client.HTTPException):
            return  # the server is gone: what stopping means
        finally:
            c.close()
