import asyncio
import os
import subprocess
import time
from pathlib import Path

import pytest

from ralphctl.engine import checkpoint
from ralphctl.engine.checkpoint import (
    GitError,
    branch_at,
    checkpoint_message,
    commit_exists,
    create_checkpoint,
    is_git_work_tree,
    restore,
    uncommitted_changes,
)
from ralphctl.engine.gitindex import StagedTree, copy_index, signature
from ralphctl.engine.statefile import ralph_dir


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "user.name", "t")
    git(tmp_path, "config", "user.email", "t@example.invalid")
    (tmp_path / "README").write_text("hello\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "initial")
    return tmp_path


def test_a_checkpoint_commits_every_change_with_the_ralph_message(repo):
    (repo / "new.py").write_text("x = 1\n")
    (repo / "README").write_text("changed\n")
    outcome = asyncio.run(create_checkpoint(repo, 5))
    assert outcome.sha == git(repo, "rev-parse", "HEAD")
    assert git(repo, "log", "-1", "--format=%s") == "[ralph] Checkpoint iteration 5"
    assert git(repo, "status", "--porcelain") == ""


def test_gitignored_files_and_the_ralph_dir_are_never_committed(repo):
    (repo / ".gitignore").write_text("secret.env\n")
    (repo / "secret.env").write_text("TOKEN=x\n")
    (ralph_dir(repo) / "state.json").write_text("{}")
    asyncio.run(create_checkpoint(repo, 1))
    committed = git(repo, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert committed == [".gitignore"]


def test_no_change_means_no_empty_commit(repo):
    before = git(repo, "rev-parse", "HEAD")
    outcome = asyncio.run(create_checkpoint(repo, 2))
    assert outcome.sha is None
    assert outcome.skipped
    assert git(repo, "rev-parse", "HEAD") == before


def test_a_failing_commit_is_reported_not_raised(repo):
    lock = repo / ".git" / "index.lock"
    lock.write_text("")  # another git command is using the index
    (repo / "a.txt").write_text("a\n")
    head = git(repo, "rev-parse", "HEAD")
    outcome = asyncio.run(create_checkpoint(repo, 3))
    assert outcome.sha is None
    assert "index.lock exists" in (outcome.error or "")
    assert git(repo, "rev-parse", "HEAD") == head
    assert lock.exists()  # not ours to remove


def test_commit_hooks_do_not_run_for_a_checkpoint(repo):
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho ran > hook-ran.txt\necho 'lint failed' >&2\nexit 1\n")
    hook.chmod(0o755)
    (repo / "a.txt").write_text("a\n")
    outcome = asyncio.run(create_checkpoint(repo, 3))
    assert outcome.sha == git(repo, "rev-parse", "HEAD")
    assert not (repo / "hook-ran.txt").exists()


def test_the_users_staged_changes_are_committed_and_the_index_matches_the_checkpoint(repo):
    (repo / "staged.py").write_text("staged = 1\n")
    git(repo, "add", "staged.py")
    (repo / "staged.py").write_text("staged = 2\n")  # staged once, then edited again
    git(repo, "rm", "-q", "README")  # a staged deletion
    (repo / "new.py").write_text("untracked\n")

    outcome = asyncio.run(create_checkpoint(repo, 5))

    assert outcome.sha == git(repo, "rev-parse", "HEAD")
    assert git(repo, "ls-tree", "--name-only", "HEAD").splitlines() == ["new.py", "staged.py"]
    assert git(repo, "show", "HEAD:staged.py") == "staged = 2"
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "diff-files", "--name-only") == ""  # the index's stat data is current
    assert git(repo, "log", "-1", "--format=%gs", "-g") == "ralphctl: " + git(
        repo, "log", "-1", "--format=%s"
    )


def test_outside_a_sub_work_dir_only_what_the_user_staged_is_committed(repo):
    sub = repo / "pkg"
    sub.mkdir()
    (sub / "mod.py").write_text("x = 1\n")
    (repo / "staged.txt").write_text("staged outside\n")
    git(repo, "add", "staged.txt")
    (repo / "README").write_text("edited outside, not staged\n")

    asyncio.run(create_checkpoint(sub, 1))

    committed = git(repo, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert committed == ["pkg/mod.py", "staged.txt"]
    assert git(repo, "status", "--porcelain") == "M README"  # still the user's, unstaged


def test_a_staged_tree_is_committed_as_given_while_the_users_index_is_unchanged(repo, tmp_path):
    (repo / "a.txt").write_text("a\n")
    staged = stage_privately(repo, tmp_path.parent / (tmp_path.name + "-private"))
    (repo / "b.txt").write_text("after the probe looked\n")

    outcome = asyncio.run(create_checkpoint(repo, 5, staged=staged))

    assert git(repo, "rev-parse", "HEAD^{tree}") == staged.tree
    assert (repo / ".git" / "index").read_bytes() == staged.index.read_bytes()
    assert (repo / ".git" / "index").stat().st_mtime_ns == staged.index.stat().st_mtime_ns
    assert git(repo, "status", "--porcelain") == "?? b.txt"
    assert outcome.sha == git(repo, "rev-parse", "HEAD")


def test_a_staged_tree_is_not_used_once_the_user_staged_something_else(repo, tmp_path):
    (repo / "a.txt").write_text("a\n")
    staged = stage_privately(repo, tmp_path.parent / (tmp_path.name + "-private"))
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt")  # the user's index changed: the probe's copy is stale

    asyncio.run(create_checkpoint(repo, 5, staged=staged))

    assert git(repo, "ls-tree", "--name-only", "HEAD").splitlines() == ["README", "a.txt", "b.txt"]
    assert git(repo, "status", "--porcelain") == ""


def test_head_moved_meanwhile_fails_the_checkpoint_and_keeps_the_index(repo, monkeypatch):
    (repo / "a.txt").write_text("a\n")
    index = (repo / ".git" / "index").read_bytes()
    real = checkpoint._git

    async def user_commits_first(workdir, *args, env=None):
        if args[0] == "update-ref":
            tree = git(repo, "rev-parse", "HEAD^{tree}")
            git(
                repo,
                "update-ref",
                "HEAD",
                git(repo, "commit-tree", tree, "-p", "HEAD", "-m", "the user's"),
            )
        return await real(workdir, *args, env=env)

    monkeypatch.setattr(checkpoint, "_git", user_commits_first)
    outcome = asyncio.run(create_checkpoint(repo, 5))

    assert "git update-ref failed" in (outcome.error or "")
    assert git(repo, "log", "-1", "--format=%s") == "the user's"
    assert (repo / ".git" / "index").read_bytes() == index
    assert not (repo / ".git" / "index.lock").exists()


def test_a_first_checkpoint_on_an_unborn_branch_is_a_root_commit(tmp_path):
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "user.name", "t")
    git(tmp_path, "config", "user.email", "t@example.invalid")
    (tmp_path / "a.txt").write_text("1\n")

    outcome = asyncio.run(create_checkpoint(tmp_path, 1))

    assert git(tmp_path, "rev-list", "--count", "HEAD") == "1"
    assert outcome.sha == git(tmp_path, "rev-parse", "HEAD")
    assert git(tmp_path, "status", "--porcelain") == ""


def stage_privately(repo: Path, scratch: Path) -> StagedTree:
    """What the progress probe hands a checkpoint: the work dir staged into a copy of the
    user's index."""
    scratch.mkdir()
    index = scratch / "index"
    user_index = repo / ".git" / "index"
    base = signature(user_index)
    copy_index(user_index, index)
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    subprocess.run(["git", "add", "-A", "--", "."], cwd=repo, env=env, check=True)
    tree = subprocess.run(
        ["git", "write-tree"], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()
    return StagedTree(tree, index, user_index, base)


def test_a_plain_directory_is_not_a_work_tree(tmp_path, repo):
    plain = tmp_path.parent / (tmp_path.name + "-plain")
    plain.mkdir()
    assert not asyncio.run(is_git_work_tree(plain))
    assert asyncio.run(is_git_work_tree(repo))


# -- checkpoints on a configured branch -----------------------------------------------------

BRANCH = "ralph/checkpoints"


def checkpoint_on_branch(repo: Path, iteration: int, branch: str = BRANCH):
    return asyncio.run(create_checkpoint(repo, iteration, branch=branch))


def user_state(repo: Path) -> tuple[str, str, bytes, dict[str, str]]:
    """HEAD, the current branch, the index file and every file: what the user sees."""
    files = {
        str(path.relative_to(repo)): path.read_text()
        for path in sorted(repo.rglob("*"))
        if path.is_file() and ".git" not in path.parts
    }
    head = git(repo, "rev-parse", "HEAD")
    return (
        head,
        git(repo, "branch", "--show-current"),
        (repo / ".git" / "index").read_bytes(),
        files,
    )


def test_a_branch_checkpoint_leaves_head_index_and_files_untouched(repo):
    (repo / "staged.py").write_text("staged = True\n")
    git(repo, "add", "staged.py")
    (repo / "README").write_text("edited, not staged\n")
    (repo / "new.py").write_text("untracked = True\n")
    before = user_state(repo)

    outcome = checkpoint_on_branch(repo, 5)

    assert user_state(repo) == before
    assert outcome.sha == git(repo, "rev-parse", BRANCH)
    assert git(repo, "log", "-1", "--format=%s", BRANCH) == "[ralph] Checkpoint iteration 5"
    assert git(repo, "show", f"{BRANCH}:README") == "edited, not staged"
    assert git(repo, "show", f"{BRANCH}:new.py") == "untracked = True"
    assert git(repo, "show", f"{BRANCH}:staged.py") == "staged = True"


def test_branch_checkpoints_start_from_head_and_chain(repo):
    head = git(repo, "rev-parse", "HEAD")
    (repo / "a.txt").write_text("1\n")
    first = checkpoint_on_branch(repo, 5).sha
    (repo / "a.txt").write_text("2\n")
    second = checkpoint_on_branch(repo, 10).sha

    assert git(repo, "rev-parse", f"{first}^") == head
    assert git(repo, "rev-parse", f"{second}^") == first
    assert git(repo, "rev-parse", BRANCH) == second
    assert git(repo, "rev-parse", "HEAD") == head


def test_an_unchanged_work_tree_makes_no_branch_and_no_empty_commit(repo):
    assert checkpoint_on_branch(repo, 1).skipped
    assert git(repo, "branch", "--list", BRANCH) == ""

    (repo / "a.txt").write_text("1\n")
    first = checkpoint_on_branch(repo, 2).sha
    again = checkpoint_on_branch(repo, 3)

    assert again.sha is None
    assert again.skipped
    assert git(repo, "rev-parse", BRANCH) == first


def test_gitignored_files_and_the_ralph_dir_stay_off_the_branch(repo):
    (repo / ".gitignore").write_text("secret.env\n")
    (repo / "secret.env").write_text("TOKEN=x\n")
    (ralph_dir(repo) / "state.json").write_text("{}")

    checkpoint_on_branch(repo, 1)

    assert git(repo, "show", "--name-only", "--format=", BRANCH).splitlines() == [".gitignore"]


def test_an_invalid_branch_name_is_an_error_not_a_crash(repo):
    (repo / "a.txt").write_text("1\n")
    for bad in ("has space", "a..b", "-dash", "@{-1}", "HEAD"):
        outcome = checkpoint_on_branch(repo, 1, branch=bad)
        assert outcome.sha is None
        assert outcome.error == f"{bad!r} is not a valid branch name"


def test_the_checked_out_branch_gets_an_ordinary_checkpoint(repo):
    current = git(repo, "branch", "--show-current")
    (repo / "a.txt").write_text("1\n")

    outcome = checkpoint_on_branch(repo, 4, branch=current)

    assert outcome.sha == git(repo, "rev-parse", "HEAD")
    assert git(repo, "status", "--porcelain") == ""


def test_a_branch_checked_out_in_another_work_tree_is_left_alone(repo, tmp_path):
    git(repo, "branch", BRANCH)
    other = tmp_path.parent / (tmp_path.name + "-worktree")
    git(repo, "worktree", "add", "-q", str(other), BRANCH)
    tip = git(repo, "rev-parse", BRANCH)
    (repo / "a.txt").write_text("1\n")

    outcome = checkpoint_on_branch(repo, 1)

    assert outcome.error == f"branch {BRANCH!r} is checked out in {other}: cannot commit to it"
    assert git(repo, "rev-parse", BRANCH) == tip


def test_a_branch_checkpoint_of_a_subdirectory_keeps_the_rest_of_the_tree(repo):
    sub = repo / "pkg"
    sub.mkdir()
    (sub / "mod.py").write_text("x = 1\n")
    (repo / "outside.txt").write_text("not the loop's\n")

    checkpoint_on_branch(sub, 1)

    assert git(repo, "show", "--name-only", "--format=", BRANCH).splitlines() == ["pkg/mod.py"]
    assert git(repo, "show", f"{BRANCH}:README") == "hello"


def test_a_repository_without_commits_gets_a_root_checkpoint(tmp_path):
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "user.name", "t")
    git(tmp_path, "config", "user.email", "t@example.invalid")
    (tmp_path / "a.txt").write_text("1\n")

    outcome = checkpoint_on_branch(tmp_path, 1)

    assert git(tmp_path, "rev-list", "--count", BRANCH) == "1"
    assert outcome.sha == git(tmp_path, "rev-parse", BRANCH)
    assert git(tmp_path, "status", "--porcelain") == "?? a.txt"


def test_a_refused_branch_update_is_an_error_not_a_crash(repo):
    git(repo, "branch", "ralph")  # refs/heads/ralph is a file: ralph/... cannot be created
    (repo / "a.txt").write_text("1\n")

    outcome = checkpoint_on_branch(repo, 1)

    assert outcome.sha is None
    assert "git update-ref failed" in (outcome.error or "")


# -- going back -----------------------------------------------------------------------------


def test_a_clean_work_tree_has_nothing_to_lose(repo):
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore logs")
    (repo / "run.log").write_text("ignored files are never lost\n")

    assert asyncio.run(uncommitted_changes(repo)) == ""


def test_a_restore_stays_inside_the_work_dir(repo):
    sub = repo / "pkg"
    sub.mkdir()
    (sub / "mod.py").write_text("x = 1\n")
    sha = asyncio.run(create_checkpoint(sub, 1)).sha
    assert sha is not None
    (sub / "mod.py").write_text("x = 2\n")
    (sub / "new.py").write_text("added later\n")
    (repo / "README").write_text("outside the work dir\n")

    asyncio.run(restore(sub, sha))

    assert sorted(p.name for p in sub.iterdir()) == ["mod.py"]
    assert (sub / "mod.py").read_text() == "x = 1\n"
    assert (repo / "README").read_text() == "outside the work dir\n"


def test_a_branch_needs_a_valid_new_name(repo):
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "branch", "taken")

    with pytest.raises(GitError, match="not a valid branch name"):
        asyncio.run(branch_at(repo, "bad..name", head))
    with pytest.raises(GitError, match="already exists"):
        asyncio.run(branch_at(repo, "taken", head))
    assert asyncio.run(branch_at(repo, "free", head)) == "free"


