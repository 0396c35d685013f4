"""The Stop hook as Claude Code runs it: a process, one JSON object in, at most one out."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from ralphctl.hook.arming import arm
from tests.hook.helpers import (
    HOOK_FILE,
    SESSION,
    answer,
    body_of,
    decision,
    fields_of,
    hook_env,
    run_hook,
    session_tracker,
    stop_event,
)

#: Modules the hot path must never import (the CLI's, the store's, third-party ones).
HEAVY = ("typer", "rich", "pydantic", "sqlalchemy", "alembic", "psycopg", "orjson", "platformdirs")
ALLOWED_RALPHCTL = re.compile(
    r"ralphctl(\.atomic|\.hook(\.\w+)?"
    r"|\.domain(\.(markers|stoprules|defaults|value|workdirs|money|numbers))?)?"
)
#: Standard modules that cost more than the decision itself (``json`` loads ``re``, which
#: loads ``enum`` and ``functools``): the hook uses ``_json`` and ``str`` methods instead.
SLOW_STDLIB = {"json", "re", "enum", "functools", "collections", "dataclasses", "typing"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def armed(project: Path) -> Path:
    arm(
        str(project),
        "Fix the flaky tests",
        session_id=SESSION,
        max_iterations=3,
        completion_signal="<promise>ALL GREEN</promise>",
    )
    return session_tracker(project)


def test_without_a_loop_the_stop_passes_through_silently(project):
    done = run_hook(stop_event(), hook_env(project))
    assert decision(done) is None
    assert done.stderr == b""
    assert not (project / ".ralph").exists()


def test_an_armed_loop_blocks_counts_and_finally_stops_at_its_bound(project, armed):
    env = hook_env(project)
    first = decision(run_hook(stop_event(), env))
    assert first is not None
    assert first["decision"] == "block"
    assert first["systemMessage"] == "Ralph iteration 2/3"
    assert "Continue working on the task" in first["reason"]
    assert str(armed) in first["reason"]
    assert answer(run_hook(stop_event(stop_hook_active=True), env))["decision"] == "block"
    last = decision(run_hook(stop_event(stop_hook_active=True), env))
    assert last == {"systemMessage": "Ralph loop stopped: max iterations (3) reached."}
    assert fields_of(armed)["active"] is False
    assert decision(run_hook(stop_event(), env)) is None  # inactive: passthrough


def test_the_promise_completes_and_the_agents_tracker_notes_survive(project, armed):
    notes = body_of(armed) + "\n- [x] fixed test_login\n"
    text = armed.read_text().replace(body_of(armed), notes)
    armed.write_text(text)
    done = run_hook(stop_event(text="All green.\n<promise>ALL GREEN</promise>"), hook_env(project))
    assert decision(done) == {"systemMessage": "Ralph loop complete at iteration 1/3."}
    assert fields_of(armed)["ended_reason"] == "completion"
    assert body_of(armed) == notes


def test_the_project_comes_from_the_environment_not_the_agents_cwd(project, armed):
    """run_hook runs in /, and the Stop input's cwd is a subdirectory the agent cd-ed into."""
    event = stop_event(cwd=str(project / "src"))
    assert answer(run_hook(event, hook_env(project)))["decision"] == "block"


def test_without_claude_project_dir_the_stdin_cwd_is_the_project(project, armed):
    env = hook_env(project)
    del env["CLAUDE_PROJECT_DIR"], env["CLAUDE_CODE_SESSION_ID"]
    assert answer(run_hook(stop_event(cwd=str(project)), env))["decision"] == "block"


def test_an_old_cli_without_the_session_env_var_or_new_fields_is_understood(project, armed):
    """2.1.100 sends seven fields and no CLAUDE_CODE_SESSION_ID."""
    old = json.dumps(
        {
            "session_id": SESSION,
            "transcript_path": "/nonexistent.jsonl",
            "cwd": str(project),
            "permission_mode": "default",
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": "working",
        }
    ).encode()
    assert answer(run_hook(old, hook_env(project, session=None)))["decision"] == "block"


