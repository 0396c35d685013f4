"""What `ralphctl plugin install --agent opencode` writes, run by the REAL pinned OpenCode CLI
(1.18.33) against the mock: in `opencode serve` (whose sessions outlive their idle, as in the
TUI) the installed `/ralph-loop` command arms a loop and the installed plugin keeps the session
going through ralphctl's hook until the marker, or until max_iterations; `opencode run` exits
at its session's first idle, so the plugin's follow-up is never answered there.

The installed hook is wrapped by a recorder that keeps every input the plugin sends.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ralphctl.hook.arming import arm
from ralphctl.hook.paths import tracker_path
from ralphctl.hook.tracker import load
from ralphctl.plugin.installer import install
from ralphctl.plugin.layout import Interpreter, hook_main
from ralphctl.plugin.scopes import Scope
from ralphctl.plugin.targets import target
from tests.agents.opencode.harness import (
    OpencodeServer,
    RealOpencode,
    opencode_server,
    real_opencode_session,
)
from tests.mockapi import RecordedRequest, Reply

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(150)]

DONE = "The notes are written.\n<promise>COMPLETE</promise>"
#: Runs the real hook with the same stdin and arguments, after appending stdin to INPUTS.
RECORDER = """\
import subprocess, sys
raw = sys.stdin.buffer.read()
with open({inputs!r}, "ab") as log:
    log.write(raw.replace(b"\\n", b" ") + b"\\n")
done = subprocess.run([sys.executable, "-I", "-S", {hook!r}, *sys.argv[1:]], input=raw,
                      stdout=subprocess.PIPE)
sys.stdout.buffer.write(done.stdout)
"""


@pytest.fixture
def opencode(opencode_bin: Path, tmp_path: Path, monkeypatch) -> Iterator[RealOpencode]:
    """The CLI and mock in a fresh home; ``HOME`` and the config dir are the CLI's."""
    with real_opencode_session(opencode_bin, tmp_path) as session:
        monkeypatch.setenv("HOME", str(session.home))
        monkeypatch.setenv("XDG_CONFIG_HOME", session.env["XDG_CONFIG_HOME"])
        yield session


def installed(opencode: RealOpencode, scope: Scope = Scope.USER) -> RealOpencode:
    """ralphctl's plugin and commands installed at ``scope``, its hook wrapped by RECORDER."""
    recorder = opencode.home.parent / "record_hook.py"
    recorder.write_text(RECORDER.format(inputs=str(inputs_file(opencode)), hook=hook_main()))
    interpreter = Interpreter(sys.executable, hook_file=str(recorder))
    install(target("opencode").plan(scope, opencode.project, interpreter, "test"))
    return opencode


def inputs_file(opencode: RealOpencode) -> Path:
    return opencode.home.parent / "hook-inputs.jsonl"


def hook_inputs(opencode: RealOpencode) -> list[dict[str, object]]:
    path = inputs_file(opencode)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def quoting_the_token(text: str):
    """A turn replying ``text`` plus the arming token of the last user message (how a
    session without a transcript claims its pending loop)."""

    def reply(request: RecordedRequest) -> Reply:
        users = [m for m in request.body["messages"] if m["role"] == "user"]
        token = re.search(r"token ([0-9a-f]+)", json.dumps(users[-1]))
        return Reply(f"{text} Token {token[1] if token else 'none'}.")

    return reply


def ended_tracker(opencode: RealOpencode, session: str) -> dict[str, object]:
    """The session's tracker once the loop ended (waits up to a minute), then a moment more
    to be sure no further prompt follows."""
    path = tracker_path(str(opencode.project), session)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        tracker = load(path) if Path(path).exists() else None
        if tracker is not None and tracker.fields.get("active") is False:
            time.sleep(2)
            return dict(tracker.fields)
        time.sleep(0.3)
    raise AssertionError(f"the loop of {session} did not end; hook inputs: {hook_inputs(opencode)}")


def user_texts(opencode: RealOpencode) -> list[str]:
    """The last user message of each main request."""
    return [
        json.dumps([m for m in r.body["messages"] if m["role"] == "user"][-1])
        for r in opencode.server.main_requests
    ]


def test_the_installed_command_arms_a_loop_the_plugin_runs_to_the_marker(opencode):
    installed(opencode, Scope.USER)
    opencode.server.set_script(
        quoting_the_token("Working (1)."), Reply("Working (2)."), Reply(DONE)
    )
    with opencode_server(opencode) as server:
        session = server.new_session()
        server.call(
            "POST",
            f"/session/{session}/command",
            {"command": "ralph-loop", "arguments": "Write the notes --max-iterations 5"},
        )
        fields = ended_tracker(opencode, session)

    assert (fields["ended_reason"], fields["iteration"]) == ("completion", 3)
    assert len(opencode.server.main_requests) == 3
    assert "Ralph loop armed (pending" in user_texts(opencode)[0]
    assert all("Continue working on the task" in text for text in user_texts(opencode)[1:])
    first, *later = hook_inputs(opencode)
    assert first == {
        "hook_event_name": "session.idle",
        "session_id": session,
        "cwd": str(opencode.project),
        "last_assistant_message": first["last_assistant_message"],
        "status": "completed",
        "stop_hook_active": False,
    }
    assert str(first["last_assistant_message"]).startswith("Working (1). Token ")
    assert [i["stop_hook_active"] for i in later] == [True, True]
    assert later[-1]["last_assistant_message"] == DONE


def test_a_project_install_keeps_a_session_armed_for_it_going_to_max_iterations(opencode):
    installed(opencode, Scope.PROJECT)
    opencode.server.set_script(*[Reply(f"Working ({n}).") for n in range(1, 5)])
    with opencode_server(opencode) as server:
        session = server.new_session()
        arm(str(opencode.project), "Write the notes", session_id=session, max_iterations=2)
        prompt(server, session, "Write the notes.")
        fields = ended_tracker(opencode, session)

    assert (fields["ended_reason"], fields["iteration"]) == ("max_iterations", 2)
    assert len(opencode.server.main_requests) == 2
    assert len(hook_inputs(opencode)) == 2


def test_opencode_run_exits_before_the_plugins_follow_up_is_answered(opencode):
    """Why `ralphctl run --mode hook --agent opencode` is refused (NO_HOOK_MODE_REASON)."""
    installed(opencode)
    opencode.server.set_script(quoting_the_token("Working (1)."), Reply("Working (2)."))

    run = opencode.run("Write the notes --max-iterations 5", "--command", "ralph-loop", timeout=90)

    assert run.exit_code == 0, run.stderr
    assert run.of_type("text")[0]["part"]["text"].startswith("Working (1).")
    time.sleep(2)
    assert len(opencode.server.main_requests) == 1


def prompt(server: OpencodeServer, session: str, text: str) -> None:
    body = {"parts": [{"type": "text", "text": text}]}
    server.call("POST", f"/session/{session}/prompt_async", body)