def test_a_commit_exists_only_in_its_repository(repo):
    assert asyncio.run(commit_exists(repo, git(repo, "rev-parse", "HEAD")))
    assert not asyncio.run(commit_exists(repo, "0" * 40))


# -- what a checkpoint costs -----------------------------------------------------------------

FAKE_GPG = """#!/bin/sh
cat > /dev/null
echo '[GNUPG:] SIG_CREATED ' >&2
printf -- '-----BEGIN PGP SIGNATURE-----\\n\\nfake\\n-----END PGP SIGNATURE-----\\n'
"""


def git_commands(monkeypatch) -> list[tuple[str, ...]]:
    """The git commands the checkpoints run, in order."""
    calls: list[tuple[str, ...]] = []
    real = checkpoint._git

    async def counting(workdir, *args, env=None):
        calls.append(args)
        return await real(workdir, *args, env=env)

    monkeypatch.setattr(checkpoint, "_git", counting)
    return calls


def test_a_run_asks_git_once_whether_to_sign_and_signs_every_checkpoint(repo, monkeypatch):
    gpg = repo.parent / "fake-gpg"
    gpg.write_text(FAKE_GPG)
    gpg.chmod(0o755)
    git(repo, "config", "gpg.program", str(gpg))
    git(repo, "config", "commit.gpgSign", "true")
    calls = git_commands(monkeypatch)
    memory = checkpoint.CheckpointMemory()

    for n in (5, 10):
        (repo / "a.txt").write_text(f"iteration {n}\n")
        assert asyncio.run(create_checkpoint(repo, n, memory=memory)).sha is not None

    assert [call[0] for call in calls].count("config") == 1
    for commit in ("HEAD", "HEAD~1"):
        assert "gpgsig -----BEGIN PGP SIGNATURE-----" in git(repo, "cat-file", "-p", commit)