def test_unknown_fields_and_wrong_types_are_tolerated(project, armed):
    event = stop_event(future_field={"x": [1, 2]}, stop_hook_active="yes", effort=None)
    assert answer(run_hook(event, hook_env(project)))["decision"] == "block"


def test_other_events_pass_through(project, armed):
    event = stop_event(hook_event_name="SubagentStop")
    assert decision(run_hook(event, hook_env(project))) is None
    assert fields_of(armed)["iteration"] == 1


@pytest.mark.parametrize(
    ("output_format", "word"), [("claude", "block"), ("codex", "block"), ("gemini", "deny")]
)
def test_each_agents_output_format(project, armed, output_format, word):
    done = run_hook(stop_event(), hook_env(project), "--format", output_format)
    printed = decision(done)
    assert printed is not None
    assert printed["decision"] == word
    assert printed["reason"].strip()


def test_gemini_after_agent_input_uses_prompt_response(project, armed):
    event = stop_event(
        text=None, hook_event_name="AfterAgent", prompt_response="<promise>ALL GREEN</promise>"
    )
    assert answer(run_hook(event, hook_env(project), "--format=gemini"))["systemMessage"]
    assert fields_of(armed)["ended_reason"] == "completion"


# -- fail open ----------------------------------------------------------------------------


def assert_failed_open(done, project: Path, words: str) -> None:
    assert decision(done) is None
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("ralphctl hook: ")
    assert words in lines[0]
    log = (project / ".ralph" / "hook.log").read_text()
    assert words in log


