"""CursorAdapter: the command line of one iteration, finding the executable (``cursor-agent``,
or Cursor's own ``agent``), its configuration check, and the registry."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.base import AgentRequest, AgentUnavailable
from ralphctl.agents.cursor import (
    MAX_ARGV_PROMPT_BYTES,
    MODE_FLAGS,
    SPEC,
    CursorAdapter,
    executable,
)
from ralphctl.agents.install import InstallError, install
from ralphctl.agents.registry import adapter_for, spec_for
from tests.agents.fake_cli import put_executable

SESSION = "4b7e1f0a-92c3-4d5e-8f61-2a9b0c3d4e5f"


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No managed install, no user override, nothing on PATH but what a test puts there."""
    monkeypatch.setenv("RALPHCTL_AGENTS_HOME", str(tmp_path / "agents"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv("RALPHCTL_CURSOR_BIN", raising=False)
    monkeypatch.delenv("RALPHCTL_CURSOR_PROMPT_VIA", raising=False)


@pytest.fixture
def fake_cursor(tmp_path: Path) -> Path:
    """An executable called ``cursor-agent`` on PATH."""
    return put_executable(tmp_path / "bin" / "cursor-agent")


def request(*extra: str, **fields: Any) -> AgentRequest:
    base = AgentRequest(
        prompt="Summarise README.md.",
        workdir=Path("/w"),
        iteration=2,
        session_id=SESSION,
        extra_args=extra,
    )
    return replace(base, **fields)


def argv(*extra: str, **fields: Any) -> list[str]:
    return list(CursorAdapter().build_command(request(*extra, **fields)).argv)


def test_a_fresh_run_prints_stream_json_with_the_prompt_on_stdin(fake_cursor: Path) -> None:
    command = CursorAdapter().build_command(request())

    assert list(command.argv) == [
        str(fake_cursor),
        "-p",
        "--output-format",
        "stream-json",
        "--trust",
    ]
    assert command.stdin == b"Summarise README.md."
    assert command.env == {"RALPHCTL_ITERATION": "2"}


@pytest.mark.parametrize(
    ("mode", "flags"),
    [
        ("default", ["--trust"]),
        ("acceptEdits", ["--trust"]),
        ("plan", ["--trust", "--mode", "plan"]),
        ("bypassPermissions", ["--force", "--sandbox", "disabled", "--approve-mcps"]),
    ],
)
def test_each_mode_maps_to_cursors_own_flags(
    fake_cursor: Path, mode: str, flags: list[str]
) -> None:
    assert argv(permission_mode=mode)[4:] == flags


@pytest.mark.parametrize("mode", ["auto", "dontAsk"])
def test_a_mode_cursor_cannot_express_is_refused(fake_cursor: Path, mode: str) -> None:
    with pytest.raises(ValueError, match=f"permission mode '{mode}' is not one Cursor can express"):
        argv(permission_mode=mode)
    assert SPEC.capabilities.permission_modes == frozenset(MODE_FLAGS)


def test_model_and_resume_flags(fake_cursor: Path) -> None:
    assert argv(model="sonnet-4.5", resume=True)[5:] == [
        "--model",
        "sonnet-4.5",
        "--resume",
        SESSION,
    ]


def test_the_users_arguments_win_over_ours(fake_cursor: Path) -> None:
    got = argv("--yolo", "--model", "gpt-5", "--resume", "abc", model="x", resume=True)

    assert got[1:] == [
        "-p",
        "--output-format",
        "stream-json",
        "--yolo",
        "--model",
        "gpt-5",
        "--resume",
        "abc",
    ]


def test_a_users_permission_flag_still_gets_the_work_dir_trusted(fake_cursor: Path) -> None:
    assert argv("--mode", "ask")[4:] == ["--trust", "--mode", "ask"]


def test_continue_is_refused(fake_cursor: Path) -> None:
    with pytest.raises(ValueError, match="--continue is not allowed"):
        argv("--continue")


@pytest.mark.parametrize("given", [("--output-format", "json"), ("--output-format=text",)])
def test_another_output_format_is_refused(fake_cursor: Path, given: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="stream-json"):
        argv(*given)


def test_repeating_stream_json_is_allowed(fake_cursor: Path) -> None:
    assert argv("--output-format", "stream-json").count("--output-format") == 1


def test_isolation_is_refused_rather_than_silently_skipped(fake_cursor: Path) -> None:
    with pytest.raises(ValueError, match="isolate_agent_config is not available for cursor"):
        argv(isolate_config=True)


def test_the_prompt_on_argv_is_the_last_argument_after_a_separator(fake_cursor: Path) -> None:
    command = CursorAdapter(prompt_via="argv").build_command(request())

    assert list(command.argv)[-2:] == ["--", "Summarise README.md."]
    assert command.stdin == b""


def test_a_prompt_too_long_for_the_command_line_is_refused(fake_cursor: Path) -> None:
    adapter = CursorAdapter(prompt_via="argv")
    adapter.build_command(request(prompt="é" * (MAX_ARGV_PROMPT_BYTES // 2)))

    with pytest.raises(ValueError, match="too long for the command line"):
        adapter.build_command(request(prompt="x" * (MAX_ARGV_PROMPT_BYTES + 1)))


def test_the_prompt_route_comes_from_its_variable_and_is_checked(
    fake_cursor: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RALPHCTL_CURSOR_PROMPT_VIA", "argv")
    assert adapter_for("cursor").build_command(request()).stdin == b""
    monkeypatch.setenv("RALPHCTL_CURSOR_PROMPT_VIA", "file")
    with pytest.raises(
        ValueError, match="RALPHCTL_CURSOR_PROMPT_VIA='file': use one of stdin, argv"
    ):
        adapter_for("cursor")


def test_cursors_newer_agent_binary_is_found_when_it_is_cursors(tmp_path: Path) -> None:
    install_dir = tmp_path / "share" / "cursor-agent" / "versions" / "2026.11.01"
    target = put_executable(install_dir / "cursor-agent")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "agent").symlink_to(target)

    assert executable() == str(tmp_path / "bin" / "agent")
    CursorAdapter().check_available()


def test_another_clis_agent_binary_is_not_taken_for_cursor(tmp_path: Path) -> None:
    put_executable(tmp_path / "bin" / "agent")

    assert executable() is None
    with pytest.raises(AgentUnavailable, match="not on a package registry"):
        CursorAdapter().check_available()


def test_cursor_agent_is_preferred_over_agent(fake_cursor: Path, tmp_path: Path) -> None:
    target = put_executable(tmp_path / "cursor-agent" / "cursor-agent")
    (tmp_path / "bin" / "agent").symlink_to(target)

    assert executable() == str(fake_cursor)


def test_the_bin_variable_alone_decides(
    fake_cursor: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RALPHCTL_CURSOR_BIN", str(tmp_path / "nowhere"))

    with pytest.raises(AgentUnavailable, match="RALPHCTL_CURSOR_BIN"):
        CursorAdapter().check_available()


def test_the_registry_knows_cursor_and_that_no_registry_has_it() -> None:
    spec = spec_for("cursor")

    assert spec.package is None
    assert (spec.executable, spec.bin_env) == ("cursor-agent", "RALPHCTL_CURSOR_BIN")
    assert spec.options == frozenset()
    with pytest.raises(InstallError, match="not installed from a package registry"):
        install(spec)


# --- configured, offline -------------------------------------------------------------------


def configured(env: dict[str, str], home: Path) -> tuple[bool, str]:
    assert SPEC.configured is not None
    found = SPEC.configured(env, home)
    return found.ok, found.detail


def test_an_api_key_in_the_environment_is_enough(tmp_path: Path) -> None:
    assert configured({"CURSOR_API_KEY": "key"}, tmp_path) == (True, "$CURSOR_API_KEY is set")


def test_a_stored_login_is_found(tmp_path: Path) -> None:
    auth = tmp_path / ".config" / "cursor" / "auth.json"
    auth.parent.mkdir(parents=True)
    auth.write_text("{}")

    ok, detail = configured({}, tmp_path)

    assert ok
    assert str(auth) in detail


def test_the_config_dir_variable_is_looked_at_first(tmp_path: Path) -> None:
    auth = tmp_path / "custom" / "auth.json"
    auth.parent.mkdir()
    auth.write_text("{}")

    assert configured({"CURSOR_CONFIG_DIR": str(auth.parent)}, tmp_path)[0]


def test_nothing_found_says_what_to_do(tmp_path: Path) -> None:
    ok, detail = configured({}, tmp_path)

    assert not ok
    assert "cursor-agent login" in detail
