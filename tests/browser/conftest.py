"""Debian's Chromium, driven by Playwright (no browser download), against a live server.

Without Chromium the tests are skipped (run scripts/ensure-browser); in CI that is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from ralphctl.engine.manager import LoopManager
from ralphctl.server.app import create_app
from ralphctl.server.client import Client
from ralphctl.store.repository import Store
from tests.server.conftest import TOKEN, isolated, new_workdir
from tests.server.live import serving

CHROMIUM = Path(os.environ.get("RALPHCTL_CHROMIUM", "/usr/bin/chromium"))
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
EXPECT_TIMEOUT_MS = 60_000

__all__ = ["isolated", "new_workdir"]  # the server tests' fixtures, used here too


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One Chromium per module: Playwright's sync API keeps an event loop running in this
    thread while it is open, which would break every later test that calls asyncio.run()."""
    if not os.access(CHROMIUM, os.X_OK):
        reason = f"{CHROMIUM} not found: run scripts/ensure-browser (installs Debian's chromium)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    opened = context.new_page()
    yield opened
    context.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Client]:
    """A live server (real manager, SQLite); the client calls its API with the token."""
    with Store.open(str(tmp_path / "ralphctl.db")) as store:
        app = create_app(store, LoopManager(store, max_concurrent=4), TOKEN)
        with serving(app) as url:
            yield Client(url, TOKEN)
