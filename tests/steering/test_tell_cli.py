"""`ralphctl tell` on the database itself, and what `history` shows of the messages."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from typer.testing import CliRunner

from ralphctl.cli.app import app
from ralphctl.domain.states import LoopStatus
from ralphctl.engine.steering import pending_messages
from ralphctl.store.repository import Store
from tests.engine.test_runner import new_loop


def ralphctl(db_path: Path, *args: str, stdin: str | None = None):
    return CliRunner().invoke(app, [*args, "--db", str(db_path)], input=stdin)


def test_tell_stores_a_pending_message_and_history_shows_it(db: Store, workdir: Path):
    loop, _ = new_loop(db, workdir, [])
    database = workdir.parent / "ralphctl.db"

    told = ralphctl(database, "tell", loop.id[:6], "Use tabs.", "--json")

    assert told.exit_code == 0, told.output
    data = json.loads(told.output)
    assert (data["loop_id"], data["text"]) == (loop.id, "Use tabs.")
    assert [m.text for m in pending_messages(db, loop.id)] == ["Use tabs."]
    shown = ralphctl(database, "history", loop.id)
    assert f"message {data['seq']} from" in shown.output
    assert "(pending): Use tabs." in shown.output
    history = json.loads(ralphctl(database, "history", loop.id, "--json").output)
    assert [(m["text"], m["delivered"]) for m in history["messages"]] == [("Use tabs.", False)]


def test_a_dash_reads_the_message_from_stdin(db: Store, workdir: Path):
    loop, _ = new_loop(db, workdir, [])

    told = ralphctl(workdir.parent / "ralphctl.db", "tell", loop.id, "-", stdin="From a pipe.\n")

    assert told.exit_code == 0, told.output
    assert [m.text for m in pending_messages(db, loop.id)] == ["From a pipe."]


def test_a_completed_loop_or_an_empty_message_is_a_usage_error(db: Store, workdir: Path):
    loop, _ = new_loop(db, workdir, [])
    database = workdir.parent / "ralphctl.db"

    empty = ralphctl(database, "tell", loop.id, "   ")
    db.save_loop(replace(loop, status=LoopStatus.COMPLETED))
    late = ralphctl(database, "tell", loop.id, "More.")

    assert empty.exit_code == 2
    assert "empty" in empty.output
    assert late.exit_code == 2
    assert "has completed" in late.output
