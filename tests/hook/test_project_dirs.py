"""Where the hook and ``arm`` may write: never into a directory no user means as a project,
never through a symlinked ``.ralph``, and nothing at all for input it cannot use."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ralphctl.engine.starting import InvalidSpec, LoopRequest, prepare_loop
from ralphctl.hook.arming import ArmError, arm
from ralphctl.hook.control import NO_LOOP, cancel, list_loops
from ralphctl.hook.handler import respond
from ralphctl.hook.paths import UnsafeDirectory, project_dir
from tests.hook.helpers import SESSION, arm_cli, fields_of, hook_env, session_tracker, stop_event


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def env_without_project(**extra: str) -> dict[str, str]:
    env = hook_env(Path("/unused"), None, **extra)
    del env["CLAUDE_PROJECT_DIR"]
    return env


def test_invalid_input_writes_nothing_into_the_directory_stdin_names(project, capfd):
    event = stop_event(session="../not-an-id", cwd=str(project))
    line, record = respond(event, [], env_without_project(), time.time())
    assert (line, record) == (None, None)
    assert "no valid session_id" in capfd.readouterr().err
    assert list(project.iterdir()) == []


def test_a_stop_naming_a_system_directory_is_allowed_and_writes_nothing(capfd):
    before = os.path.lexists("/.ralph")
    line, _ = respond(stop_event(cwd="/"), [], env_without_project(), time.time())
    assert line is None
    assert "/ cannot be a loop's work dir: it is the filesystem root" in capfd.readouterr().err
    assert os.path.lexists("/.ralph") == before


def test_the_project_dir_refuses_system_directories_and_links_to_them(tmp_path):
    link = tmp_path / "root-link"
    link.symlink_to("/")
    for refused in ("/", "/proc/self/cwd", "/etc", str(link)):
        with pytest.raises(UnsafeDirectory, match="cannot be a loop's work dir"):
            project_dir(refused, None)
    assert project_dir(str(tmp_path), None) == str(tmp_path)


def test_arm_refuses_a_system_directory_and_the_home_directory(project, monkeypatch):
    with pytest.raises(ArmError, match="filesystem root"):
        arm("/", "Fix it", session_id=SESSION)
    with pytest.raises(ArmError, match="is not a directory"):
        arm(str(project / "missing"), "Fix it", session_id=SESSION)
    monkeypatch.setenv("HOME", str(project))
    with pytest.raises(ArmError, match="home directory itself"):
        arm(str(project), "Fix it", session_id=SESSION)
    assert not (project / ".ralph").exists()


def test_arm_never_writes_through_a_symlinked_sessions_dir(project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / ".ralph").mkdir()
    (project / ".ralph" / "sessions").symlink_to(elsewhere)
    done = arm_cli(project, "Fix it")
    assert done.returncode == 2
    assert "is a symlink or not a directory" in done.stderr
    assert list(elsewhere.iterdir()) == []


def test_arm_never_writes_through_a_symlinked_ralph_dir(project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / ".ralph").symlink_to(elsewhere)
    with pytest.raises(ArmError, match="symlink"):
        arm(str(project), "Fix it")  # pending: no session
    assert list(elsewhere.iterdir()) == []


def test_the_hook_never_follows_a_symlinked_ralph_dir(project, tmp_path, capfd):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    arm(str(elsewhere), "Fix it", session_id=SESSION)  # a live loop, of another directory
    (project / ".ralph").symlink_to(elsewhere / ".ralph")
    before = fields_of(session_tracker(elsewhere))
    line, _ = respond(stop_event(), [], hook_env(project), time.time())
    assert line is None
    assert "is a symlink or not a directory" in capfd.readouterr().err
    assert fields_of(session_tracker(elsewhere)) == before
    assert not (elsewhere / ".ralph" / "hook.log").exists()


@pytest.mark.parametrize("workdir", ["/", "/proc/self/cwd", "/etc"])
def test_starting_a_loop_there_is_refused_by_the_same_rule(workdir):
    with pytest.raises(InvalidSpec, match="cannot be a loop's work dir"):
        prepare_loop(LoopRequest(task="Fix it", workdir=Path(workdir)))


def test_starting_a_loop_through_a_link_to_the_root_is_refused(tmp_path):
    link = tmp_path / "root-link"
    link.symlink_to("/")
    with pytest.raises(InvalidSpec, match=r"\(really /\)"):
        prepare_loop(LoopRequest(task="Fix it", workdir=link))


def test_status_and_cancel_report_a_symlinked_ralph_dir_and_never_follow_it(project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    arm(str(elsewhere), "Fix it", session_id=SESSION)
    (project / ".ralph").symlink_to(elsewhere / ".ralph")
    (info,) = list_loops(str(project))
    assert info.problem is not None
    assert "symlink" in info.problem
    assert cancel(str(project), SESSION).message == NO_LOOP
    assert fields_of(session_tracker(elsewhere))["active"] is True
