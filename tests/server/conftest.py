"""An app over a fresh store with a real loop manager, and loops of the scripted agent."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from ralphctl.engine.manager import LoopManager
from ralphctl.server.app import create_app
from ralphctl.store.repository import Store

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
FAST = {
    "cooldown": 0,
    "checkpoint_interval": 0,
    "error_backoff_cap": 0,
    "no_progress_threshold": False,
}
DONE = {"text": "All done.\n<promise>COMPLETE</promise>", "cost_usd": 0.01}
WAIT_S = 60.0


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user config file, and a server dir of the test's own."""
    monkeypatch.setenv("RALPHCTL_CONFIG", str(tmp_path / "no-user-config.toml"))
    monkeypatch.setenv("RALPHCTL_SERVER_DIR", str(tmp_path / "server"))


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(str(tmp_path / "ralphctl.db")) as store:
        yield store


@pytest.fixture
def client(sqlite_store: Store) -> Iterator[TestClient]:
    """A client sending the token, of an app whose manager has started (SQLite)."""
    manager = LoopManager(sqlite_store, max_concurrent=2)
    with TestClient(create_app(sqlite_store, manager, TOKEN), headers=AUTH) as test_client:
        yield test_client


@pytest.fixture
def any_client(store: Store) -> Iterator[TestClient]:
    """Like ``client``, once on SQLite and once on PostgreSQL."""
    with TestClient(create_app(store, LoopManager(store), TOKEN), headers=AUTH) as test_client:
        yield test_client


@pytest.fixture
def new_workdir(tmp_path: Path) -> Callable[[], Path]:
    def make() -> Path:
        path = tmp_path / f"work-{uuid.uuid4().hex[:6]}"
        path.mkdir()
        return path

    return make


def loop_body(workdir: Path, *steps: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A POST /api/loops body: the scripted agent plays ``steps`` (the last one repeats)."""
    script = workdir.parent / f"script-{uuid.uuid4().hex[:6]}.json"
    script.write_text(json.dumps({"steps": list(steps)}))
    return {
        "task": "Do the work.",
        "workdir": str(workdir),
        "agent": "scripted",
        "script": str(script),
        "config": dict(FAST),
        **fields,
    }


def wait_until(condition: Callable[[], Any], what: str = "the condition") -> Any:
    """Poll ``condition`` until it returns something truthy; fail after WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    while not (result := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return result
