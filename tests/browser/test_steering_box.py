"""The dashboard's message box: answering the agent's question from the loop view."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.test_dashboard import open_dashboard, start
from tests.server.conftest import wait_until

QUESTION = {"text": "Should I use PostgreSQL or SQLite for this?"}
DONE = {"text": "All done.\n<promise>COMPLETE</promise>"}


@pytest.fixture(autouse=True)
def generous_expectations():
    expect.set_options(timeout=60_000)


def test_a_message_sent_from_the_loop_view_answers_the_waiting_question(page, server, new_workdir):
    config = {"cooldown": 0, "checkpoint_interval": 0, "on_question": "wait"}
    loop = start(server, new_workdir(), QUESTION, DONE, config=config)
    open_dashboard(page, server, f"/loops/{loop['id']}")
    expect(page.locator(".loop-header h1 .badge")).to_have_text("paused")
    expect(page.locator('[data-fact="waiting"]')).to_contain_text(QUESTION["text"])

    page.fill('form[data-form="tell"] textarea', "SQLite, <b>please</b>.")
    page.click('form[data-form="tell"] button[type="submit"]')

    expect(page.locator(".loop-header h1 .badge")).to_have_text("completed")
    sent = page.locator(".messages li")
    expect(sent).to_have_count(1)
    expect(sent.locator(".text")).to_have_text("SQLite, <b>please</b>.")  # text, never HTML
    expect(sent).to_contain_text("→ iteration 2")
    expect(sent).to_contain_text("dashboard")
    expect(page.locator('form[data-form="tell"] textarea')).to_be_disabled()
    wait_until(lambda: server.get(f"/api/loops/{loop['id']}/messages")[0]["delivered"])
