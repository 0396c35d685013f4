"""`ralphctl status --json` lists each active loop's pending messages: told (`ralphctl tell`)
and not given to its agent yet."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from typer.testing import CliRunner

from ralphctl.cli.app import app
from ralphctl.domain.config import LoopConfig
from ralphctl.domain.states import LoopStatus
from ralphctl.engine.loops import new_loop
from ralphctl.engine.steering import tell
from ralphctl.store.repository import Store


def test_each_active_loop_lists_its_pending_messages_and_an_ended_one_none(tmp_path: Path):
    database = str(tmp_path / "ralphctl.db")
    with Store.open(database) as store:
        waiting = store.create_loop(new_loop("Fix it.", tmp_path, LoopConfig(), name="waiting"))
        told = tell(store, waiting, "Use tabs, not spaces.", "ana")
        ended = new_loop("Done.", tmp_path, LoopConfig(), name="ended")
        ended = store.create_loop(replace(ended, status=LoopStatus.STOPPED))
        tell(store, ended, "Too late.", "bo")

    result = CliRunner().invoke(app, ["status", "--json", "--db", database])

    assert result.exit_code == 0, result.output
    pending = {loop["name"]: loop["pending_messages"] for loop in json.loads(result.output)}
    assert pending["ended"] == []
    [message] = pending["waiting"]
    assert (message["seq"], message["text"], message["sender"]) == (
        told.seq,
        "Use tabs, not spaces.",
        "ana",
    )
