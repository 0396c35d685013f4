"""ClaudeAdapter: the command line of one iteration, and finding the executable."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.base import AgentRequest, AgentUnavailable, ProcessOutcome, StopHook
from ralphctl.agents.claude import BLOCK_CAP_ENV, ClaudeAdapter, block_cap
from ralphctl.agents.events import ToolCall
from tests.agents.fake_cli import put_executable


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An executable called ``claude``, alone on PATH."""
    binary = put_executable(tmp_path / "bin" / "claude")
    monkeypatch.delenv("RALPHCTL_CLAUDE_BIN", raising=False)
    monkeypatch.setenv("PATH", str(binary.parent))
    return binary


@pytest.fixture
def not_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)


def request(*extra: str, **fields: Any) -> AgentRequest:
    base = AgentRequest(
        prompt="Fix the failing test.",
        workdir=Path("/w"),
        iteration=3,
        session_id="sess-1",
        extra_args=extra,
    )
    return replace(base, **fields)


def argv(*extra: str, **fields: Any) -> Sequence[str]:
    return ClaudeAdapter().build_command(request(*extra, **fields)).argv


@pytest.mark.usefixtures("not_root")
def test_the_command_streams_json_with_the_prompt_on_stdin(fake_claude: Path) -> None:
    command = ClaudeAdapter().build_command(request())

    assert list(command.argv) == [
        str(fake_claude),
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-mode",
        "acceptEdits",
        "--session-id",
        "sess-1",
    ]
    assert command.stdin == b"Fix the failing test."
    assert dict(command.env) == {"RALPHCTL_ITERATION": "3"}


@pytest.mark.usefixtures("fake_claude")
def test_extra_args_come_last() -> None:
    assert list(argv("--model", "opus", "--allowedTools", "Bash"))[-4:] == [
        "--model",
        "opus",
        "--allowedTools",
        "Bash",
    ]


@pytest.mark.usefixtures("fake_claude")
@pytest.mark.parametrize(
    "extra",
    [
        ("--permission-mode", "plan"),
        ("--permission-mode=plan",),
        ("--dangerously-skip-permissions",),
    ],
)
def test_the_users_permission_flags_win(extra: tuple[str, ...]) -> None:
    command = argv(*extra)

    assert command.count("--permission-mode") == ("--permission-mode" in extra)
    assert "acceptEdits" not in command


@pytest.mark.usefixtures("fake_claude")
@pytest.mark.parametrize(
    "extra", [("--session-id", "mine"), ("--resume", "abc"), ("-r", "abc"), ("--resume=abc",)]
)
def test_the_users_session_flags_replace_ours(extra: tuple[str, ...]) -> None:
    command = argv(*extra)

    assert "sess-1" not in command
    assert command.count("--session-id") == ("--session-id" in extra)


@pytest.mark.usefixtures("fake_claude")
@pytest.mark.parametrize("flag", ["--continue", "-c", "--continue=yes"])
def test_continue_is_refused_because_it_can_grab_another_session(flag: str) -> None:
    with pytest.raises(ValueError, match="--resume <session-id>"):
        argv(flag)


@pytest.mark.usefixtures("fake_claude")
def test_output_format_may_only_repeat_stream_json() -> None:
    assert argv("--output-format", "stream-json").count("--output-format") == 1
    given_with_equals = argv("--output-format=stream-json")
    assert [a for a in given_with_equals if a.startswith("--output-format")] == [
        "--output-format=stream-json"
    ]
    with pytest.raises(ValueError, match="--output-format json is not supported"):
        argv("--output-format", "json")


@pytest.mark.usefixtures("fake_claude")
def test_flags_the_user_already_gave_are_not_repeated() -> None:
    command = argv("--verbose", "--print")

    assert command.count("--verbose") == 1
    assert "-p" not in command


@pytest.mark.usefixtures("fake_claude")
def test_the_remaining_cost_budget_caps_the_iteration_rounded_down() -> None:
    command = list(argv(remaining_cost_usd=1.23456))

    assert command[command.index("--max-budget-usd") + 1] == "1.2345"
    assert "--max-budget-usd" not in argv()
    assert (
        list(argv("--max-budget-usd", "0.5", remaining_cost_usd=2.0)).count("--max-budget-usd") == 1
    )


@pytest.mark.usefixtures("fake_claude")
@pytest.mark.parametrize(
    ("uid", "extra", "mode", "sandbox"),
    [
        (0, (), "bypassPermissions", True),
        (0, ("--dangerously-skip-permissions",), "acceptEdits", True),
        (0, ("--permission-mode", "bypassPermissions"), "acceptEdits", True),
        (0, ("--permission-mode", "plan"), "bypassPermissions", False),
        (0, (), "acceptEdits", False),
        (1000, (), "bypassPermissions", False),
    ],
)
def test_as_root_bypass_permissions_gets_is_sandbox(
    monkeypatch: pytest.MonkeyPatch, uid: int, extra: tuple[str, ...], mode: str, sandbox: bool
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: uid)

    command = ClaudeAdapter().build_command(request(*extra, permission_mode=mode))

    assert ("IS_SANDBOX" in command.env) is sandbox


