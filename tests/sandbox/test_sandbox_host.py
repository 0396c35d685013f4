"""What a sandbox on this machine is made of: the agent's declared paths, what it needs to run,
the places hidden (agents/sandbox_host)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path, PurePosixPath

import pytest

from ralphctl.agents.sandbox_host import agent_writable, git_dirs, host_sandbox

pytestmark = pytest.mark.usefixtures("bwrap")


def test_declared_directories_are_made_and_files_taken_only_when_there(tmp_path: Path) -> None:
    (tmp_path / ".aider.conf.yml").write_text("")
    (tmp_path / ".aider.chat.history.md").write_text("")
    (tmp_path / "oc.json").write_text("{}")
    declared = [".codex/", ".claude.json", ".aider*", "$CODEX_HOME/", "$UNSET/x/", "$DATA/amp/"]
    declared += ["$CONFIG", "$MISSING"]
    elsewhere = tmp_path / "codex-home"
    env = {"CODEX_HOME": str(elsewhere), "DATA": str(tmp_path / "data")}
    env |= {"CONFIG": str(tmp_path / "oc.json"), "MISSING": str(tmp_path / "missing.json")}

    found = agent_writable(declared, tmp_path, env)

    assert found == [
        tmp_path / ".codex",
        tmp_path / ".aider.chat.history.md",
        tmp_path / ".aider.conf.yml",
        elsewhere,
        tmp_path / "data" / "amp",
        tmp_path / "oc.json",
    ]
    assert not (tmp_path / "missing.json").exists()
    assert (tmp_path / ".codex").is_dir()
    assert elsewhere.is_dir()
    assert not (tmp_path / ".claude.json").exists()


def test_an_agent_installed_under_the_home_stays_runnable(tmp_path: Path, home: Path) -> None:
    package = home / ".npm-global" / "lib" / "node_modules" / "agent-cli"
    package.mkdir(parents=True)
    (package / "cli.js").write_text("#!/bin/sh\necho hi\n")
    (package / "cli.js").chmod(0o755)
    bin_dir = home / ".npm-global" / "bin"
    bin_dir.mkdir()
    (bin_dir / "agent").symlink_to(package / "cli.js")
    script = home / "agent-script.json"
    script.write_text("{}")
    env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin", "HOME": str(home)}

    box = host_sandbox([], tmp_path, argv=["agent", str(script)], network=True, env=env, home=home)

    assert {
        PurePosixPath(bin_dir),
        PurePosixPath(home / ".npm-global" / "lib"),
        PurePosixPath(script),
    } <= set(box.readable)


def test_a_cli_in_a_virtual_environment_keeps_its_packages_and_its_python(
    tmp_path: Path, home: Path
) -> None:
    base = home / ".pyenv" / "versions" / "3.12.4"
    (base / "bin").mkdir(parents=True)
    venv = home / "tools" / "aider"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\nversion = 3.12.4\n")
    cli = venv / "bin" / "aider"
    cli.write_text(f"#!{venv / 'bin' / 'python'}\nimport aider\n")
    cli.chmod(0o755)
    env = {"PATH": "/usr/bin", "HOME": str(home)}

    box = host_sandbox([], tmp_path, argv=[str(cli)], network=True, env=env, home=home)

    assert {PurePosixPath(venv), PurePosixPath(base)} <= set(box.readable)


def test_the_users_runtime_dir_with_its_agent_sockets_is_hidden(tmp_path: Path, home: Path) -> None:
    runtime = tmp_path / "run-user"
    runtime.mkdir()
    env = {"PATH": "/usr/bin", "XDG_RUNTIME_DIR": str(runtime)}

    box = host_sandbox([], tmp_path, argv=["true"], network=True, env=env, home=home)

    assert box.hidden == (PurePosixPath(runtime),)


def git(*args: str | Path) -> None:
    subprocess.run(["git", *map(str, args)], check=True, capture_output=True)


def test_a_work_dir_below_its_repositorys_top_gets_the_repositorys_git_dir(tmp_path: Path) -> None:
    git("init", "-q", tmp_path / "repo")
    (tmp_path / "repo" / "app").mkdir()

    assert git_dirs(tmp_path / "repo" / "app") == [tmp_path / "repo" / ".git"]
    assert git_dirs(tmp_path / "repo") == []  # inside the work dir already


def test_a_worktree_gets_its_own_git_dir_and_the_repositorys(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git("init", "-q", repo)
    git(
        "-C",
        repo,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "0",
    )
    git("-C", repo, "worktree", "add", "-q", tmp_path / "tree")

    assert git_dirs(tmp_path / "tree") == [repo / ".git" / "worktrees" / "tree", repo / ".git"]


def test_without_a_home_only_the_agents_variable_paths_count(tmp_path: Path) -> None:
    env = {"CODEX_HOME": str(tmp_path / "codex")}
    found = agent_writable([".codex/", "$CODEX_HOME/"], tmp_path / "nonexistent", env)
    assert found == [tmp_path / "codex"]
    assert not (tmp_path / "nonexistent").exists()
