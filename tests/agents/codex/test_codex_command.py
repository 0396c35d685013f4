"""The ``codex exec`` command line of one iteration, the offline configuration check and the
spec (every flag here was checked against ``codex exec --help`` of the pinned 0.169.0 and by
the real-CLI tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.base import AgentRequest, AgentUnavailable, ProcessOutcome
from ralphctl.agents.codex import SPEC, CodexAdapter
from ralphctl.agents.registry import adapter_for, spec_for
from tests.agents.fake_cli import put_executable

REPO_ROOT = Path(__file__).resolve().parents[3]
PROMPT = "Do the task in TASK.md."


@pytest.fixture(autouse=True)
def codex_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A fake ``codex`` executable named by ``RALPHCTL_CODEX_BIN``, and no user config."""
    binary = put_executable(tmp_path / "bin" / "codex")
    monkeypatch.setenv("RALPHCTL_CODEX_BIN", str(binary))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    return binary


def request(**fields: Any) -> AgentRequest:
    defaults: dict[str, Any] = {
        "prompt": PROMPT,
        "workdir": Path("/w"),
        "iteration": 3,
        "session_id": "01a209dc-0000-7000-8000-000000000001",
    }
    return AgentRequest(**{**defaults, **fields})


def argv(**fields: Any) -> list[str]:
    return list(CodexAdapter().build_command(request(**fields)).argv)[1:]


def test_an_iteration_runs_exec_json_in_the_workspace_sandbox_with_the_prompt_on_stdin(
    codex_on_path,
):
    command = CodexAdapter().build_command(request())

    assert command.argv == [
        str(codex_on_path),
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--sandbox",
        "workspace-write",
        "-",
    ]
    assert command.stdin == PROMPT.encode()
    assert command.prompt_file is None
    assert command.env == {"RALPHCTL_ITERATION": "3"}


def test_a_long_prompt_never_reaches_the_argv():
    prompt = "x" * 200_000
    command = CodexAdapter().build_command(request(prompt=prompt))
    assert command.stdin == prompt.encode()
    assert max(len(arg) for arg in command.argv) < 1000


@pytest.mark.parametrize(
    ("mode", "flags"),
    [
        ("default", []),
        ("plan", ["--sandbox", "read-only"]),
        ("acceptEdits", ["--sandbox", "workspace-write"]),
        ("bypassPermissions", ["--dangerously-bypass-approvals-and-sandbox"]),
    ],
)
def test_each_permission_mode_maps_to_its_sandbox_flags(mode, flags):
    assert argv(permission_mode=mode) == ["exec", "--json", "--skip-git-repo-check", *flags, "-"]


@pytest.mark.parametrize("mode", ["auto", "dontAsk", "whatever"])
def test_a_mode_codex_cannot_express_is_an_error_not_something_else(mode):
    assert mode not in SPEC.capabilities.permission_modes
    with pytest.raises(ValueError, match="not one Codex can express"):
        argv(permission_mode=mode)


@pytest.mark.parametrize(
    "users",
    [
        ["-s", "danger-full-access"],
        ["--sandbox=read-only"],
        ["--dangerously-bypass-approvals-and-sandbox"],
        ["-c", "sandbox_mode=read-only"],
    ],
)
def test_the_users_sandbox_flags_win_over_the_mode(users):
    command = argv(permission_mode="acceptEdits", extra_args=users)
    assert "workspace-write" not in command
    assert command[-1 - len(users) : -1] == users


def test_the_model_is_passed_unless_the_user_names_one():
    assert argv(model="gpt-5.5")[-3:] == ["--model", "gpt-5.5", "-"]
    assert "--model" not in argv(model="gpt-5.5", extra_args=["-m", "o4"])
    assert argv(model="gpt-5.5", extra_args=["-m", "o4"])[-3:] == ["-m", "o4", "-"]


def test_extra_args_come_last_before_the_prompt_marker():
    extra = ["--search", "-c", "model_reasoning_effort=high"]
    assert argv(extra_args=extra)[-4:] == [*extra, "-"]


def test_resume_names_the_thread_after_every_option():
    assert argv(resume=True, model="gpt-5.5", extra_args=["--search"]) == [
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--sandbox",
        "workspace-write",
        "--model",
        "gpt-5.5",
        "--search",
        "resume",
        "01a209dc-0000-7000-8000-000000000001",
        "-",
    ]


