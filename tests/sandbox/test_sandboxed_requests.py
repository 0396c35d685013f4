"""What an adapter does differently when ralphctl's ``--sandbox`` confines the run
(``AgentRequest.sandboxed``): Codex's own sandbox, the files a CLI writes for ralphctl."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralphctl.agents.base import AgentRequest
from ralphctl.agents.codex import CodexAdapter
from ralphctl.agents.private_dirs import run_file
from ralphctl.domain.config import LoopConfig
from ralphctl.engine.request import agent_request
from tests.agents.fake_cli import put_executable


def request(
    workdir: Path,
    *,
    sandboxed: bool = False,
    permission_mode: str = "acceptEdits",
    extra_args: tuple[str, ...] = (),
) -> AgentRequest:
    return AgentRequest(
        "Go.",
        workdir,
        1,
        "s-1",
        extra_args=extra_args,
        permission_mode=permission_mode,
        prompt_path=workdir.parent / "prompts" / "p.md",
        sandboxed=sandboxed,
    )


@pytest.fixture
def codex(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> CodexAdapter:
    monkeypatch.setenv("RALPHCTL_CODEX_BIN", str(put_executable(tmp_path / "bin" / "codex")))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    return CodexAdapter()


@pytest.mark.parametrize(
    ("mode", "alone", "sandboxed"),
    [
        (
            "acceptEdits",
            ["--sandbox", "workspace-write"],
            ["--dangerously-bypass-approvals-and-sandbox"],
        ),
        ("plan", ["--sandbox", "read-only"], ["--sandbox", "read-only"]),
        ("default", [], []),
    ],
)
def test_codex_edits_without_its_own_sandbox_inside_ours_but_plans_in_its_read_only_one(
    codex: CodexAdapter, tmp_path: Path, mode: str, alone: list[str], sandboxed: list[str]
) -> None:
    def flags(inside: bool) -> list[str]:
        asked = request(tmp_path, permission_mode=mode, sandboxed=inside)
        return list(codex.build_command(asked).argv)[4:-1]  # `codex exec --json --skip-…`, `-`

    assert flags(inside=False) == alone
    assert flags(inside=True) == sandboxed


def test_the_users_own_sandbox_flag_still_wins_inside_ours(
    codex: CodexAdapter, tmp_path: Path
) -> None:
    asked = request(tmp_path, sandboxed=True, extra_args=("-s", "read-only"))
    argv = list(codex.build_command(asked).argv)
    assert "--dangerously-bypass-approvals-and-sandbox" not in argv
    assert argv[-3:] == ["-s", "read-only", "-"]


def test_a_sandboxed_runs_files_for_ralphctl_are_kept_in_the_work_dirs_ralph_folder(
    tmp_path: Path,
) -> None:
    path = run_file(request(tmp_path / "project", sandboxed=True), "usage.json")

    assert path == tmp_path / "project" / ".ralph" / "runs" / "usage.json"
    assert (path.parent.stat().st_mode & 0o777) == 0o700
    assert run_file(request(tmp_path / "project"), "usage.json").parent == tmp_path / "prompts"


def test_a_loop_with_the_sandbox_asks_its_agent_for_a_sandboxed_run(tmp_path: Path) -> None:
    def built(sandbox: bool) -> AgentRequest:
        config = LoopConfig(agent="codex", sandbox=sandbox)
        return agent_request(
            config,
            prompt="Go.",
            workdir=tmp_path,
            iteration=1,
            session_id="s",
            remaining_cost_usd=None,
        )

    assert built(True).sandboxed
    assert not built(False).sandboxed
