"""The dashboard's totals say which are for the loops active now and which are all-time."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.test_dashboard import DONE, open_dashboard, start
from tests.server.conftest import wait_until


@pytest.fixture(autouse=True)
def generous_expectations() -> None:
    expect.set_options(timeout=60_000)


def test_the_totals_name_active_and_all_time_figures(page, server, new_workdir) -> None:
    done = start(server, new_workdir(), {"text": "one", "cost_usd": 0.1}, {**DONE, "cost_usd": 0.2})
    wait_until(lambda: server.get(f"/api/loops/{done['id']}")["status"] == "completed")

    open_dashboard(page, server)

    tile = page.locator(".stats .tile")
    expect(page.locator('[data-stat="active"] .value')).to_have_text("0")
    expect(page.locator('[data-stat="active-cost"] .value')).to_have_text("$0.00")
    expect(page.locator('[data-stat="cost"] .label')).to_have_text("cost, all time")
    expect(page.locator('[data-stat="cost"] .value')).to_have_text("$0.30")  # 0.1 + 0.2
    expect(page.locator('[data-stat="iterations"] .value')).to_have_text("2")
    expect(tile).to_have_count(7)
