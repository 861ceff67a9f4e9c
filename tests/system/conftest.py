"""Fixtures of the browser tests (the web console's pages): a headless Chromium — Debian's
``chromium``, driven by Playwright with ``executable_path`` — and pages that fail their test
on any console error or uncaught exception. Started only by tests that ask for them."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def shots() -> Path:
    """Where the console tests leave their screenshots (the README's come from here)."""
    where = Path(os.environ.get("ROCKETPY_CONSOLE_SHOTS", ROOT / "target" / "console-screenshots"))
    where.mkdir(parents=True, exist_ok=True)
    return where


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    assert CHROMIUM, "Debian's chromium is required (make test installs it with apt)"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A page that records console errors and uncaught exceptions (``page.errors``); the
    test ends by asserting there were none."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    p = context.new_page()
    errors: list[str] = []
    p.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    p.on("pageerror", lambda e: errors.append(str(e)))
    p.errors = errors
    yield p
    context.close()
    assert errors == [], errors
