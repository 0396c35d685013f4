"""End to end with the real Claude Code CLI (2.1.330) against the mock Messages API.

The Stop hook is registered in the project's ``.claude/settings.json`` exactly as a user (or
the plugin) would, with an absolute interpreter path: no PATH lookup, no execute bit.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

import ralphctl.hook
from ralphctl.hook.arming import arm
from ralphctl.hook.stop import CAP_NOTE
from ralphctl.store.repository import Store
from tests.hook.helpers import fields_of, session_tracker
from tests.mockapi import Reply, ToolCall
from tests.realcli.harness import RealClaude

pytestmark = pytest.mark.real_cli

SESSION = "5e55a1d0-1111-4000-8000-00000000c0de"
MODULE_HOOK = [sys.executable, "-m", "ralphctl.hook", "stop"]
FILE_HOOK = [
    sys.executable,
    "-I",
    "-S",
    str(Path(ralphctl.hook.__file__).with_name("__main__.py")),
    "stop",
]
NO_HISTORY = {"RALPHCTL_HOOK_STORE": "off"}


def install_hook(claude: RealClaude, command: list[str]) -> None:
    settings = claude.project / ".claude" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    hook = {"type": "command", "command": " ".join(map(shlex.quote, command))}
    settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [hook]}]}}))


def arm_session(claude: RealClaude, max_iterations: int, promise: str = "DONE") -> Path:
    signal = f"<promise>{promise}</promise>"
    armed = arm(
        str(claude.project),
        "Write the notes",
        session_id=SESSION,
        max_iterations=max_iterations,
        completion_signal=signal,
    )
    return Path(armed.path)


def feedback(claude: RealClaude) -> list[str]:
    """The Stop-hook reasons the CLI sent back to the model, in order."""
    texts = [t for request in claude.server.main_requests for t in request.user_texts()]
    return [t for t in dict.fromkeys(texts) if t.startswith("Stop hook feedback:\n")]


def hook_outputs(run) -> list[str]:
    return [e["stdout"] for e in run.of_type("system", "hook_response")]


@pytest.mark.parametrize("command", [MODULE_HOOK, FILE_HOOK], ids=["python-m", "python-I-S-file"])
def test_a_loop_completes_on_the_promise_after_tool_calls(real_claude, tmp_path, command):
    install_hook(real_claude, command)
    tracker = arm_session(real_claude, max_iterations=5)
    db = tmp_path / "history.db"
    real_claude.server.set_script(
        ToolCall("Write", {"file_path": "a.txt", "content": "a\n"}, text_before="First file."),
        Reply("Wrote a.txt."),
        ToolCall("Write", {"file_path": "b.txt", "content": "b\n"}),
        Reply("Wrote b.txt."),
        Reply("Both files are written.\n<promise>DONE</promise>"),
    )
    run = real_claude.run(
        "Write the notes.",
        "--session-id",
        SESSION,
        "--permission-mode",
        "acceptEdits",
        "--include-hook-events",
        env={"RALPHCTL_HOOK_STORE": "inline", "RALPHCTL_DB": str(db)},
    )
    assert run.exit_code == 0, run.stderr
    assert run.result["result"].endswith("<promise>DONE</promise>")
    assert (real_claude.project / "a.txt").exists()
    assert (real_claude.project / "b.txt").exists()
    fields = fields_of(tracker)
    assert (fields["active"], fields["ended_reason"], fields["iteration"]) == (
        False,
        "completion",
        3,
    )
    reasons = feedback(real_claude)
    assert len(reasons) == 2
    assert all("Continue working on the task" in r for r in reasons)
    assert "(Ralph iteration 3/5)" in reasons[-1]
    assert json.loads(hook_outputs(run)[-1]) == {
        "systemMessage": "Ralph loop complete at iteration 3/5."
    }
    assert not real_claude.server.exhausted_requests
    with Store.open(str(db)) as store:
        (loop,) = store.list_loops()
        assert (loop.mode, str(loop.status), loop.iteration) == ("hook", "completed", 3)
        assert [i.completion_signal_found for i in store.iterations(loop.id)] == [
            False,
            False,
            True,
        ]


def test_a_loop_that_reaches_max_iterations_stops(real_claude):
    install_hook(real_claude, MODULE_HOOK)
    tracker = arm_session(real_claude, max_iterations=3)
    real_claude.server.set_script(*[Reply(f"Still working ({n}).") for n in range(1, 4)])
    run = real_claude.run("Write the notes.", "--session-id", SESSION, env=NO_HISTORY)
    assert run.exit_code == 0, run.stderr
    assert run.result["result"] == "Still working (3)."
    assert fields_of(tracker)["ended_reason"] == "max_iterations"
    assert len(real_claude.server.main_requests) == 3
    assert not real_claude.server.exhausted_requests


def test_with_the_block_cap_raised_text_only_blocks_reach_the_loops_own_bound(real_claude):
    install_hook(real_claude, FILE_HOOK)
    tracker = arm_session(real_claude, max_iterations=12)
    real_claude.server.set_script(*[Reply(f"Thinking ({n}).") for n in range(1, 13)])
    env = NO_HISTORY | {"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "30"}
    run = real_claude.run("Write the notes.", "--session-id", SESSION, env=env)
    assert run.exit_code == 0, run.stderr
    fields = fields_of(tracker)
    assert (fields["ended_reason"], fields["iteration"], fields["cap_overrides"]) == (
        "max_iterations",
        12,
        0,
    )
    assert len(real_claude.server.main_requests) == 12


def test_without_it_the_cap_ends_the_turn_and_the_next_stop_reports_it(real_claude):
    install_hook(real_claude, FILE_HOOK)
    tracker = arm_session(real_claude, max_iterations=15)
    real_claude.server.set_script(*[Reply(f"Thinking ({n}).") for n in range(1, 40)])
    first = real_claude.run("Write the notes.", "--session-id", SESSION, env=NO_HISTORY)
    assert first.exit_code == 0, first.stderr
    # The CLI honoured 8 blocks and overrode the 9th: 9 turns, and the hook counted 9 blocks.
    assert len(real_claude.server.main_requests) == 9
    capped = fields_of(tracker)
    assert (capped["active"], capped["last_decision"], capped["iteration"]) == (True, "block", 10)

    second = real_claude.run("Go on.", "--resume", SESSION, "--include-hook-events", env=NO_HISTORY)
    assert second.exit_code == 0, second.stderr
    first_answer = json.loads(hook_outputs(second)[0])
    assert first_answer["decision"] == "block"
    assert CAP_NOTE in first_answer["systemMessage"]
    fields = fields_of(tracker)
    assert (fields["ended_reason"], fields["cap_overrides"]) == ("max_iterations", 1)


def test_a_loop_armed_inside_the_session_without_its_id_is_claimed_by_it(real_claude):
    """What /ralph-loop does on CLIs without CLAUDE_CODE_SESSION_ID (before 2.1.132)."""
    install_hook(real_claude, MODULE_HOOK)
    arm_command = (
        f"env -u CLAUDE_CODE_SESSION_ID {shlex.quote(sys.executable)} -m ralphctl.hook arm"
        " Write the notes --max-iterations=4 --completion-promise=DONE"
    )
    real_claude.server.set_script(
        ToolCall("Bash", {"command": arm_command}),
        Reply("Armed; working."),
        Reply("Done.\n<promise>DONE</promise>"),
    )
    run = real_claude.run(
        "/ralph-loop Write the notes",
        "--session-id",
        SESSION,
        "--allowedTools",
        "Bash",
        env=NO_HISTORY,
    )
    assert run.exit_code == 0, run.stderr
    fields = fields_of(session_tracker(real_claude.project, SESSION))
    assert (fields["session_id"], fields["ended_reason"], fields["iteration"]) == (
        SESSION,
        "completion",
        2,
    )
