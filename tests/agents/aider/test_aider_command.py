"""AiderAdapter.build_command: the exact command line of one iteration, and the spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ralphctl.agents.aider import BASE_FLAGS, BIN_ENV, SPEC, AiderAdapter
from ralphctl.agents.base import AgentRequest, AgentUnavailable, ProcessOutcome
from ralphctl.agents.registry import adapter_for, spec_for
from tests.agents.fake_cli import put_executable

SESSION = "5e55a1d0-0000-4000-8000-00000000a1de"


@pytest.fixture(autouse=True)
def pinned_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    binary = put_executable(tmp_path / "bin" / "aider")
    monkeypatch.setenv(BIN_ENV, str(binary))
    return binary


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    (folder / ".git").mkdir(parents=True)  # a git work tree: Aider may use git, never commit
    return folder


def request(workdir: Path, **fields: object) -> AgentRequest:
    defaults: dict[str, object] = {
        "prompt": "Do the task.",
        "workdir": workdir,
        "iteration": 2,
        "session_id": SESSION,
        "prompt_path": workdir.parent / "private" / f"loop-2-{SESSION}.md",
    }
    return AgentRequest(**{**defaults, **fields})  # type: ignore[arg-type]


def test_the_prompt_goes_in_the_private_file_aider_reads_as_its_message(workdir, pinned_binary):
    command = AiderAdapter().build_command(request(workdir))

    prompt_file = workdir.parent / "private" / f"loop-2-{SESSION}.md"
    log = prompt_file.parent / f"aider-usage-{SESSION}.jsonl"
    assert list(command.argv) == [
        str(pinned_binary),
        "--message-file",
        str(prompt_file),
        *BASE_FLAGS,
        "--analytics-log",
        str(log),
    ]
    assert command.prompt_file == prompt_file
    assert command.env == {"RALPHCTL_ITERATION": "2", "PYTHONUNBUFFERED": "1"}  # live output
    assert command.stdin == b"Do the task."  # what the process layer writes to the file
    assert prompt_file.parent.stat().st_mode & 0o777 == 0o700


def test_every_run_is_headless_plain_and_never_commits():
    assert BASE_FLAGS == (
        "--yes-always",
        "--no-auto-commits",
        "--no-pretty",
        "--no-stream",
        "--no-check-update",
        "--no-show-model-warnings",
        "--no-analytics",
    )


def test_without_a_prompt_path_the_message_is_read_from_stdin(workdir):
    command = AiderAdapter().build_command(request(workdir, prompt_path=None))

    assert list(command.argv[1:3]) == ["--message-file", "/dev/stdin"]
    assert command.prompt_file is None


def test_plan_is_a_dry_run_and_only_expressible_modes_are_declared(workdir):
    argv = AiderAdapter().build_command(request(workdir, permission_mode="plan")).argv

    assert "--dry-run" in argv
    assert SPEC.capabilities.permission_modes == {"acceptEdits", "plan"}


def test_outside_a_git_work_tree_aider_is_kept_from_making_a_repository(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()

    argv = AiderAdapter().build_command(request(plain)).argv

    assert "--no-git" in argv


def test_inside_a_git_work_tree_git_is_left_on(workdir):
    assert "--no-git" not in AiderAdapter().build_command(request(workdir)).argv


def test_the_model_is_passed_unless_the_user_gives_one(workdir):
    argv = list(AiderAdapter().build_command(request(workdir, model="openai/gpt-4.1")).argv)
    assert argv[argv.index("--model") + 1] == "openai/gpt-4.1"

    users = request(workdir, model="x", extra_args=["--model", "sonnet"])
    argv = list(AiderAdapter().build_command(users).argv)
    assert argv.count("--model") == 1
    assert argv[-2:] == ["--model", "sonnet"]


@pytest.mark.parametrize(
    "extra", [["--message", "hi"], ["-m", "hi"], ["--pretty"], ["--stream"], ["--auto-commits"]]
)
def test_flags_that_would_break_the_run_are_refused(workdir, extra):
    with pytest.raises(ValueError, match="leave these out"):
        AiderAdapter().build_command(request(workdir, extra_args=extra))


def test_resume_is_refused_aider_has_no_session(workdir):
    assert not SPEC.capabilities.resume
    with pytest.raises(ValueError, match="cannot resume"):
        AiderAdapter().build_command(request(workdir, resume=True))


def test_the_parser_reads_the_analytics_log_of_the_command_last_built(workdir):
    adapter = AiderAdapter()
    argv = list(adapter.build_command(request(workdir)).argv)
    log = Path(argv[argv.index("--analytics-log") + 1])
    event = {"event": "message_send", "properties": {"prompt_tokens": 7, "completion_tokens": 3}}
    log.write_text(json.dumps(event) + "\n")
    parser = adapter.new_parser()
    result = parser.finish(ProcessOutcome(exit_code=0, duration_ms=1, stderr_tail=""))

    assert result.tokens.total == 10
    assert not log.exists()


def test_check_available_names_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setenv(BIN_ENV, str(tmp_path / "nowhere"))

    with pytest.raises(AgentUnavailable, match="ralphctl agents install aider"):
        AiderAdapter().check_available()


def test_the_registry_knows_aider_and_its_pinned_pypi_package():
    assert isinstance(adapter_for("aider"), AiderAdapter)
    package = spec_for("aider").package
    assert package is not None
    assert (package.registry, package.name, package.version, package.executable) == (
        "pypi",
        "aider-chat",
        "0.86.2",
        "aider",
    )
    script = (Path(__file__).parents[3] / "scripts" / "ensure-aider").read_text()
    assert f"RALPHCTL_AIDER_VERSION:-{package.version}" in script  # tested = installed


@pytest.mark.parametrize(
    ("env", "files", "ok"),
    [
        ({"OPENAI_API_KEY": "k"}, {}, True),
        ({}, {".env": "export ANTHROPIC_API_KEY=k\n"}, True),
        ({}, {".aider.conf.yml": "openai-api-key: k\n"}, True),
        ({}, {".aider.conf.yml": "model: gpt-4.1\n"}, False),
        ({}, {}, False),
    ],
)
def test_configured_is_checked_offline(tmp_path, env, files, ok):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert SPEC.configured is not None

    assert SPEC.configured(env, tmp_path).ok is ok
