"""CopilotAdapter.build_command: the exact command line of one iteration, and the spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ralphctl.agents.base import AgentRequest, AgentUnavailable
from ralphctl.agents.copilot import (
    BIN_ENV,
    MODE_FLAGS,
    SPEC,
    CopilotAdapter,
    isolated_home,
)
from ralphctl.agents.registry import adapter_for, spec_for
from tests.agents.copilot.lines import RESULT_OK, exited
from tests.agents.fake_cli import put_executable

SESSION = "5e55a1d0-0000-4000-8000-00000000c0b1"


@pytest.fixture(autouse=True)
def pinned_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    binary = put_executable(tmp_path / "bin" / "copilot")
    monkeypatch.setenv(BIN_ENV, str(binary))
    return binary


def request(tmp_path: Path, **fields: object) -> AgentRequest:
    defaults: dict[str, object] = {
        "prompt": "Do the task.",
        "workdir": tmp_path,
        "iteration": 3,
        "session_id": SESSION,
        "prompt_path": tmp_path / "private" / f"loop-3-{SESSION}.md",
    }
    return AgentRequest(**{**defaults, **fields})  # type: ignore[arg-type]


def argv(tmp_path: Path, **fields: object) -> list[str]:
    return list(CopilotAdapter().build_command(request(tmp_path, **fields)).argv)


def test_the_default_command_reads_the_prompt_from_stdin_and_prints_json_lines(
    tmp_path, pinned_binary
):
    command = CopilotAdapter().build_command(request(tmp_path))

    usage = tmp_path / "private" / f"copilot-usage-{SESSION}.json"
    assert list(command.argv) == [
        str(pinned_binary),
        "--output-format",
        "json",
        "-s",
        "--no-ask-user",
        "--no-auto-update",
        "--allow-all-tools",
        "--session-id",
        SESSION,
        "--usage-output-file",
        str(usage),
    ]
    assert command.stdin == b"Do the task."
    assert command.prompt_file is None
    assert command.env == {"RALPHCTL_ITERATION": "3"}


@pytest.mark.parametrize("mode", sorted(MODE_FLAGS))
def test_each_mode_maps_to_its_allow_and_deny_flags(tmp_path, mode):
    args = argv(tmp_path, permission_mode=mode)

    assert args[6 : 6 + len(MODE_FLAGS[mode])] == list(MODE_FLAGS[mode])


def test_plan_is_read_only_and_default_allows_nothing(tmp_path):
    assert MODE_FLAGS["plan"] == ("--allow-all-tools", "--deny-tool=write", "--deny-tool=shell")
    assert MODE_FLAGS["default"] == ()
    assert MODE_FLAGS["bypassPermissions"] == ("--allow-all",)


def test_only_the_modes_it_can_express_are_declared():
    assert SPEC.capabilities.permission_modes == {
        "default",
        "acceptEdits",
        "plan",
        "bypassPermissions",
    }


def test_resume_continues_the_session_instead_of_naming_a_new_one(tmp_path):
    args = argv(tmp_path, resume=True)

    assert args[args.index("--resume") + 1] == SESSION
    assert "--session-id" not in args


def test_the_model_is_passed_unless_the_user_gives_one(tmp_path):
    args = argv(tmp_path, model="gpt-4.1")
    assert args[args.index("--model") + 1] == "gpt-4.1"
    users = argv(tmp_path, model="gpt-4.1", extra_args=["--model", "claude-sonnet-4"])
    assert users.count("--model") == 1
    assert users[-2:] == ["--model", "claude-sonnet-4"]


def test_the_users_permission_flags_replace_the_modes(tmp_path):
    args = argv(tmp_path, permission_mode="plan", extra_args=["--allow-tool=shell(git:*)"])

    assert "--deny-tool=write" not in args
    assert "--allow-all-tools" not in args
    assert args[-1] == "--allow-tool=shell(git:*)"


def test_the_users_session_flag_wins(tmp_path):
    args = argv(tmp_path, extra_args=["--session-id", "mine"])

    assert args.count("--session-id") == 1
    assert args[-2:] == ["--session-id", "mine"]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--continue"], "--continue is not allowed"),
        (["-p", "hi"], "on stdin"),
        (["--prompt=hi"], "on stdin"),
        (["--output-format", "text"], "--output-format text is not supported"),
    ],
)
def test_flags_that_would_break_the_run_are_refused(tmp_path, extra, says):
    with pytest.raises(ValueError, match=says):
        argv(tmp_path, extra_args=extra)


def test_output_format_json_may_be_repeated(tmp_path):
    args = argv(tmp_path, extra_args=["--output-format=json"])

    assert "--output-format" not in args[:-1]
    assert args[-1] == "--output-format=json"


def test_the_parser_reads_the_usage_file_of_the_command_last_built(tmp_path):
    adapter = CopilotAdapter()
    command = adapter.build_command(request(tmp_path))
    usage = Path(command.argv[command.argv.index("--usage-output-file") + 1])
    metrics = {"m": {"usage": {"inputTokens": 7, "outputTokens": 3}}}
    usage.write_text(json.dumps({"modelMetrics": metrics}))
    parser = adapter.new_parser()
    parser.feed(RESULT_OK)

    assert parser.finish(exited(0)).tokens.total == 10
    assert not usage.exists()


def test_the_usage_files_folder_is_made_private_with_its_missing_parents(tmp_path):
    prompt_path = tmp_path / "runtime" / "ralphctl" / "prompts" / "p.md"

    args = argv(tmp_path, prompt_path=prompt_path)

    usage = Path(args[args.index("--usage-output-file") + 1])
    assert usage.parent == prompt_path.parent
    for folder in (usage.parent, usage.parent.parent, usage.parent.parent.parent):
        assert folder.stat().st_mode & 0o777 == 0o700


def test_without_a_prompt_path_the_usage_file_is_in_the_users_temp_dir(tmp_path):
    args = argv(tmp_path, prompt_path=None)

    usage = Path(args[args.index("--usage-output-file") + 1])
    assert usage.name == f"copilot-usage-{SESSION}.json"
    assert usage.parent.name.startswith("ralphctl-")


def test_isolation_gives_the_cli_a_home_of_its_own_with_only_the_login(tmp_path, monkeypatch):
    user_home = tmp_path / "user-copilot"
    (user_home / "hooks").mkdir(parents=True)
    (user_home / "config.json").write_text('{"logged_in_users": [{"login": "me"}]}')
    (user_home / "mcp-config.json").write_text("{}")
    monkeypatch.setenv("COPILOT_HOME", str(user_home))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))

    command = CopilotAdapter().build_command(request(tmp_path, isolate_config=True))

    home = Path(command.env["COPILOT_HOME"])
    assert home.is_relative_to(tmp_path / "data")
    assert sorted(p.name for p in home.iterdir()) == ["config.json"]
    assert (home / "config.json").stat().st_mode & 0o777 == 0o600
    assert isolated_home(tmp_path, user_home) == home  # one per work dir: resumes find it


def test_check_available_names_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setenv(BIN_ENV, str(tmp_path / "nowhere"))

    with pytest.raises(AgentUnavailable, match="ralphctl agents install copilot"):
        CopilotAdapter().check_available()


def test_the_registry_knows_copilot_and_its_pinned_package():
    assert isinstance(adapter_for("copilot"), CopilotAdapter)
    package = spec_for("copilot").package
    assert package is not None
    pinned = json.loads((Path(__file__).parents[3] / "package.json").read_text())
    assert pinned["dependencies"]["@github/copilot"] == package.version
    assert (package.registry, package.name, package.executable) == (
        "npm",
        "@github/copilot",
        "copilot",
    )


@pytest.mark.parametrize(
    ("env", "files", "ok", "says"),
    [
        ({"COPILOT_PROVIDER_BASE_URL": "http://x"}, {}, True, "bring your own"),
        ({"GH_TOKEN": "t"}, {}, True, "$GH_TOKEN is set"),
        ({}, {"config.json": '// managed\n{"logged_in_users": []}'}, True, "logged in"),
        ({}, {"config.json": '{"firstLaunchAt": "2026"}'}, False, "copilot login"),
        ({}, {}, False, "copilot login"),
    ],
)
def test_configured_is_checked_offline(tmp_path, env, files, ok, says):
    folder = tmp_path / ".copilot"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    assert SPEC.configured is not None

    found = SPEC.configured(env, tmp_path)

    assert found.ok is ok
    assert says in found.detail


def test_tool_filters_are_no_permission_flags_and_keep_the_modes(tmp_path):
    args = argv(tmp_path, extra_args=["--excluded-tools", "fetch_copilot_cli_documentation"])

    assert "--allow-all-tools" in args


def test_a_resumed_run_takes_off_what_the_session_used_before(tmp_path, monkeypatch):
    session = "ee78835e-2c64-4984-8c58-4276bf98f7c6"  # tests/agents/cassettes/copilot
    home = tmp_path / "copilot-home"
    (home / "session-state" / session).mkdir(parents=True)
    recorded = Path(__file__).parents[1] / "cassettes" / "copilot" / "session_events.jsonl"
    (home / "session-state" / session / "events.jsonl").write_bytes(recorded.read_bytes())
    monkeypatch.setenv("COPILOT_HOME", str(home))
    adapter = CopilotAdapter()
    command = adapter.build_command(request(tmp_path, session_id=session, resume=True))
    usage = Path(command.argv[command.argv.index("--usage-output-file") + 1])
    totals = {"inputTokens": 1400 + 3000, "outputTokens": 70 + 40, "cacheReadTokens": 300}
    usage.write_text(json.dumps({"modelMetrics": {"gpt-4.1": {"usage": totals}}}))

    parser = adapter.new_parser()
    parser.feed(RESULT_OK)

    tokens = parser.finish(exited(0)).tokens
    assert (tokens.input, tokens.output, tokens.cache_read) == (3000, 40, 0)
