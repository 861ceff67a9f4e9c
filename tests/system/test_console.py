"""The web console (``rocketpy console``) in a real headless Chromium (Debian's ``chromium``,
driven by Playwright with ``executable_path``): every main page loads with no console errors
and is saved as a screenshot; a topic created in the page (after its confirmation) appears in
``rocketpy admin topicList``; a lagging group shows its lag; a message found by key shows its
body; a dead-letter message is resent to its topic."""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from servers import in_process_dev

from helpers import Collector, dlq_size, fast_config, start_consumer, wait_until
from rocketpy import (
    ConsumeFromWhere,
    ConsumeStatus,
    Message,
    MessageSelector,
    Producer,
    PushConsumer,
)
from rocketpy.admin import Admin
from rocketpy.console import ConsoleServer
from rocketpy.server import DevServer


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    store = tmp_path_factory.mktemp("console") / "store"
    # SQL92 subscriptions are served, so the group page can show one.
    with in_process_dev(store, broker_config={"enablePropertyFilter": "true"}) as d:
        yield d


@pytest.fixture(scope="module")
def console(dev: DevServer) -> Iterator[ConsoleServer]:
    with ConsoleServer(dev.namesrv_addr, port=0) as c:
        yield c


def consumer(
    ns: str, group: str, topic: str, listener: Any, expression: str | MessageSelector = "*"
) -> PushConsumer:
    """A consumer from the first offset that sends a failed message straight to the DLQ."""
    return start_consumer(
        group, ns, topic, listener, expression, ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        client_config=fast_config(ns), max_reconsume_times=0,
    )  # fmt: skip


def test_main_pages_load_without_errors_and_are_captured(dev, console, page, shots) -> None:
    ns = dev.namesrv_addr
    with Producer("console-shots", client_config=fast_config(ns)) as p:
        for i in range(20):
            p.send(Message("ConsoleOrders", f'{{"order": {i}}}', keys=f"order-{i}", tags="new"))
    got = Collector()
    c = consumer(ns, "console-shots-group", "ConsoleOrders", got)
    try:
        assert wait_until(lambda: len(got.messages) == 20, timeout=30)
        pages = {
            "cluster": "",
            "topics": "topics",
            "topic": "topics/ConsoleOrders",
            "groups": "groups",
            "group": "groups/console-shots-group",
            "messages": "messages?by=key&topic=ConsoleOrders&key=order-7",
            "dlq": "dlq",
        }
        for name, path in pages.items():
            page.goto(console.url + path)
            page.wait_for_load_state("networkidle")
            assert page.locator("h1").count() == 1, name
            if page.locator("[data-live]").count():
                # Two polls: the rate chart draws from the second.
                page.wait_for_selector("[data-live] polyline", state="attached", timeout=10_000)
            page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
        page.goto(console.url)
        assert "broker-a" in page.locator("#brokers").inner_text()
        assert page.locator("#controller").count() == 0, "no controller given, no section"
    finally:
        c.shutdown()