@pytest.mark.parametrize("word", ["resume", "fork", "review"])
def test_subcommands_in_the_extra_args_are_refused(word):
    with pytest.raises(ValueError, match="leave subcommands out"):
        argv(extra_args=[word, "--last"])


def test_an_isolated_run_skips_the_users_config_hooks_and_plugins():
    assert argv(isolate_config=True)[-6:] == [
        "--ignore-user-config",
        "--disable",
        "hooks",
        "--disable",
        "plugins",
        "-",
    ]
    assert "--ignore-user-config" not in argv(isolate_config=False)
    assert (
        argv(isolate_config=True, extra_args=["--ignore-user-config"]).count("--ignore-user-config")
        == 1
    )


def parser_model(tmp_path: Path, config: str | None, **fields: Any) -> str | None:
    if config is not None:
        home = tmp_path / "codex-home"
        home.mkdir(exist_ok=True)
        (home / "config.toml").write_text(config)
    adapter = CodexAdapter()
    adapter.build_command(request(**fields))
    return adapter.new_parser().finish(ProcessOutcome(0, 1, "")).model


def test_the_parser_knows_the_runs_model_which_the_stream_never_names(tmp_path):
    assert parser_model(tmp_path, None) is None
    assert parser_model(tmp_path, None, model="gpt-5.5") == "gpt-5.5"
    assert parser_model(tmp_path, None, model="a", extra_args=["--model=b"]) == "b"
    assert parser_model(tmp_path, None, extra_args=["-c", 'model="o4-mini"']) == "o4-mini"
    assert parser_model(tmp_path, 'model = "gpt-5.4"\n') == "gpt-5.4"
    assert parser_model(tmp_path, 'model = "gpt-5.4"\n', isolate_config=True) is None
    assert parser_model(tmp_path, "not toml [") is None


def test_a_missing_cli_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setenv("RALPHCTL_CODEX_BIN", str(tmp_path / "nowhere" / "codex"))
    with pytest.raises(AgentUnavailable, match="ralphctl agents install codex"):
        CodexAdapter().check_available()


def test_a_present_cli_is_available():
    CodexAdapter().check_available()


@pytest.mark.parametrize(
    ("env", "files", "ok", "detail"),
    [
        ({"OPENAI_API_KEY": "sk-x"}, {}, True, "$OPENAI_API_KEY is set"),
        ({"CODEX_API_KEY": "sk-x"}, {}, True, "$CODEX_API_KEY is set"),
        ({}, {".codex/auth.json": "{}"}, True, "logged in"),
        ({}, {".codex/config.toml": 'model_provider = "ollama"\n'}, True, "'ollama'"),
        ({}, {".codex/config.toml": 'model_provider = "openai"\n'}, False, "codex login"),
        ({}, {}, False, "run `codex login` or set $OPENAI_API_KEY"),
    ],
)
def test_the_configuration_is_checked_offline(tmp_path, env, files, ok, detail):
    for relative, content in files.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(content)
    assert SPEC.configured is not None
    found = SPEC.configured(env, tmp_path)
    assert found.ok is ok
    assert detail in found.detail


def test_codex_home_decides_where_the_login_is_looked_for(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "auth.json").write_text("{}")
    assert SPEC.configured is not None
    assert SPEC.configured({"CODEX_HOME": str(tmp_path / "elsewhere")}, tmp_path).ok


def test_the_registry_knows_codex_and_its_pinned_package():
    assert spec_for("codex") is SPEC
    assert isinstance(adapter_for("codex"), CodexAdapter)
    pinned = json.loads((REPO_ROOT / "package.json").read_text())["dependencies"]
    assert SPEC.package is not None
    assert (SPEC.package.registry, SPEC.package.name) == ("npm", "@openai/codex")
    assert SPEC.package.version == pinned["@openai/codex"]
    assert (SPEC.executable, SPEC.bin_env) == ("codex", "RALPHCTL_CODEX_BIN")
    caps = SPEC.capabilities
    assert (caps.resume, caps.reports_cost, caps.reports_tokens) == (True, False, True)
    assert caps.permission_modes == {"default", "plan", "acceptEdits", "bypassPermissions"}
