"""The ``opencode run`` command line of one iteration, its spec and its configuration check."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ralphctl.agents.base import AgentRequest, AgentUnavailable
from ralphctl.agents.opencode import (
    BIN_ENV,
    SPEC,
    OpencodeAdapter,
    configured,
    isolated_config_home,
)
from ralphctl.agents.opencode_stream import OpencodeStreamParser
from ralphctl.agents.registry import adapter_for, spec_for
from tests.agents.fake_cli import put_executable

REPO_ROOT = Path(__file__).resolve().parents[3]
PROMPT = "Do the task.\n" * 1000  # far beyond what argv should carry


@pytest.fixture(autouse=True)
def fake_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    binary = put_executable(tmp_path / "bin" / "opencode")
    monkeypatch.setenv(BIN_ENV, str(binary))
    monkeypatch.setenv("RALPHCTL_AGENTS_HOME", str(tmp_path / "agents"))
    monkeypatch.delenv("OPENCODE_PERMISSION", raising=False)
    return binary


def request(**fields: object) -> AgentRequest:
    base = AgentRequest(prompt=PROMPT, workdir=Path("/work"), iteration=1, session_id="loop-1")
    return replace(base, **fields)  # type: ignore[arg-type]


def build(**fields: object):
    return OpencodeAdapter().build_command(request(**fields))


def test_the_default_command_runs_json_events_with_the_prompt_on_stdin(fake_binary):
    command = build(permission_mode="default")

    assert list(command.argv) == [str(fake_binary), "run", "--format", "json"]
    assert command.stdin == PROMPT.encode()
    assert command.prompt_file is None
    assert dict(command.env) == {}


def test_accept_edits_allows_edits_through_the_permission_env():
    command = build()  # acceptEdits is the default mode

    assert json.loads(command.env["OPENCODE_PERMISSION"]) == {"edit": "allow"}
    assert "--auto" not in command.argv


def test_the_users_own_permission_rules_are_kept_before_the_modes(monkeypatch):
    monkeypatch.setenv(
        "OPENCODE_PERMISSION", '{"edit": "ask", "webfetch": "deny", "*": "allow", "bash": "allow"}'
    )

    rules = build(permission_mode="plan").env["OPENCODE_PERMISSION"]

    # opencode lets the last matching rule win: the mode's rules come last
    assert list(json.loads(rules).items()) == [
        ("edit", "ask"),
        ("webfetch", "deny"),
        ("*", "allow"),
        ("bash", "ask"),
    ]


def test_plan_runs_the_plan_agent_that_refuses_edits_and_asks_for_shell_commands():
    command = build(permission_mode="plan")

    assert command.argv[-2:] == ["--agent", "plan"]
    assert json.loads(command.env["OPENCODE_PERMISSION"]) == {"bash": "ask"}


def test_the_users_agent_wins_over_plans():
    command = build(permission_mode="plan", extra_args=("--agent", "reviewer"))

    assert command.argv.count("--agent") == 1
    assert command.argv[-2:] == ["--agent", "reviewer"]


def test_bypass_permissions_approves_every_question_with_auto():
    assert "--auto" in build(permission_mode="bypassPermissions").argv
    assert (
        build(permission_mode="bypassPermissions", extra_args=("--yolo",)).argv.count("--auto") == 0
    )


@pytest.mark.parametrize("mode", ["auto", "dontAsk"])
def test_claudes_own_modes_are_refused(mode):
    with pytest.raises(ValueError, match="no permission mode"):
        build(permission_mode=mode)
    assert mode not in SPEC.capabilities.permission_modes


def test_the_model_is_passed_and_names_the_parsers_tokens():
    adapter = OpencodeAdapter()

    command = adapter.build_command(request(model="openai/gpt-5.5"))

    assert command.argv[4:6] == ["--model", "openai/gpt-5.5"]
    parser = adapter.new_parser()
    assert isinstance(parser, OpencodeStreamParser)
    assert parser.model == "openai/gpt-5.5"


def test_the_users_model_flag_wins_and_is_the_one_priced():
    adapter = OpencodeAdapter()

    command = adapter.build_command(request(model="a/b", extra_args=("-m", "c/d")))

    assert "a/b" not in command.argv
    assert command.argv[-2:] == ["-m", "c/d"]
    parser = adapter.new_parser()
    assert isinstance(parser, OpencodeStreamParser)
    assert parser.model == "c/d"


def test_resume_continues_opencodes_own_session():
    command = build(resume=True, session_id="ses_abc123")

    assert command.argv[-2:] == ["--session", "ses_abc123"]


def test_resuming_a_session_opencode_did_not_create_is_refused():
    with pytest.raises(ValueError, match="ses_"):
        build(resume=True, session_id="5e55a1d0-0000-4000-8000-0000000000aa")


def test_extra_args_come_last():
    command = build(extra_args=("--variant", "high", "--thinking"))

    assert command.argv[-3:] == ["--variant", "high", "--thinking"]


@pytest.mark.parametrize("flag", ["--continue", "-c"])
def test_continue_is_refused(flag):
    with pytest.raises(ValueError, match="--continue is not allowed"):
        build(extra_args=(flag,))


def test_only_the_json_format_is_accepted():
    with pytest.raises(ValueError, match="--format default is not supported"):
        build(extra_args=("--format", "default"))
    assert build(extra_args=("--format=json",)).argv.count("--format") == 0


def test_an_isolated_run_has_no_global_config_plugins_or_claude_files(tmp_path):
    command = build(isolate_config=True)

    assert "--pure" in command.argv
    assert command.env["XDG_CONFIG_HOME"] == str(isolated_config_home())
    assert isolated_config_home().is_relative_to(tmp_path / "agents")
    assert command.env["OPENCODE_CONFIG_DIR"] == ""
    assert command.env["OPENCODE_DISABLE_CLAUDE_CODE"] == "1"
    assert command.env["OPENCODE_DISABLE_EXTERNAL_SKILLS"] == "1"
    assert "XDG_DATA_HOME" not in command.env  # where its credentials are: kept


def test_max_output_tokens_go_to_its_output_token_limit():
    assert build(max_output_tokens=4000).env["OPENCODE_EXPERIMENTAL_OUTPUT_TOKEN_MAX"] == "4000"


def test_a_missing_binary_names_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setenv(BIN_ENV, str(tmp_path / "nowhere"))

    with pytest.raises(AgentUnavailable, match="ralphctl agents install opencode"):
        OpencodeAdapter().check_available()


def test_the_registry_makes_it_and_pins_the_tested_version():
    pinned = (REPO_ROOT / "scripts" / "ensure-opencode").read_text()

    assert isinstance(adapter_for("opencode"), OpencodeAdapter)
    spec = spec_for("opencode")
    assert spec.package is not None
    assert (spec.package.registry, spec.package.name) == ("npm", "opencode-ai")
    assert f":-{spec.package.version}}}" in pinned
    assert (spec.executable, spec.bin_env) == ("opencode", BIN_ENV)


# --- configured ---------------------------------------------------------------------------


def test_a_provider_key_in_the_environment_is_enough(tmp_path):
    found = configured({"OPENAI_API_KEY": "sk-x"}, tmp_path)

    assert found.ok
    assert "$OPENAI_API_KEY" in found.detail


def test_stored_logins_are_named(tmp_path):
    auth = tmp_path / ".local/share/opencode/auth.json"
    auth.parent.mkdir(parents=True)
    auth.write_text(json.dumps({"openai": {"type": "oauth"}, "anthropic": {"type": "api"}}))

    found = configured({}, tmp_path)

    assert found.ok
    assert "anthropic, openai" in found.detail


def test_a_provider_declared_in_a_config_with_comments_counts(tmp_path):
    config = tmp_path / "cfg" / "opencode" / "opencode.jsonc"
    config.parent.mkdir(parents=True)
    config.write_text('{\n  // mine\n  "provider": {"local": {}},\n}\n')

    assert configured({"XDG_CONFIG_HOME": str(tmp_path / "cfg")}, tmp_path).ok


def test_nothing_found_says_how_to_log_in(tmp_path):
    found = configured({}, tmp_path)

    assert not found.ok
    assert "opencode providers login" in found.detail
