"""GeminiAdapter: the command line of one iteration, finding the executable, and the registry."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.base import AgentRequest, AgentUnavailable
from ralphctl.agents.gemini import APPROVAL_MODES, SPEC, GeminiAdapter, approval_mode
from ralphctl.agents.registry import adapter_for, spec_for
from tests.agents.fake_cli import put_executable

SESSION = "5e55a1d0-0000-4000-8000-000000000001"


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No managed install, no user override, the user's data dir in tmp."""
    monkeypatch.setenv("RALPHCTL_AGENTS_HOME", str(tmp_path / "agents"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("RALPHCTL_GEMINI_BIN", "GEMINI_CLI_NO_RELAUNCH", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def fake_gemini(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An executable called ``gemini``, alone on PATH."""
    binary = put_executable(tmp_path / "bin" / "gemini")
    monkeypatch.setenv("PATH", str(binary.parent))
    return binary


def request(*extra: str, **fields: Any) -> AgentRequest:
    base = AgentRequest(
        prompt="Fix the failing test.",
        workdir=Path("/w"),
        iteration=3,
        session_id=SESSION,
        extra_args=extra,
    )
    return replace(base, **fields)


def argv(*extra: str, **fields: Any) -> Sequence[str]:
    return GeminiAdapter().build_command(request(*extra, **fields)).argv


def test_the_default_command_streams_json_auto_edits_trusts_the_work_dir_and_names_the_session(
    fake_gemini: Path,
) -> None:
    command = GeminiAdapter().build_command(request(prompt_path=Path("/run/user/1/prompt.md")))

    assert list(command.argv) == [
        str(fake_gemini),
        "--output-format",
        "stream-json",
        "--approval-mode",
        "auto_edit",
        "--skip-trust",
        "--session-id",
        SESSION,
    ]
    assert command.stdin == b"Fix the failing test."  # the prompt never goes on argv
    assert command.prompt_file is None  # stdin takes any size: no file needed
    assert command.env == {"RALPHCTL_ITERATION": "3", "GEMINI_CLI_NO_RELAUNCH": "true"}


@pytest.mark.parametrize(
    ("mode", "flag"),
    [
        ("default", "default"),
        ("acceptEdits", "auto_edit"),
        ("plan", "plan"),
        ("bypassPermissions", "yolo"),
    ],
)
def test_each_permission_mode_maps_to_an_approval_mode(mode: str, flag: str) -> None:
    args = list(argv(permission_mode=mode))

    assert args[args.index("--approval-mode") + 1] == flag


def test_the_capabilities_list_exactly_the_modes_it_can_express() -> None:
    assert SPEC.capabilities.permission_modes == frozenset(APPROVAL_MODES)
    assert {"auto", "dontAsk"}.isdisjoint(SPEC.capabilities.permission_modes)
    with pytest.raises(ValueError, match="no permission mode 'dontAsk'"):
        approval_mode("dontAsk")


@pytest.mark.parametrize("flags", [["--yolo"], ["-y"], ["--approval-mode", "plan"]])
def test_the_users_approval_flag_wins(flags: list[str]) -> None:
    args = list(argv(*flags))

    assert args.count("--approval-mode") == (1 if "--approval-mode" in flags else 0)
    assert args[-len(flags) :] == flags


def test_a_model_is_passed_unless_the_user_names_one() -> None:
    assert list(argv(model="gemini-2.5-pro"))[-2:] == ["--model", "gemini-2.5-pro"]
    assert "gemini-2.5-pro" not in argv("-m", "gemini-2.5-flash", model="gemini-2.5-pro")


def test_resume_continues_the_session_by_its_id() -> None:
    args = list(argv(resume=True))

    assert args[args.index("--resume") + 1] == SESSION
    assert "--session-id" not in args


def test_the_users_session_flag_wins() -> None:
    args = list(argv("--resume", "latest"))

    assert "--session-id" not in args
    assert args[-2:] == ["--resume", "latest"]


def test_the_users_skip_trust_is_not_repeated() -> None:
    assert list(argv("--skip-trust")).count("--skip-trust") == 1


def test_stream_json_may_be_repeated_but_no_other_output_format() -> None:
    assert list(argv("-o", "stream-json")).count("stream-json") == 1
    with pytest.raises(ValueError, match="--output-format json is not supported"):
        argv("--output-format=json")


def test_interactive_flags_are_refused() -> None:
    with pytest.raises(ValueError, match="-i: ralphctl runs Gemini CLI headless"):
        argv("-i", "hello")


def test_the_users_relaunch_setting_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_CLI_NO_RELAUNCH", "")

    assert "GEMINI_CLI_NO_RELAUNCH" not in GeminiAdapter().build_command(request()).env


def test_isolation_runs_the_cli_in_a_home_with_the_users_auth_and_credentials_only(
    tmp_path: Path,
) -> None:
    user_dir = tmp_path / "home" / ".gemini"
    user_dir.mkdir(parents=True)
    (user_dir / "settings.json").write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "oauth-personal"}},
                "hooks": {"AfterAgent": [{"hooks": [{"type": "command", "command": "x"}]}]},
                "mcpServers": {"db": {"command": "db-server"}},
            }
        )
    )
    (user_dir / "oauth_creds.json").write_text("{}")
    (user_dir / "extensions").mkdir()

    command = GeminiAdapter().build_command(request(isolate_config=True))

    home = Path(command.env["GEMINI_CLI_HOME"])
    assert home == tmp_path / "data" / "ralphctl" / "agent-homes" / "gemini"
    isolated = home / ".gemini"
    settings = json.loads((isolated / "settings.json").read_text())
    assert settings == {"security": {"auth": {"selectedType": "oauth-personal"}}}
    assert (isolated / "oauth_creds.json").resolve() == (user_dir / "oauth_creds.json").resolve()
    assert not (isolated / "extensions").exists()
    assert not (isolated / "google_accounts.json").exists()


def test_isolation_reads_the_users_own_gemini_cli_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = tmp_path / "elsewhere"
    (own / ".gemini").mkdir(parents=True)
    (own / ".gemini" / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
    )
    monkeypatch.setenv("GEMINI_CLI_HOME", str(own))

    command = GeminiAdapter().build_command(request(isolate_config=True))

    isolated = Path(command.env["GEMINI_CLI_HOME"]) / ".gemini"
    assert json.loads((isolated / "settings.json").read_text())["security"]["auth"] == {
        "selectedType": "gemini-api-key"
    }


def test_a_credential_removed_by_the_user_is_unlinked_from_the_isolated_home(
    tmp_path: Path,
) -> None:
    user_dir = tmp_path / "home" / ".gemini"
    user_dir.mkdir(parents=True)
    (user_dir / "oauth_creds.json").write_text("{}")
    GeminiAdapter().build_command(request(isolate_config=True))
    (user_dir / "oauth_creds.json").unlink()

    command = GeminiAdapter().build_command(request(isolate_config=True))

    isolated = Path(command.env["GEMINI_CLI_HOME"]) / ".gemini"
    assert not (isolated / "oauth_creds.json").is_symlink()


def test_without_isolation_the_cli_keeps_its_own_home() -> None:
    assert "GEMINI_CLI_HOME" not in GeminiAdapter().build_command(request()).env


def test_a_missing_cli_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))

    with pytest.raises(AgentUnavailable, match="ralphctl agents install gemini"):
        GeminiAdapter().check_available()


def test_a_bin_override_that_is_not_executable_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RALPHCTL_GEMINI_BIN", str(tmp_path / "nope"))

    with pytest.raises(AgentUnavailable, match="RALPHCTL_GEMINI_BIN="):
        GeminiAdapter().check_available()


def test_the_registry_knows_gemini_pinned_to_the_tested_version() -> None:
    spec = spec_for("gemini")

    assert isinstance(adapter_for("gemini"), GeminiAdapter)
    assert spec.package is not None
    assert (spec.package.registry, spec.package.name) == ("npm", "@google/gemini-cli")
    package_json = json.loads((Path(__file__).parents[3] / "package.json").read_text())
    assert package_json["dependencies"]["@google/gemini-cli"] == spec.package.version
    assert spec.capabilities.resume
    assert not spec.capabilities.reports_cost