def test_a_checkpoint_of_a_staged_tree_runs_four_git_commands(repo, tmp_path, monkeypatch):
    (repo / "a.txt").write_text("a\n")
    staged = stage_privately(repo, tmp_path.parent / (tmp_path.name + "-private"))
    calls = git_commands(monkeypatch)

    asyncio.run(create_checkpoint(repo, 5, staged=staged))

    assert [call[0] for call in calls] == ["rev-parse", "config", "commit-tree", "update-ref"]


def test_a_runs_next_checkpoint_commits_on_the_head_it_left_without_reading_it(repo, monkeypatch):
    memory = checkpoint.CheckpointMemory()
    (repo / "a.txt").write_text("1\n")
    first = asyncio.run(create_checkpoint(repo, 5, memory=memory)).sha
    calls = git_commands(monkeypatch)
    (repo / "a.txt").write_text("2\n")

    second = asyncio.run(create_checkpoint(repo, 10, memory=memory)).sha

    assert [call[0] for call in calls] == ["add", "write-tree", "commit-tree", "update-ref"]
    assert git(repo, "rev-parse", "HEAD", "HEAD~1").splitlines() == [second, first]
    assert git(repo, "status", "--porcelain") == ""


def test_head_moved_by_the_user_between_checkpoints_is_committed_on(repo):
    memory = checkpoint.CheckpointMemory()
    (repo / "a.txt").write_text("1\n")
    asyncio.run(create_checkpoint(repo, 5, memory=memory))
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    theirs = git(repo, "commit-tree", tree, "-p", "HEAD", "-m", "the user's")
    git(repo, "update-ref", "HEAD", theirs)  # HEAD moves, the user's index stays as it was
    (repo / "a.txt").write_text("2\n")

    outcome = asyncio.run(create_checkpoint(repo, 10, memory=memory))

    assert outcome.sha == git(repo, "rev-parse", "HEAD")
    assert git(repo, "rev-parse", "HEAD~1") == theirs
    assert git(repo, "status", "--porcelain") == ""


