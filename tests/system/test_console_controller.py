"""The web console in controller mode (``rocketpy console --controller``), in a real headless
Chromium (Debian's ``chromium``, driven by Playwright with ``executable_path``): the cluster
page shows broker-a's master, epochs and three in-sync replicas as the controller leader knows
them; once the master is stopped it shows another master, and the stopped broker not alive and
not in sync. A controller that cannot be reached is a one-line notice, not an error page."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import in_process_dev

from rocketpy.console import ConsoleServer
from rocketpy.server import DevServer

GROUP = "broker-a"


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    store = tmp_path_factory.mktemp("console-controller") / "store"
    with in_process_dev(store, controller=True) as d:
        yield d


def replicas(page: Any) -> dict[str, dict[str, str]]:
    """broker-a's replica table on the page: address -> role, alive and in-sync cells."""
    rows = page.locator(f'.replication[data-group="{GROUP}"] table.replicas tbody tr[data-id]')
    out = {}
    for i in range(rows.count()):
        row = rows.nth(i)
        out[row.locator("td.addr").inner_text()] = {
            "role": row.locator("td.role").inner_text(),
            "alive": row.locator("td.alive").inner_text(),
            "sync": row.locator("td.in-sync").inner_text(),
        }
    return out


def master(page: Any) -> str:
    """broker-a's master as the page shows it: ``id @ address``."""
    return str(page.locator(f'.replication[data-group="{GROUP}"] strong.master').inner_text())


def reload_until(page: Any, url: str, cond: Callable[[], bool], timeout: float) -> bool:
    """Loads ``url`` again and again until ``cond`` holds of the page or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        page.goto(url)
        if cond():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)


def test_unreachable_controller_is_a_notice(dev: DevServer, page: Any) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        nobody = f"127.0.0.1:{s.getsockname()[1]}"
    with ConsoleServer(dev.namesrv_addr, port=0, controller=nobody) as console:
        response = page.goto(console.url)
        assert response.status == 200
        notice = page.inner_text("#controller-notice")
        assert notice.startswith(f"Controller {nobody} cannot be reached"), notice
        assert "\n" not in notice
        assert GROUP in page.inner_text("#brokers"), "the rest of the page is there"


def test_cluster_page_shows_the_group_and_its_failover(
    dev: DevServer, page: Any, shots: Path
) -> None:
    assert dev.controller_addr is not None
    with ConsoleServer(dev.namesrv_addr, port=0, controller=dev.controller_addr) as console:
        url = console.url

        def all_in_sync() -> bool:
            rows = replicas(page)
            return len(rows) == 3 and all(
                r["alive"] == "true" and r["sync"] == "in sync" for r in rows.values()
            )

        assert reload_until(page, url, all_in_sync, 30), replicas(page)
        assert page.inner_text("#controller-leader") == dev.controller_addr
        before = master(page)
        master_id, _, master_addr = before.partition(" @ ")
        assert master_id.isdigit(), before
        rows = replicas(page)
        assert rows[master_addr]["role"] == "master"
        assert [r["role"] for r in rows.values()].count("master") == 1
        section = page.locator(f'.replication[data-group="{GROUP}"]')
        epoch = int(section.locator("strong.master-epoch").inner_text())
        assert int(section.locator("strong.sync-epoch").inner_text()) >= 1

        stopped = dev.stop_master()
        assert stopped == master_addr, (stopped, before)

        def failed_over() -> bool:
            now = master(page)
            rows = replicas(page)
            gone = rows.get(stopped, {})
            return (
                now not in (before, "none")
                and gone.get("alive") == "false"
                and gone.get("sync") == "not in sync"
            )

        assert reload_until(page, url, failed_over, 25), (master(page), replicas(page))
        after_addr = master(page).partition(" @ ")[2]
        assert after_addr != master_addr
        assert replicas(page)[after_addr] == {"role": "master", "alive": "true", "sync": "in sync"}
        assert int(section.locator("strong.master-epoch").inner_text()) > epoch
        page.screenshot(path=str(shots / "cluster-controller.png"), full_page=True)
