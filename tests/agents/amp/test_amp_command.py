"""AmpAdapter: the command line of one iteration, finding the executable, its configuration
check, and the registry."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.amp import MODE_FLAGS, SPEC, AmpAdapter, isolated_settings_file
from ralphctl.agents.base import AgentRequest, AgentUnavailable
from ralphctl.agents.registry import adapter_for, spec_for
from tests.agents.fake_cli import put_executable

THREAD = "T-5f0c2a7e-3b1d-4c8e-9a47-0e6d2b9c1f3a"


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No managed install, no user override, nothing on PATH but what a test puts there."""
    monkeypatch.setenv("RALPHCTL_AGENTS_HOME", str(tmp_path / "agents"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("RALPHCTL_AMP_BIN", raising=False)


@pytest.fixture
def fake_amp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An executable called ``amp``, alone on PATH."""
    binary = put_executable(tmp_path / "bin" / "amp")
    monkeypatch.setenv("PATH", str(binary.parent))
    return binary


def request(*extra: str, **fields: Any) -> AgentRequest:
    base = AgentRequest(
        prompt="Fix the failing test.",
        workdir=Path("/w"),
        iteration=3,
        session_id=THREAD,
        extra_args=extra,
    )
    return replace(base, **fields)


def argv(*extra: str, **fields: Any) -> list[str]:
    return list(AmpAdapter().build_command(request(*extra, **fields)).argv)


def test_a_fresh_run_executes_with_stream_json_and_the_prompt_on_stdin(fake_amp: Path) -> None:
    command = AmpAdapter().build_command(request())

    assert list(command.argv) == [str(fake_amp), "--execute", "--stream-json", "--no-ide"]
    assert command.stdin == b"Fix the failing test."
    assert command.env == {"RALPHCTL_ITERATION": "3", "AMP_SKIP_UPDATE_CHECK": "1"}
    assert command.prompt_file is None


def test_a_long_prompt_never_reaches_the_command_line(fake_amp: Path) -> None:
    prompt = "x" * 500_000
    command = AmpAdapter().build_command(request(prompt=prompt))

    assert command.stdin == prompt.encode()
    assert all(len(arg) < 1000 for arg in command.argv)


def test_resuming_continues_the_thread_by_its_id(fake_amp: Path) -> None:
    assert argv(resume=True)[1:] == [
        "threads",
        "continue",
        THREAD,
        "--execute",
        "--stream-json",
        "--no-ide",
    ]


@pytest.mark.parametrize(
    ("mode", "flags"),
    [
        ("default", []),
        ("acceptEdits", []),
        ("bypassPermissions", ["--dangerously-allow-all"]),
    ],
)
def test_each_mode_maps_to_amps_own_flags(fake_amp: Path, mode: str, flags: list[str]) -> None:
    assert argv(permission_mode=mode)[4:] == flags


@pytest.mark.parametrize("mode", ["plan", "auto", "dontAsk"])
def test_a_mode_amp_cannot_express_is_refused_not_approximated(fake_amp: Path, mode: str) -> None:
    with pytest.raises(ValueError, match=f"permission mode '{mode}' is not one Amp can express"):
        argv(permission_mode=mode)
    assert mode not in SPEC.capabilities.permission_modes


def test_the_capabilities_list_exactly_the_modes_mapped() -> None:
    assert SPEC.capabilities.permission_modes == frozenset(MODE_FLAGS)
    assert SPEC.capabilities.resume
    assert not SPEC.capabilities.reports_cost
    assert not SPEC.capabilities.same_session


def test_the_model_is_passed_as_amps_mode(fake_amp: Path) -> None:
    assert argv(model="high")[-2:] == ["--mode", "high"]


def test_the_users_arguments_win_over_ours(fake_amp: Path) -> None:
    got = argv(
        "--dangerously-allow-all",
        "-m",
        "ultra",
        "--ide",
        "-x",
        permission_mode="default",
        model="low",
    )

    assert got[1:] == ["--stream-json", "--dangerously-allow-all", "-m", "ultra", "--ide", "-x"]


def test_thinking_stream_json_replaces_plain_stream_json(fake_amp: Path) -> None:
    got = argv("--stream-json-thinking")

    assert "--stream-json" not in got
    assert got[-1] == "--stream-json-thinking"


@pytest.mark.parametrize("word", ["threads", "last"])
def test_a_subcommand_in_the_users_arguments_is_refused(fake_amp: Path, word: str) -> None:
    with pytest.raises(ValueError, match="ralphctl starts or continues the Amp thread"):
        argv(word, "continue")


def test_stream_json_input_is_refused(fake_amp: Path) -> None:
    with pytest.raises(ValueError, match="sends the prompt as plain text"):
        argv("--stream-json-input")


def test_an_isolated_run_reads_empty_settings_next_to_its_private_prompt(
    fake_amp: Path, tmp_path: Path
) -> None:
    prompt_path = tmp_path / "private" / "loop-1-x.md"

    got = argv(isolate_config=True, prompt_path=prompt_path)

    settings = Path(got[got.index("--settings-file") + 1])
    assert settings == prompt_path.with_name(f"amp-settings-{THREAD}.json")
    assert not settings.exists()  # a missing file is empty settings to Amp
    assert isolated_settings_file(request(prompt_path=prompt_path)) == settings


def test_an_isolated_run_without_a_private_folder_is_refused(fake_amp: Path) -> None:
    with pytest.raises(ValueError, match="private folder"):
        argv(isolate_config=True)


def test_the_users_settings_file_wins_over_isolation(fake_amp: Path, tmp_path: Path) -> None:
    got = argv("--settings-file", "/etc/amp.json", isolate_config=True, prompt_path=tmp_path / "p")

    assert got.count("--settings-file") == 1
    assert got[-2:] == ["--settings-file", "/etc/amp.json"]


def test_a_missing_amp_says_how_to_install_it() -> None:
    with pytest.raises(AgentUnavailable, match="ralphctl agents install amp"):
        AmpAdapter().check_available()


def test_the_bin_variable_names_the_executable(
    fake_amp: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RALPHCTL_AMP_BIN", str(fake_amp))
    AmpAdapter().check_available()
    monkeypatch.setenv("RALPHCTL_AMP_BIN", str(tmp_path / "nowhere"))
    with pytest.raises(AgentUnavailable, match="RALPHCTL_AMP_BIN"):
        AmpAdapter().check_available()


def test_the_registry_knows_amp_and_its_package() -> None:
    spec = spec_for("amp")

    assert isinstance(adapter_for("amp"), AmpAdapter)
    assert spec.package is not None
    assert (spec.package.registry, spec.package.name, spec.package.executable) == (
        "npm",
        "@ampcode/cli",
        "amp",
    )
    assert (spec.executable, spec.bin_env) == ("amp", "RALPHCTL_AMP_BIN")


# --- configured, offline -------------------------------------------------------------------


def configured(env: dict[str, str], home: Path) -> tuple[bool, str]:
    assert SPEC.configured is not None
    found = SPEC.configured(env, home)
    return found.ok, found.detail


def test_an_api_key_in_the_environment_is_enough(tmp_path: Path) -> None:
    assert configured({"AMP_API_KEY": "sgamp_x"}, tmp_path) == (True, "$AMP_API_KEY is set")


def test_a_stored_login_is_found_in_amps_data_dir(tmp_path: Path) -> None:
    secrets = tmp_path / ".local" / "share" / "amp" / "secrets.json"
    secrets.parent.mkdir(parents=True)
    secrets.write_text(json.dumps({"apiKey@https://ampcode.com/": "sgamp_x"}))

    ok, detail = configured({}, tmp_path)

    assert ok
    assert str(secrets) in detail


def test_the_data_dir_follows_xdg(tmp_path: Path) -> None:
    secrets = tmp_path / "xdg" / "amp" / "secrets.json"
    secrets.parent.mkdir(parents=True)
    secrets.write_text(json.dumps({"apiKey@https://ampcode.com/": "sgamp_x"}))

    assert configured({"XDG_DATA_HOME": str(tmp_path / "xdg")}, tmp_path)[0]


@pytest.mark.parametrize("content", ["", "{", "[]", '{"other@x": "y"}', '{"apiKey@x": ""}'])
def test_no_key_is_not_configured_and_says_what_to_do(tmp_path: Path, content: str) -> None:
    secrets = tmp_path / ".local" / "share" / "amp" / "secrets.json"
    secrets.parent.mkdir(parents=True)
    secrets.write_text(content)

    ok, detail = configured({}, tmp_path)

    assert not ok
    assert "amp login" in detail
    assert "AMP_API_KEY" in detail
