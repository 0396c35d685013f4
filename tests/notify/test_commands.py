"""The command channel gets the event as JSON on stdin; the desktop one uses notify-send."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from ralphctl.notify import outbox
from ralphctl.notify.channels import send
from ralphctl.notify.config import Command, Desktop
from ralphctl.store.records import LoopRecord
from ralphctl.store.repository import Store
from tests.notify.conftest import deliverer


def test_a_command_gets_the_event_json_on_its_stdin(
    store: Store, loop: LoopRecord, tmp_path: Path
) -> None:
    out = tmp_path / "got.json"
    command = Command(f"cat > {out}")
    stored = store.append_event(loop.id, "blocked", {"reason": "needs a key"})

    deliverer(store, command).run_once(store)

    got = json.loads(out.read_text())
    assert (got["event"], got["seq"], got["data"]) == (
        "blocked",
        stored.seq,
        {"reason": "needs a key"},
    )
    (notification,) = outbox.recent(store)
    assert notification.status == "delivered"
    assert notification.outcomes[0]["detail"] == "exit status 0"


def test_a_failing_command_records_its_exit_status_and_last_words() -> None:
    outcome = send(Command("echo 'no disk' >&2; exit 4"), b"{}", event="failed", delivery="1")

    assert not outcome.ok
    assert outcome.detail == "exit status 4: no disk"


def test_a_command_that_hangs_is_killed_at_its_timeout() -> None:
    outcome = send(Command("sleep 30", timeout_s=0.3), b"{}", event="failed", delivery="1")

    assert not outcome.ok
    assert outcome.detail == "timed out after 0.3s (killed)"
    assert outcome.duration_ms < 5000


def test_desktop_notifications_are_skipped_where_notify_send_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))

    outcome = send(Desktop(), b"{}", event="completed", delivery="1")

    assert outcome.ok
    assert outcome.skipped
    assert outcome.detail == "skipped: notify-send not found"


def test_desktop_notifications_call_notify_send_with_a_line_for_a_person(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    said = tmp_path / "said"
    fake = tmp_path / "notify-send"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {said}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    body = json.dumps({"event": "parked", "loop": {"name": "nightly"}, "data": {"until": "13:00"}})

    outcome = send(Desktop(), body.encode(), event="parked", delivery="1")

    assert outcome.ok
    assert not outcome.skipped
    assert said.read_text().splitlines() == [
        "--app-name=ralphctl",
        "ralphctl: parked",
        "loop nightly: parked until 13:00",
    ]
