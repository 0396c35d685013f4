"""``GET /api/notifications`` and ``ralphctl notify ls|test`` show deliveries and outcomes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from ralphctl.cli.app import app as cli
from ralphctl.engine.manager import LoopManager
from ralphctl.notify.config import Webhook
from ralphctl.server.app import create_app
from ralphctl.store.records import LoopRecord
from ralphctl.store.repository import Store
from tests.notify.conftest import deliverer
from tests.notify.receiver import receiver

TOKEN = "t" * 32


@pytest.fixture
def delivered(store: Store, loop: LoopRecord) -> Store:
    """One delivered notification and one failed after a 500."""
    with receiver(200, 500) as hook_server:
        hook = Webhook(hook_server.url, max_attempts=1)
        store.append_event(loop.id, "completed", {})
        store.append_event(loop.id, "failed", {})
        deliverer(store, hook).run_once(store)
    return store


def test_the_api_lists_notifications_newest_first_with_their_outcomes(
    delivered: Store, loop: LoopRecord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RALPHCTL_CONFIG", str(tmp_path / "none.toml"))
    app = create_app(delivered, LoopManager(delivered), TOKEN)
    with TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        everything = client.get("/api/notifications").json()
        failed = client.get("/api/notifications", params={"status": "failed"}).json()
        unknown = client.get("/api/notifications", params={"loop_id": "nope-nope"})
        anonymous = client.get("/api/notifications", headers={"Authorization": ""})

    assert [(n["event"], n["status"]) for n in everything] == [
        ("failed", "failed"),
        ("completed", "delivered"),
    ]
    assert everything[0]["outcomes"][0]["detail"] == "HTTP 500 Internal Server Error"
    assert everything[1]["payload"]["loop"]["id"] == loop.id
    assert [n["event"] for n in failed] == ["failed"]
    assert unknown.status_code == 404
    assert anonymous.status_code == 401


def test_notify_ls_prints_each_delivery_as_json(delivered: Store) -> None:
    result = CliRunner().invoke(cli, ["notify", "ls", "--json", "--db", delivered.url])

    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert [(n["event"], n["status"], n["attempts"]) for n in shown] == [
        ("failed", "failed", 1),
        ("completed", "delivered", 1),
    ]


def test_notify_test_sends_to_each_channel_and_says_how_it_went(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RALPHCTL_CONFIG", str(tmp_path / "none.toml"))
    out = tmp_path / "got.json"
    with receiver(200) as hook_server:
        (tmp_path / "ralphctl.toml").write_text(
            f'[[notify.webhooks]]\nurl = "{hook_server.url}"\nsecret = "x"\n\n'
            f'[[notify.commands]]\ncommand = "cat > {out}"\n'
        )
        result = CliRunner().invoke(cli, ["notify", "test", "--workdir", str(tmp_path)])
        only = CliRunner().invoke(
            cli, ["notify", "test", "--workdir", str(tmp_path), "--channel", "command"]
        )
        missing = CliRunner().invoke(
            cli, ["notify", "test", "--workdir", str(tmp_path), "--channel", "desktop"]
        )

    assert result.exit_code == 0, result.output
    assert f"ok webhook:{hook_server.url}: HTTP 200" in result.output
    assert json.loads(out.read_text())["event"] == "test"
    assert len(hook_server.accepted) == 1
    assert hook_server.accepted[0].headers["X-Ralphctl-Event"] == "test"
    assert only.exit_code == 0
    assert "webhook" not in only.output
    assert missing.exit_code == 2
    assert "no channel 'desktop'" in missing.output
