"""Steering a same-session loop armed by the plugin (no runner): `tell` leaves the message in
the session's inbox, the next Stop that blocks carries it in its continue message, once."""

from __future__ import annotations

from pathlib import Path

from ralphctl.domain.steering import HEADING
from ralphctl.engine.steering import messages_json, tell
from ralphctl.hook.arming import arm
from ralphctl.hook.inbox import INBOX_NAME
from ralphctl.store.repository import Store
from tests.cli.loop_shapes import loop_id_of
from tests.hook.helpers import answer, hook_env, run_hook, stop_event

SESSION = "5e55a1d0-0000-4000-8000-00000000beef"


def armed_loop(workdir: Path, store_url: str) -> tuple[str, dict[str, str]]:
    """A plugin loop with one Stop recorded (so the store knows it); its id and hook env."""
    armed = arm(str(workdir), "Fix the parser.", session_id=SESSION)
    env = hook_env(workdir, SESSION, RALPHCTL_HOOK_STORE="inline", RALPHCTL_DB=store_url)
    answer(run_hook(stop_event(SESSION, "Still working."), env))
    return loop_id_of(armed.path), env


def test_a_message_told_to_a_plugin_loop_goes_into_the_next_continue_message_once(
    db: Store, workdir: Path
):
    loop_id, env = armed_loop(workdir, str(workdir.parent / "ralphctl.db"))
    told = tell(db, db.get_loop(loop_id), "Skip the docs for now.", "ana")

    first = answer(run_hook(stop_event(SESSION, "Still working."), env))
    second = answer(run_hook(stop_event(SESSION, "Still working."), env))

    assert HEADING in first["reason"]
    assert "- Skip the docs for now." in first["reason"]
    assert "Skip the docs" not in second["reason"]
    [message] = messages_json(db, loop_id)
    assert (message["seq"], message["delivered"], message["iteration"]) == (told.seq, True, 3)


def test_a_corrupt_inbox_never_stops_the_hook_from_deciding(db: Store, workdir: Path):
    loop_id, env = armed_loop(workdir, str(workdir.parent / "ralphctl.db"))
    inbox = workdir / ".ralph" / "sessions" / SESSION / INBOX_NAME
    inbox.write_text("{not json")

    done = run_hook(stop_event(SESSION, "Still working."), env)

    assert answer(done)["decision"] == "block"
    assert b"corrupt" in done.stderr
    assert messages_json(db, loop_id) == []