def test_files_as_the_last_checkpoint_left_them_are_committed_when_head_went_back(repo):
    memory = checkpoint.CheckpointMemory()
    (repo / "a.txt").write_text("1\n")
    first = asyncio.run(create_checkpoint(repo, 5, memory=memory)).sha
    index = signature(repo / ".git" / "index")
    git(repo, "reset", "-q", "--soft", "HEAD~1")
    assert signature(repo / ".git" / "index") == index  # only HEAD moved

    outcome = asyncio.run(create_checkpoint(repo, 10, memory=memory))

    assert outcome.sha not in (None, first)
    assert git(repo, "rev-parse", "HEAD^{tree}") == git(repo, "rev-parse", f"{first}^{{tree}}")
    assert git(repo, "log", "--format=%s").splitlines() == [checkpoint_message(10), "initial"]


def test_after_the_user_commits_the_next_checkpoint_reads_head_again(repo, monkeypatch):
    memory = checkpoint.CheckpointMemory()
    (repo / "a.txt").write_text("1\n")
    asyncio.run(create_checkpoint(repo, 5, memory=memory))
    (repo / "a.txt").write_text("the user's\n")
    git(repo, "commit", "-q", "-am", "the user's")
    (repo / "a.txt").write_text("2\n")
    calls = git_commands(monkeypatch)

    asyncio.run(create_checkpoint(repo, 10, memory=memory))

    assert [call[0] for call in calls].count("rev-parse") == 1
    assert git(repo, "log", "-3", "--format=%s").splitlines() == [
        checkpoint_message(10),
        "the user's",
        checkpoint_message(5),
    ]