def test_topic_created_in_the_page_after_confirmation(dev, console, page) -> None:
    page.goto(console.url + "topics")
    page.fill("#create-topic input[name=topic]", "ConsoleCreated")
    page.fill("#create-topic input[name=queues]", "4")
    page.click("#create-topic button")
    assert "ConsoleCreated" in page.inner_text("#confirm-text")
    with Admin(dev.namesrv_addr) as admin:
        assert "ConsoleCreated" not in admin.topic_list(), "nothing changes before confirming"
    page.click("#confirm button")
    assert "created" in page.inner_text(".flash")
    assert page.url.endswith("/topics/ConsoleCreated")
    out = subprocess.run(
        [sys.executable, "-m", "rocketpy", "admin", "topicList", "-n", dev.namesrv_addr],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "ConsoleCreated" in out.split()
    assert page.locator("#queues tbody tr").count() == 4


def test_lagging_group_shows_its_lag(dev, console, page) -> None:
    ns, topic, group = dev.namesrv_addr, "ConsoleLag", "console-lag-group"
    with Producer("console-lag", client_config=fast_config(ns)) as p:
        for _ in range(10):
            p.send(Message(topic, b"early"))
    got = Collector()
    c = consumer(ns, group, topic, got)
    try:
        assert wait_until(lambda: len(got.messages) == 10, timeout=30)
        with Admin(ns) as admin:
            assert wait_until(lambda: admin.consume_stats(group).diff_total == 0, timeout=20)
    finally:
        c.shutdown()
    with Producer("console-lag", client_config=fast_config(ns)) as p:
        for _ in range(7):
            p.send(Message(topic, b"late"))
    page.goto(console.url + "groups")
    row = page.locator("#groups tr", has_text=group)
    assert row.locator("td.lag").inner_text() == "7"
    row.locator("a").click()
    assert page.inner_text("#diff-total") == "7"
    assert page.inner_text("#members") == "0"
    page.wait_for_selector("[data-live] polyline", state="attached", timeout=10_000)
    assert "Lag 7 messages" in page.inner_text("[data-live] .legend")

    # Skip the backlog: reset to a time after the last message, confirmed.
    page.select_option("#reset-offset select[name=topic]", topic)
    page.fill("#reset-offset input[name=time]", "2099-01-01T00:00:00")
    page.click("#reset-offset button")
    assert group in page.inner_text("#confirm-text")
    page.click("#confirm button")
    assert "moved" in page.inner_text(".flash")
    assert page.inner_text("#diff-total") == "0"


def test_group_page_shows_an_sql92_subscription(dev, console, page) -> None:
    ns, topic, group = dev.namesrv_addr, "ConsoleSql", "console-sql-group"
    with Admin(ns) as admin:
        admin.create_topic(topic, queues=1)
    c = consumer(ns, group, topic, Collector(), MessageSelector.by_sql("a > 1"))
    try:
        # start() returns before the first heartbeat reaches the broker; the page shows what
        # the broker knows, so wait until it knows the group online.
        with Admin(ns) as admin:
            assert wait_until(lambda: admin.consumer_connection(group) is not None, timeout=20)
        page.goto(console.url + "groups/" + group)
        assert f"{topic} (SQL92: a > 1)" in page.inner_text("body")
    finally:
        c.shutdown()


def test_message_found_by_key_shows_its_body(dev, console, page) -> None:
    with Producer("console-key", client_config=fast_config(dev.namesrv_addr)) as p:
        p.send(Message("ConsoleSearch", "hello console <b>42</b>", keys="console-key-1"))
    page.goto(console.url + "messages")
    page.fill("#by-key input[name=topic]", "ConsoleSearch")
    page.fill("#by-key input[name=key]", "console-key-1")
    page.click("#by-key button")
    assert page.inner_text("#result-count") == "1 message(s) found"
    assert page.inner_text("pre.body") == "hello console <b>42</b>", "shown as text, not HTML"
    assert "console-key-1" in (page.locator("table.props").text_content() or "")


def test_message_found_by_the_id_a_producer_returned(dev, console, page) -> None:
    with Producer("console-id", client_config=fast_config(dev.namesrv_addr)) as p:
        sent = p.send(Message("ConsoleById", "found by its id"))
    for msg_id in (sent.msg_id, sent.offset_msg_id):
        page.goto(console.url + "messages?by=id")
        page.fill("#by-id input[name=id]", msg_id)
        page.click("#by-id button")
        assert page.inner_text("#result-count") == "1 message(s) found"
        assert page.inner_text("pre.body") == "found by its id"


def test_dead_letter_message_is_resent(dev, console, page) -> None:
    ns, topic, group = dev.namesrv_addr, "ConsoleDlq", "console-dlq-group"
    c = consumer(ns, group, topic, lambda msgs: ConsumeStatus.RECONSUME_LATER)
    try:
        with Producer("console-dlq", client_config=fast_config(ns)) as p:
            p.send(Message(topic, b"poison", keys="poison-1"))
        assert wait_until(lambda: dlq_size(ns, group) == 1, timeout=30)
    finally:
        c.shutdown()
    page.goto(console.url + f"dlq?group={group}")
    assert page.inner_text("#result-count").startswith("1 dead-letter message")
    assert page.inner_text("pre.body") == "poison"
    page.click("form.resend button")
    assert "original topic" in page.inner_text("#confirm-text")
    page.click("#confirm button")
    assert "Resent to ConsoleDlq" in page.inner_text(".flash")
    with Admin(ns) as admin:
        stats = admin.topic_stats(topic)
        assert sum(o.max_offset for o in stats.values()) == 2, "the original and the resent one"


def test_changes_need_the_page_token(console) -> None:
    data = b"topic=Forged&queues=1&confirmed=yes"
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(console.url + "actions/create-topic", data=data, timeout=10)
    assert e.value.code == 403
    e.value.close()


def test_other_sites_names_and_origins_are_refused(console) -> None:
    """A page of another site whose name resolves to the console (DNS rebinding) reads
    nothing; a change posted from another origin is refused even with the page's token."""

    def get(headers: dict[str, str], data: bytes | None = None) -> int:
        req = urllib.request.Request(console.url, data=data, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status
        except urllib.error.HTTPError as e:
            e.close()
            return e.code

    port = console.url.rsplit(":", 1)[1].rstrip("/")
    assert get({}) == 200
    assert get({"Host": f"localhost:{port}"}) == 200
    assert get({"Host": f"evil.example:{port}"}) == 421
    page = urllib.request.urlopen(console.url + "topics", timeout=10).read().decode()
    token = page.split('name="token" value="', 1)[1].split('"', 1)[0]
    form = f"token={token}&topic=FromElsewhere&queues=1&confirmed=no".encode()
    action = console.url + "actions/create-topic"
    req = urllib.request.Request(action, data=form, headers={"Origin": "http://evil.example"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=10)
    assert e.value.code == 403
    e.value.close()
    own = urllib.request.Request(action, data=form, headers={"Origin": console.url.rstrip("/")})
    with urllib.request.urlopen(own, timeout=10) as r:
        assert r.status == 200, "the console's own origin asks for confirmation"
