"""`ralphctl run --agent aider` driving the REAL Aider (0.86.2, in its own venv) against the
scripted Chat Completions mock, end to end and offline."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agents.aider.harness import RealAider, aider_session
from tests.agents.aider.scenarios import CREATE_NOTES
from tests.agents.pinned import run_ralphctl
from tests.mockapi import ApiError, RecordedRequest, Reply, Usage
from tests.mockapi.turns import Answer

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(180)]

NO_BACKOFF = '[loops.defaults]\nerror_backoff_cap = "0s"\n'


@pytest.fixture(scope="module")
def aider(aider_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealAider]:
    """One mock and one home for the module; each test gets its own project and database."""
    with aider_session(aider_bin, tmp_path_factory.mktemp("aider")) as session:
        yield session


@pytest.fixture
def project(aider: RealAider, tmp_path: Path) -> Path:
    aider.project = tmp_path / "project"
    aider.project.mkdir()
    return aider.project


def database(aider: RealAider) -> Path:
    return aider.project.parent / "ralphctl.db"


def run_loop(aider: RealAider, *extra: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    args = ["run", "--task", "Create notes.txt.", "--agent", "aider", "--cooldown", "0"]
    args += ["--checkpoint-interval", "0", "--max-iterations", "3", "--json", *extra]
    done = run_ralphctl(aider.env, aider.project, database(aider), *args, timeout=170)
    return done, json.loads(done.stdout) if done.stdout.strip() else None


def iterations(aider: RealAider, loop_id: str) -> list[dict[str, Any]]:
    history = ("history", loop_id, "--json")
    shown = run_ralphctl(aider.env, aider.project, database(aider), *history, timeout=60)
    assert shown.returncode == 0, shown.stderr
    found: list[dict[str, Any]] = json.loads(shown.stdout)["iterations"]
    return found


def test_an_api_error_then_an_edit_that_lands_a_file_and_completes_with_the_served_tokens(
    aider, project
):
    aider.server.set_script(
        ApiError(400, "invalid_request_error", "Bad request"),
        Reply(CREATE_NOTES, Usage(input_tokens=1200, output_tokens=80)),
    )
    (project / "ralphctl.toml").write_text(NO_BACKOFF)

    done, summary = run_loop(aider)

    assert done.returncode == 0, done.stderr
    assert (summary["status"], summary["iterations"]) == ("completed", 2)
    assert (project / "notes.txt").read_text() == "hello from the mock\n"
    failed, edited = iterations(aider, summary["loop_id"])
    assert failed["status"] == "error"
    assert "API error status 400" in failed["error_message"]
    assert edited["status"] == "ok"
    assert edited["completion_signal_found"] is True
    assert (edited["tokens_input"], edited["tokens_output"]) == (1200, 80)
    first = aider.server.main_requests[0]
    assert "Create notes.txt." in first.user_texts()[-1]  # the prompt came through its file
    assert not (project / ".git").exists()  # no repository made in a plain folder


def test_a_429_aider_keeps_retrying_parks_the_loop(aider, project):
    """Aider retries a 429 for about 80 s; the iteration timeout ends that sooner here, and
    the 429 it was retrying parks the loop, as it does when Aider gives up by itself (the
    ``rate_limited_429`` cassette)."""

    first_prompt: list[str] = []

    def limited_in_the_first_iteration(request: RecordedRequest) -> Answer:
        """A 429 to every attempt of the first prompt; the next iteration's prompt differs."""
        prompt = request.user_texts()[-1]
        first_prompt[:] = first_prompt or [prompt]
        if prompt == first_prompt[0]:
            return ApiError(429, "rate_limit_exceeded", "Rate limit reached")
        return Reply("Done.\n<promise>COMPLETE</promise>")

    aider.server.set_script(*[limited_in_the_first_iteration] * 40)
    (project / "ralphctl.toml").write_text(
        '[loops.defaults]\nusage_limit_wait = "1s"\ncircuit_breaker_threshold = 1\n'
    )

    # its first 429 comes within ~10 s of the start even on a loaded machine
    done, summary = run_loop(aider, "--iteration-timeout", "20s")

    assert done.returncode == 0, done.stderr
    assert summary["status"] == "completed"
    statuses = [it["status"] for it in iterations(aider, summary["loop_id"])]
    assert statuses == ["rate_limited", "ok"]


def test_plan_mode_is_a_dry_run_whose_refused_edit_is_surfaced(aider, project):
    blocked = CREATE_NOTES.replace("COMPLETE", "BLOCKED: edits are not applied")
    aider.server.set_script(Reply(blocked, Usage(input_tokens=900, output_tokens=60)))

    done, summary = run_loop(aider, "--permission-mode", "plan")

    assert done.returncode == 4, done.stderr
    assert "permission denied for edit" in done.stderr
    assert not (project / "notes.txt").exists()
    (only,) = iterations(aider, summary["loop_id"])
    assert [d["tool_name"] for d in only["permission_denials"]] == ["edit"]