def test_a_tree_still_being_written_is_awaited_beside_the_head_lookup(repo, tmp_path):
    (repo / "a.txt").write_text("a\n")
    staged = stage_privately(repo, tmp_path.parent / (tmp_path.name + "-private"))

    async def written_meanwhile() -> StagedTree:
        await asyncio.sleep(0.05)
        return staged

    outcome = asyncio.run(create_checkpoint(repo, 5, staged=written_meanwhile()))

    assert outcome.sha == git(repo, "rev-parse", "HEAD")
    assert git(repo, "rev-parse", "HEAD^{tree}") == staged.tree


def test_a_failed_head_lookup_still_waits_for_the_tree_being_written(repo, monkeypatch):
    written: list[str] = []

    async def head_fails(workdir):
        raise checkpoint.GitError("git rev-parse failed: broken")

    async def tree_written_later() -> None:
        await asyncio.sleep(0.05)
        written.append("tree")

    monkeypatch.setattr(checkpoint, "_head", head_fails)
    outcome = asyncio.run(create_checkpoint(repo, 5, staged=tree_written_later()))

    assert outcome.error == "git rev-parse failed: broken"
    assert written == ["tree"]  # no git of the probe's still runs on its index


def test_a_missing_git_is_an_error_not_a_crash(repo, monkeypatch):
    monkeypatch.setenv("PATH", str(repo / "no-such-dir"))
    outcome = asyncio.run(create_checkpoint(repo, 5))
    assert outcome.sha is None
    assert "cannot run git" in (outcome.error or "")


def test_a_git_that_hangs_is_stopped_and_reported(repo, monkeypatch):
    bin_dir = repo.parent / "slow-bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text("#!/bin/sh\nexec sleep 30\n")
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(checkpoint, "GIT_TIMEOUT_S", 0.2)
    started = time.monotonic()

    outcome = asyncio.run(create_checkpoint(repo, 5))

    assert "timed out" in (outcome.error or "")
    assert time.monotonic() - started < 5