@pytest.mark.parametrize(
    ("stdin", "words"),
    [
        (b"", "stdin is empty"),
        (b"   \n", "stdin is empty"),
        (b"{not json", "not JSON"),
        (b"\xff\xfe\x00garbage", "not JSON"),
        (b"[1, 2, 3]", "not an object"),
        (b'"a string"', "not an object"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
        (b"{}" + b" " * (16 * 1024 * 1024), "larger than"),
    ],
    ids=["empty", "blank", "not-json", "binary", "list", "string", "deep", "huge"],
)
def test_bad_stdin_allows_the_stop_with_one_warning(project, armed, stdin, words):
    assert_failed_open(run_hook(stdin, hook_env(project)), project, words)
    assert fields_of(armed)["iteration"] == 1


def test_no_usable_session_id_allows_the_stop(project, armed):
    env = hook_env(project, session=None)
    done = run_hook(stop_event(session="../../etc/passwd"), env)
    assert_failed_open(done, project, "no valid session_id")


def test_a_session_id_with_path_tricks_never_becomes_a_path(project, armed):
    env = hook_env(project, session="../escape")
    done = run_hook(stop_event(session="../escape", cwd=str(project)), env)
    assert decision(done) is None
    assert not (project / ".ralph" / "escape").exists()
    assert not (project.parent / "escape").exists()


def test_an_unparseable_tracker_is_left_alone_and_the_stop_allowed(project, armed):
    armed.write_text("---\niteration: [1, 2]\n---\nnotes\n")
    assert_failed_open(run_hook(stop_event(), hook_env(project)), project, "unsupported YAML")
    assert armed.read_text() == "---\niteration: [1, 2]\n---\nnotes\n"


def test_a_tracker_with_corrupt_values_is_deactivated_not_deleted(project, armed):
    from tests.hook.helpers import edit_fields

    body = body_of(armed)
    edit_fields(armed, iteration="three")
    assert_failed_open(run_hook(stop_event(), hook_env(project)), project, "corrupt")
    fields = fields_of(armed)
    assert fields["active"] is False
    assert fields["ended_reason"] == "corrupt"
    assert body_of(armed) == body


@pytest.mark.parametrize(
    "damage",
    [
        lambda path: path.write_bytes(b"---\nactive: true\n---\n\xff\xfe"),
        lambda path: (path.unlink(), path.mkdir()),
    ],
    ids=["not-utf8", "a-directory"],
)
def test_an_unreadable_tracker_allows_the_stop(project, armed, damage):
    damage(armed)
    done = run_hook(stop_event(), hook_env(project))
    assert decision(done) is None
    assert done.stderr.decode().startswith("ralphctl hook: ")


@pytest.mark.parametrize("args", [("--format", "xml"), ("--loud",), ("--format",)])
def test_bad_arguments_allow_the_stop(project, armed, args):
    done = run_hook(stop_event(), hook_env(project), *args)
    assert decision(done) is None
    assert b"ralphctl hook: " in done.stderr
    assert fields_of(armed)["iteration"] == 1


def test_a_lock_held_too_long_allows_the_stop(project, armed, monkeypatch):
    from ralphctl.hook import handler, lock
    from ralphctl.hook.paths import lock_for

    monkeypatch.setattr(lock, "LOCK_TIMEOUT_S", 0.2)
    with lock.FileLock(lock_for(str(armed))):
        line, record = handler.respond(
            stop_event(), ["--format", "claude"], hook_env(project), 1.8e9
        )
    assert (line, record) == (None, None)
    assert "stayed locked" in (project / ".ralph" / "hook.log").read_text()


def test_the_log_is_bounded(project, monkeypatch):
    from ralphctl.hook import log

    monkeypatch.setattr(log, "LOG_LIMIT_BYTES", 1000)
    (project / ".ralph").mkdir()
    for n in range(100):
        log.warn(f"warning number {n}", str(project))
    logs = project / ".ralph"
    assert (logs / "hook.log").stat().st_size <= 1000 + 200
    assert (logs / "hook.log.1").stat().st_size <= 1000 + 200
    assert "warning number 99" in (logs / "hook.log").read_text()


# -- the import path ----------------------------------------------------------------------


def imported_modules(stdin: bytes, env: dict[str, str]) -> set[str]:
    """What the hook imports, started as the plugin starts it (no ``site``)."""
    command = [sys.executable, "-X", "importtime", "-I", "-S", str(HOOK_FILE), "stop"]
    done = run_hook(stdin, env, command=command)
    assert done.returncode == 0
    names = re.findall(r"^import time:.*\|\s*(\S+)$", done.stderr.decode(), re.MULTILINE)
    return {name.strip() for name in names}


def test_the_hot_path_imports_only_the_stdlib_the_brain_and_the_hook(project, armed):
    for stdin in (stop_event(), stop_event(text="<promise>ALL GREEN</promise>")):
        modules = imported_modules(stdin, hook_env(project))
        assert "ralphctl.domain.markers" in modules  # the decision really ran
        assert not [m for m in modules if m.split(".")[0] in HEAVY]
        ours = [m for m in modules if m.startswith("ralphctl")]
        assert all(ALLOWED_RALPHCTL.fullmatch(m) for m in ours), ours
        assert "ralphctl.hook.state" in modules
        assert not modules & SLOW_STDLIB, modules & SLOW_STDLIB


def test_a_stop_without_a_loop_imports_almost_nothing(project):
    modules = imported_modules(stop_event(), hook_env(project))
    assert not modules & {"json", "re", "dataclasses", "ralphctl.domain.markers", "fcntl"}


def test_a_runner_recording_cost_in_the_tracker_enforces_the_cost_budget(project):
    from ralphctl.hook.tracker import update_fields

    arm(str(project), "Fix it", session_id=SESSION, max_cost_usd=1.0)
    tracker = session_tracker(project)
    assert update_fields(str(tracker), {"cost_usd": 1.25, "tokens": 5000})
    printed = answer(run_hook(stop_event(), hook_env(project)))
    assert "max_cost" in printed["systemMessage"]
    assert fields_of(tracker)["ended_reason"] == "max_cost"
    assert not update_fields(str(project / "missing.md"), {"cost_usd": 1.0})