def test_ralphctl_claude_bin_names_the_executable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    custom = put_executable(tmp_path / "my-claude")
    monkeypatch.setenv("RALPHCTL_CLAUDE_BIN", str(custom))
    monkeypatch.setenv("PATH", "")

    ClaudeAdapter().check_available()
    assert argv()[0] == str(custom)


@pytest.mark.usefixtures("fake_claude")
def test_claude_on_path_is_available() -> None:
    ClaudeAdapter().check_available()


def test_a_missing_cli_is_unavailable_with_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RALPHCTL_CLAUDE_BIN", raising=False)
    monkeypatch.setenv("PATH", "")

    with pytest.raises(AgentUnavailable, match="npm install -g @anthropic-ai/claude-code"):
        ClaudeAdapter().check_available()
    assert argv()[0] == "claude"  # a dry run still shows a command


def test_a_wrong_ralphctl_claude_bin_is_named_in_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RALPHCTL_CLAUDE_BIN", str(tmp_path / "nope"))

    with pytest.raises(
        AgentUnavailable, match=r"RALPHCTL_CLAUDE_BIN=.*nope.* is not an executable"
    ):
        ClaudeAdapter().check_available()


def test_the_configured_model_is_passed_unless_the_user_names_one() -> None:
    assert argv(model="sonnet")[-2:] == ["--model", "sonnet"]
    chosen = argv("--model", "opus", model="sonnet")
    assert chosen.count("--model") == 1
    assert chosen[-2:] == ["--model", "opus"]


def test_the_output_token_limit_goes_in_the_environment() -> None:
    command = ClaudeAdapter().build_command(request(max_output_tokens=8000))
    assert command.env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == "8000"
    assert "CLAUDE_CODE_MAX_OUTPUT_TOKENS" not in ClaudeAdapter().build_command(request()).env


# --- same-session runs (hook mode) ---------------------------------------------------------

HOOK = StopHook(command="python -I -S hook.py stop", timeout_s=30, max_blocks=16)


def test_a_stop_hook_becomes_a_settings_layer_for_this_session_only() -> None:
    hook = replace(HOOK, disabled_plugins=("ralphctl@ralphctl",))
    args = list(argv(stop_hook=hook))
    settings = json.loads(args[args.index("--settings") + 1])
    assert settings == {
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": HOOK.command, "timeout": 30}]}]
        },
        "enabledPlugins": {"ralphctl@ralphctl": False},
    }


def test_a_resumed_session_is_continued_by_its_id() -> None:
    args = list(argv(resume=True))
    assert args[args.index("--resume") + 1] == "sess-1"
    assert "--session-id" not in args


def test_the_block_cap_lets_the_loops_bound_of_stops_block(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BLOCK_CAP_ENV, raising=False)
    env = ClaudeAdapter().build_command(request(stop_hook=HOOK)).env
    assert env[BLOCK_CAP_ENV] == "16"


def test_a_higher_or_disabled_block_cap_of_the_user_is_kept() -> None:
    assert block_cap(16, None) == "16"
    assert block_cap(16, "8") == "16"
    assert block_cap(16, "200") == "200"
    assert block_cap(16, "0") == "0"
    assert block_cap(16, "many") == "16"


@pytest.mark.parametrize("extra", [("--settings=a.json",), ("-r", "id"), ("--session-id", "x")])
def test_a_same_session_run_refuses_user_flags_that_take_the_session_away(
    extra: tuple[str, ...],
) -> None:
    with pytest.raises(ValueError, match="sets the session and its settings itself"):
        argv(*extra, stop_hook=HOOK)


def test_the_edit_tools_are_marked_as_file_edits_live_and_in_the_result() -> None:
    parser = ClaudeAdapter().new_parser()
    live: list[ToolCall] = []
    for name in ("Edit", "Read"):
        block = {"type": "tool_use", "id": name, "name": name, "input": {"file_path": "a.py"}}
        line = {"type": "assistant", "message": {"id": name, "content": [block]}}
        live += [e for e in parser.feed(json.dumps(line).encode()) if isinstance(e, ToolCall)]
    result = parser.finish(ProcessOutcome(exit_code=0, duration_ms=1, stderr_tail=""))
    assert [(call.name, call.edits_files) for call in live] == [("Edit", True), ("Read", False)]
    assert [(tool.name, tool.edits_files) for tool in result.tool_uses] == [
        ("Edit", True),
        ("Read", False),
    ]
