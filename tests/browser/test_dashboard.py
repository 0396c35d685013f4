"""The dashboard in a real browser: live overview, live iterations, the pause button, charts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from ralphctl.server.client import Client
from tests.server.conftest import TOKEN, loop_body, wait_until

STEP = {
    "text": "working",
    "sleep_s": 0.6,
    "cost_usd": 0.05,
    "tokens": {"input": 1200, "output": 300},
}
DONE = {"text": "All done.\n<promise>COMPLETE</promise>", "cost_usd": 0.02}


@pytest.fixture(autouse=True)
def generous_expectations():
    expect.set_options(timeout=60_000)


def start(server: Client, workdir: Path, *steps: dict[str, Any], **fields: Any) -> dict[str, Any]:
    loop: dict[str, Any] = server.post("/api/loops", loop_body(workdir, *steps, **fields))
    return loop


def open_dashboard(page: Page, server: Client, route: str = "/") -> None:
    page.goto(f"{server.base_url}/#token={TOKEN}")
    expect(page.locator("#connection")).to_have_text("live")
    if route != "/":
        page.goto(f"{server.base_url}/#{route}")


def test_the_token_moves_from_the_url_to_session_storage(page, server):
    open_dashboard(page, server)

    assert page.evaluate("location.hash") == "#/"
    assert page.evaluate("sessionStorage.getItem('ralphctl.token')") == TOKEN


def test_without_the_token_the_page_asks_for_it(page, server):
    page.goto(server.base_url)
    page.fill("input[name=token]", TOKEN)
    page.click("button[type=submit]")

    expect(page.locator("#connection")).to_have_text("live")
    expect(page.locator("h1")).to_have_text("Loops")


def test_the_overview_shows_a_running_loop(page, server, new_workdir):
    loop = start(server, new_workdir(), STEP, max_iterations=100, max_cost_usd=20, name="demo")

    open_dashboard(page, server)

    row = page.locator(f'tr[data-loop="{loop["id"]}"]')
    expect(row.locator(".badge")).to_have_text("running")
    expect(row).to_contain_text("demo")
    expect(row).to_contain_text("scripted")
    expect(row).to_contain_text("/ $20.00")


def test_a_new_iteration_appears_without_a_reload(page, server, new_workdir):
    loop = start(server, new_workdir(), STEP, max_iterations=100)
    open_dashboard(page, server)
    page.evaluate("window.notReloaded = true")
    cell = page.locator(f'tr[data-loop="{loop["id"]}"] .iteration')
    expect(cell).to_have_text(re.compile(r"^\d+ / 100$"))
    seen = int(cell.inner_text().split(" / ")[0])

    expect(cell).to_have_text(f"{seen + 1} / 100")
    page.click(f'a[href="#/loops/{loop["id"]}"]')
    expect(page.locator(f'tr[data-iteration="{seen + 2}"]')).to_be_visible()
    assert page.evaluate("window.notReloaded") is True


def test_pause_via_the_button_changes_the_state(page, server, new_workdir):
    loop = start(server, new_workdir(), STEP, max_iterations=100)
    open_dashboard(page, server, f"/loops/{loop['id']}")
    header = page.locator(".loop-header h1 .badge")
    expect(header).to_have_text("running")

    page.click('button[data-action="pause"]')

    expect(header).to_have_text("paused")
    expect(page.locator('button[data-action="resume"]')).to_be_enabled()
    expect(page.locator('button[data-action="pause"]')).to_be_disabled()
    assert server.get(f"/api/loops/{loop['id']}")["status"] == "paused"


def test_a_hook_mode_loop_pauses_and_once_stopped_cannot_be_resumed(
    page, server, new_workdir, fake_claude
):
    fake_claude([{"text": "thinking", "sleep_s": 60}], [{"text": "again", "sleep_s": 60}])
    body = {"task": "Write the notes.", "workdir": str(new_workdir()), "mode": "hook"}
    loop = server.post("/api/loops", body)
    open_dashboard(page, server, f"/loops/{loop['id']}")
    header = page.locator(".loop-header h1 .badge")
    expect(header).to_have_text("running")

    page.click('button[data-action="pause?now=true"]')
    expect(header).to_have_text("paused")
    page.click('button[data-action="resume"]')
    expect(header).to_have_text("running")
    page.click('button[data-action="stop"]')

    expect(header).to_have_text("stopped")
    expect(page.locator('button[data-action="resume"]')).to_be_disabled()
    assert server.get(f"/api/loops/{loop['id']}")["stop_reason"] == "user_stop"


def test_the_charts_render(page, server, new_workdir):
    loop = start(server, new_workdir(), STEP, STEP, STEP, DONE, max_cost_usd=1)
    wait_until(lambda: server.get(f"/api/loops/{loop['id']}")["status"] == "completed")

    open_dashboard(page, server, f"/loops/{loop['id']}")

    charts = page.locator(".charts svg.chart")
    expect(charts).to_have_count(3)
    expect(charts.nth(0).locator("rect.bar")).to_have_count(4)
    expect(charts.nth(1).locator("rect.bar")).to_have_count(4)
    expect(charts.nth(2).locator("path.line")).to_have_count(1)
    expect(page.locator(".timeline rect.span")).to_have_count(4)
    expect(page.locator("ol.log li").first).to_contain_text("completed")

    page.click('a[data-nav="metrics"]')

    expect(page.locator('[data-metric="completion"] .value')).to_have_text("4.0")
    bars = page.locator("figure.chart-box rect.bar")
    expect(bars).to_have_count(24)
    heights = bars.evaluate_all("bars => bars.map(bar => Number(bar.getAttribute('height')))")
    assert max(heights) > 0


def test_an_iteration_s_transcript_shows_as_text_never_as_html(page, server, new_workdir):
    html = '<img src="x" onerror="document.title=\'owned\'"><b>bold?</b>'
    noisy = {
        **DONE,
        "garbage": [f"stray {html}"],
        "text": f"said {html}\n<promise>COMPLETE</promise>",
    }
    loop = start(server, new_workdir(), noisy)
    wait_until(lambda: server.get(f"/api/loops/{loop['id']}")["status"] == "completed")

    open_dashboard(page, server, f"/loops/{loop['id']}")
    page.click('button[data-transcript-of="1"]')

    shown = page.locator("pre[data-transcript]")
    expect(shown).to_contain_text(f"stray {html}")
    expect(shown).to_contain_text(f"said {html}")
    expect(shown).to_contain_text("── finished: ok")
    expect(shown.locator("img, b")).to_have_count(0)
    assert page.title() != "owned"

    page.click('button[data-format="raw"]')

    expect(shown).to_contain_text('"type":"result"')
    expect(shown).to_contain_text(f"stray {html}")


def test_a_running_iteration_s_transcript_follows_the_agent_to_its_last_line(
    page, server, new_workdir, tmp_path: Path
):
    go_on = tmp_path / "go-on"
    waits = {
        **DONE,
        "garbage": ["first words"],
        "bash": [f"until [ -e {go_on} ]; do sleep 0.05; done"],
        "text": "last words\n<promise>COMPLETE</promise>",
    }
    loop = start(server, new_workdir(), waits)
    open_dashboard(page, server, f"/loops/{loop['id']}")
    expect(page.locator('tr[data-iteration="1"] .badge')).to_have_text("running")
    page.click('button[data-transcript-of="1"]')

    shown = page.locator("pre[data-transcript]")
    expect(shown).to_contain_text("first words")
    expect(page.locator(".transcript-view")).to_contain_text("following")
    go_on.touch()

    expect(shown).to_contain_text("last words")
    expect(shown).to_contain_text("── finished: ok")
    expect(page.locator(".transcript-view")).not_to_contain_text("following")
