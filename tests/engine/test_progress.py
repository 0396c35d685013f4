"""The no-progress fingerprint: one git tree per iteration, reused, and never the user's index."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.registry import adapter_for
from ralphctl.domain.config import LoopConfig
from ralphctl.engine import checkpoint, progress
from ralphctl.engine.loops import new_loop as new_loop_record
from ralphctl.engine.progress import ProgressProbe
from ralphctl.engine.rollback import find_target, restore_to
from ralphctl.engine.runner import LoopRunner
from ralphctl.store.repository import Store
from tests.engine.test_runner import DONE, new_loop, run

IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]


def git(workdir: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *IDENTITY, *args], cwd=workdir, capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q")
    (path / "a.txt").write_text("a\n")
    (path / ".gitignore").write_text("*.log\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "start")
    return path


@pytest.fixture
def probe(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProgressProbe]:
    monkeypatch.setattr(tempfile, "tempdir", str(repo.parent))  # to see what is left behind
    opened = ProgressProbe(repo)
    yield opened
    opened.close()


@pytest.fixture
def git_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The git commands the probe runs, in order."""
    calls: list[tuple[str, ...]] = []
    real = progress._git

    async def counting(workdir: Path, *args: str, env: dict[str, str] | None = None) -> str | None:
        calls.append(args)
        return await real(workdir, *args, env=env)

    monkeypatch.setattr(progress, "_git", counting)
    return calls


def tree(call: Coroutine[Any, Any, str | None]) -> str | None:
    return asyncio.run(call)


def test_an_iteration_that_changes_a_file_changes_the_tree(repo: Path, probe: ProgressProbe):
    before = tree(probe.before())
    (repo / "a.txt").write_text("changed\n")
    assert tree(probe.after()) != before


def test_an_iteration_that_changes_nothing_keeps_the_tree(probe: ProgressProbe):
    assert tree(probe.before()) == tree(probe.after())


def test_a_new_untracked_file_is_progress_and_an_ignored_one_is_not(
    repo: Path, probe: ProgressProbe
):
    before = tree(probe.before())
    (repo / "debug.log").write_text("noise\n")
    unchanged = tree(probe.after())
    assert unchanged == before
    (repo / "new.txt").write_text("new\n")
    assert tree(probe.before()) == unchanged  # the last after, reused
    assert tree(probe.after()) != unchanged


def test_the_tree_after_one_iteration_is_the_tree_before_the_next_without_running_git(
    repo: Path, probe: ProgressProbe, git_calls: list[tuple[str, ...]]
):
    tree(probe.before())
    (repo / "a.txt").write_text("changed\n")
    after = tree(probe.after())
    runs = len(git_calls)
    assert tree(probe.before()) == after
    assert len(git_calls) == runs


def test_a_look_that_finds_nothing_new_leaves_the_private_index_as_it_was(
    repo: Path, probe: ProgressProbe
):
    """(Files changed within a second of an index write are "racily clean": git then checks
    their content and writes the index again, which keeps every change seen.)"""
    past = time.time() - 10
    for path in (repo / "a.txt", repo / ".gitignore"):
        os.utime(path, (past, past))
    tree(probe.before())
    (repo / "a.txt").write_text("changed\n")
    os.utime(repo / "a.txt", (past, past))
    tree(probe.after())
    (index,) = repo.parent.glob("ralphctl-progress-*/index")
    written = index.stat()
    probe.forget()
    tree(probe.before())
    now = index.stat()
    assert (now.st_ino, now.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)


def test_at_the_top_of_the_work_tree_git_add_gets_no_pathspec_to_match(
    repo: Path, probe: ProgressProbe, git_calls: list[tuple[str, ...]]
):
    tree(probe.before())
    (repo / "a.txt").write_text("changed\n")
    tree(probe.after())
    adds = [call for call in git_calls if call[0] == "add"]
    assert adds == [("add", "-A"), ("add", "-A", "--dry-run")]


def test_in_a_subdirectory_only_its_own_files_are_progress(repo: Path):
    sub = repo / "pkg"
    sub.mkdir()
    (sub / "mod.py").write_text("x = 1\n")
    probe = ProgressProbe(sub)
    try:
        before = tree(probe.before())
        (repo / "a.txt").write_text("changed outside\n")
        assert tree(probe.after()) == before
        (sub / "mod.py").write_text("x = 2\n")
        assert tree(probe.after()) != before
    finally:
        probe.close()


def test_a_forgotten_tree_is_taken_again_and_sees_what_changed_meanwhile(
    repo: Path, probe: ProgressProbe
):
    tree(probe.before())
    after = tree(probe.after())
    (repo / "a.txt").write_text("edited by a git hook\n")
    probe.forget()
    before = tree(probe.before())
    assert before != after
    assert tree(probe.after()) == before  # the hook's edit is not the next iteration's progress


def test_a_checkpoint_of_the_probes_staged_tree_is_not_the_next_iterations_progress(
    repo: Path, probe: ProgressProbe, git_calls: list[tuple[str, ...]]
):
    tree(probe.before())
    (repo / "b.txt").write_text("b\n")
    after = tree(probe.after())
    staged = asyncio.run(probe.staged())
    assert staged is not None
    assert asyncio.run(checkpoint.create_checkpoint(repo, 1, staged=staged)).sha is not None
    assert tree(probe.before()) == after
    calls = len(git_calls)
    assert tree(probe.after()) == after
    assert [call[0] for call in git_calls[calls:]] == ["add"]  # the user's new index is ours


def test_a_forgotten_or_outdated_look_is_not_handed_to_a_checkpoint(
    repo: Path, probe: ProgressProbe
):
    tree(probe.before())
    (repo / "b.txt").write_text("b\n")
    tree(probe.after())
    (repo / "c.txt").write_text("c\n")
    git(repo, "add", "c.txt")  # the user's index changed since the probe's copy
    assert asyncio.run(probe.staged()) is None
    tree(probe.after())
    assert asyncio.run(probe.staged()) is not None
    probe.forget()
    assert asyncio.run(probe.staged()) is None


def test_a_file_changed_twice_with_the_same_status_is_progress_each_time(
    repo: Path, probe: ProgressProbe
):
    first = tree(probe.before())
    (repo / "a.txt").write_text("one\n")
    second = tree(probe.after())
    (repo / "a.txt").write_text("two\n")  # " M a.txt" both times: the content tells
    third = tree(probe.after())
    (repo / "a.txt").unlink()
    fourth = tree(probe.after())
    assert len({first, second, third, fourth}) == 4


def test_content_that_comes_back_is_the_same_content(repo: Path, probe: ProgressProbe):
    before = tree(probe.before())
    (repo / "a.txt").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    changed = tree(probe.after())
    (repo / "a.txt").write_text("a\n")
    (repo / "new.txt").unlink()
    assert tree(probe.after()) != changed
    probe.close()  # a new copy of the user's index, compared by tree
    assert tree(probe.before()) != changed
    assert tree(probe.before()) == tree(probe.after())
    assert before is not None


def test_looks_that_find_nothing_changed_write_no_tree(
    repo: Path, probe: ProgressProbe, git_calls: list[tuple[str, ...]]
):
    an_hour_ago = time.time() - 3600  # git re-checks files as recent as its index ("racy")
    for path in (repo / "a.txt", repo / ".gitignore"):
        os.utime(path, (an_hour_ago, an_hour_ago))
    first = tree(probe.before())
    probe.forget()
    assert tree(probe.before()) == first
    assert [call[0] for call in git_calls].count("write-tree") == 0


def test_the_first_looks_tree_is_written_for_the_first_checkpoint(repo: Path, probe: ProgressProbe):
    tree(probe.before())  # on the way to the first spawn: no tree written
    tree(probe.after())
    staged = asyncio.run(probe.staged())
    assert staged is not None
    assert staged.tree == git(repo, "write-tree").strip()  # the user's index holds the same content


def test_the_agent_committing_its_work_is_still_progress(repo: Path, probe: ProgressProbe):
    before = tree(probe.before())
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "-m", "agent's commit")
    assert tree(probe.after()) != before


def test_a_commit_of_staged_content_between_iterations_is_not_progress(
    repo: Path, probe: ProgressProbe
):
    tree(probe.before())
    (repo / "b.txt").write_text("b\n")
    after = tree(probe.after(stage=True))  # as before a checkpoint
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "[ralph] Checkpoint iteration 1")
    probe.forget()
    assert tree(probe.before()) == after
    assert tree(probe.after()) == after


def test_a_commit_after_a_light_look_is_progress_once_as_its_content_was_never_staged(
    repo: Path, probe: ProgressProbe
):
    tree(probe.before())
    (repo / "b.txt").write_text("b\n")
    after = tree(probe.after())  # named by ``git add --dry-run``: its tree was never written
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the agent's commit")
    probe.forget()
    again = tree(probe.before())
    assert again != after
    assert tree(probe.after()) == again


def test_a_file_the_user_tracks_although_it_is_ignored_counts_as_in_their_index(
    repo: Path, probe: ProgressProbe
):
    (repo / "kept.log").write_text("1\n")
    git(repo, "add", "-f", "kept.log")
    before = tree(probe.before())
    (repo / "kept.log").write_text("2\n")
    assert tree(probe.after()) != before


def test_the_users_index_and_head_are_never_touched(repo: Path, probe: ProgressProbe):
    index = repo / ".git" / "index"
    stamp, head = index.stat().st_mtime_ns, git(repo, "rev-parse", "HEAD")
    (repo / "untracked.txt").write_text("x\n")
    tree(probe.before())
    (repo / "a.txt").write_text("changed\n")
    tree(probe.after())
    assert index.stat().st_mtime_ns == stamp
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == " M a.txt\n?? untracked.txt\n"


def test_the_throw_away_index_is_kept_for_the_run_and_removed_by_close(
    repo: Path, probe: ProgressProbe
):
    tree(probe.before())
    (repo / "a.txt").write_text("changed\n")
    tree(probe.after())
    assert len(list(repo.parent.glob("ralphctl-progress-*"))) == 1
    probe.close()
    assert list(repo.parent.glob("ralphctl-progress-*")) == []


def test_a_repository_with_nothing_staged_yet_has_a_tree(tmp_path: Path):
    git(tmp_path, "init", "-q")
    probe = ProgressProbe(tmp_path)
    before = tree(probe.before())
    (tmp_path / "first.txt").write_text("1\n")
    after = tree(probe.after())
    probe.close()
    assert before is not None
    assert after not in (None, before)


def test_outside_a_git_repository_there_is_no_tree(tmp_path: Path):
    probe = ProgressProbe(tmp_path)
    assert tree(probe.before()) is None
    probe.close()


def test_a_git_work_tree_is_recognised_and_a_plain_directory_or_the_git_dir_is_not(
    repo: Path, tmp_path: Path
):
    plain = tmp_path / "plain"
    plain.mkdir()
    for workdir, expected in ((repo, True), (plain, False), (repo / ".git", False)):
        probe = ProgressProbe(workdir)
        assert asyncio.run(probe.is_work_tree()) is expected
        probe.close()


def test_looking_for_the_work_tree_also_finds_the_index_so_the_first_tree_needs_no_rev_parse(
    probe: ProgressProbe, git_calls: list[tuple[str, ...]]
):
    assert asyncio.run(probe.is_work_tree())
    assert tree(probe.before()) is not None
    assert [call[0] for call in git_calls] == ["rev-parse", "add"]  # its tree: when needed


def test_a_failed_git_gives_no_tree_and_the_next_one_starts_from_a_fresh_copy(
    repo: Path, probe: ProgressProbe, monkeypatch: pytest.MonkeyPatch
):
    good = tree(probe.before())
    assert tree(probe.after()) == good
    assert asyncio.run(probe.staged()) is not None  # its tree written, as for a checkpoint
    real = progress._git

    async def add_fails(workdir: Path, *args: str, env: dict[str, str] | None = None) -> str | None:
        return None if args[0] == "add" else await real(workdir, *args, env=env)

    monkeypatch.setattr(progress, "_git", add_fails)
    assert tree(probe.after()) is None
    assert list(repo.parent.glob("ralphctl-progress-*")) == []
    monkeypatch.setattr(progress, "_git", real)
    assert tree(probe.before()) == good


# -- in the runner -------------------------------------------------------------------------

EDIT = {"edits": [{"path": "work.txt", "append": "x\n"}]}


def test_a_run_takes_one_tree_per_iteration_plus_one(
    db: Store, repo: Path, git_calls: list[tuple[str, ...]]
):
    steps: list[dict[str, Any]] = [{**EDIT, "text": f"step {n}"} for n in range(4)]
    loop, config = new_loop(db, repo, [*steps, {"text": DONE}])
    run(db, loop, config)
    assert [it.files_changed for it in db.iterations(loop.id)] == [1, 1, 1, 1, 0]
    assert sum(call[0] == "add" for call in git_calls) == 5 + 1


def test_a_new_loop_asks_git_once_where_its_repository_is(
    tmp_path: Path, repo: Path, git_calls: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch
):
    checkpoint_calls: list[tuple[str, ...]] = []
    real = checkpoint._git

    async def counting(workdir: Path, *args: str, env: dict[str, str] | None = None):
        checkpoint_calls.append(args)
        return await real(workdir, *args, env=env)

    monkeypatch.setattr(checkpoint, "_git", counting)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{**EDIT, "text": DONE}]}))
    config = LoopConfig(cooldown=0, checkpoint_interval=0, agent="scripted", script=str(script))
    adapter = adapter_for("scripted", options={"script": str(script)})
    loop = new_loop_record("Write the files.", repo, config)
    url = str(tmp_path / "new.db")

    asyncio.run(LoopRunner(lambda: Store.open(url), adapter, loop, config).run())

    where = ("rev-parse", "--is-inside-work-tree", "--show-prefix", "--git-path", "index")
    assert [call for call in git_calls + checkpoint_calls if call[0] == "rev-parse"] == [where]


def test_a_run_with_checkpoints_looks_once_per_iteration_and_writes_trees_for_them_only(
    db: Store, repo: Path, git_calls: list[tuple[str, ...]]
):
    hook = repo / ".git" / "hooks" / "pre-commit"  # checkpoints run no commit hook
    hook.write_text("#!/bin/sh\necho touched >> hook-output.txt\n")
    hook.chmod(0o755)
    steps: list[dict[str, Any]] = [{**EDIT, "text": "edited"}, {"text": "thinking"}]
    loop, config = new_loop(db, repo, [*steps, {**EDIT, "text": DONE}], checkpoint_interval=2)
    run(db, loop, config)
    assert not (repo / "hook-output.txt").exists()
    assert [it.files_changed for it in db.iterations(loop.id)] == [1, 0, 1]
    assert [c.iteration for c in db.checkpoints(loop.id)] == [2, 3]
    probe_calls = [call[0] for call in git_calls]
    # one look per iteration, plus the first; and the last checkpoint stages what the last
    # look (a light one: iteration 3 is no multiple of 2) saw
    assert probe_calls.count("add") == 3 + 1 + 1
    assert probe_calls.count("write-tree") == 2  # one per checkpoint
    assert git(repo, "status", "--porcelain") == ""


def test_a_runs_checkpoints_keep_what_the_user_staged_and_can_be_restored(db: Store, repo: Path):
    (repo / "mine.txt").write_text("staged by the user\n")
    git(repo, "add", "mine.txt")
    steps: list[dict[str, Any]] = [{**EDIT, "text": f"step {n}"} for n in range(4)]
    loop, config = new_loop(db, repo, [*steps, {"text": DONE}], checkpoint_interval=2)
    run(db, loop, config)
    first, *_ = db.checkpoints(loop.id)
    assert git(repo, "show", f"{first.commit_sha}:mine.txt") == "staged by the user\n"
    assert git(repo, "show", f"{first.commit_sha}:work.txt") == "x\nx\n"
    assert git(repo, "status", "--porcelain") == ""

    target = asyncio.run(find_target(db, loop.id, first.iteration))
    asyncio.run(restore_to(target, force=False))

    assert (repo / "work.txt").read_text() == "x\nx\n"
    assert (repo / "mine.txt").exists()


# -- light looks: ``git add --dry-run`` names what changed, the index stays as staged ----------


def test_a_light_look_that_finds_changes_leaves_the_private_index_unwritten(
    repo: Path, probe: ProgressProbe
):
    before = tree(probe.before())
    (index,) = repo.parent.glob("ralphctl-progress-*/index")
    written = index.stat()
    (repo / "a.txt").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    assert tree(probe.after()) != before
    now = index.stat()
    assert (now.st_ino, now.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)


def test_light_looks_compare_content_not_stat_data(repo: Path, probe: ProgressProbe):
    looks = [tree(probe.before())]
    (repo / "a.txt").write_text("one\n")
    looks.append(tree(probe.after()))
    (repo / "a.txt").write_text("two\n")  # named both times, same size: the content tells
    looks.append(tree(probe.after()))
    assert len(set(looks)) == 3
    (repo / "a.txt").write_text("two\n")  # written again, the same bytes
    os.chmod(repo / "a.txt", 0o644)
    assert tree(probe.after()) == looks[-1]
    os.chmod(repo / "a.txt", 0o755)  # git stages the executable bit
    assert tree(probe.after()) != looks[-1]


def test_a_path_git_names_oddly_is_still_read(repo: Path, probe: ProgressProbe):
    odd = repo / "n e'w ü.txt"
    before = tree(probe.before())
    odd.write_text("1\n")
    first = tree(probe.after())
    odd.write_text("2\n")
    second = tree(probe.after())
    assert len({before, first, second}) == 3
    assert tree(probe.after()) == second


def test_in_a_subdirectory_light_looks_read_paths_from_the_top_of_the_work_tree(repo: Path):
    (repo / "sub").mkdir()
    (repo / "sub" / "s.txt").write_text("s\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "sub")
    probe = ProgressProbe(repo / "sub")
    try:
        looks = [tree(probe.before())]
        for text in ("one\n", "two\n"):
            (repo / "sub" / "s.txt").write_text(text)
            looks.append(tree(probe.after()))
        assert len(set(looks)) == 3
        assert tree(probe.after()) == looks[-1]
    finally:
        probe.close()


def test_a_light_look_naming_too_many_paths_stages_them(
    repo: Path, probe: ProgressProbe, git_calls: list[tuple[str, ...]], monkeypatch
):
    monkeypatch.setattr(progress, "MAX_LISTED", 2)
    before = tree(probe.before())
    for n in range(3):
        (repo / f"new{n}.txt").write_text(f"{n}\n")
    changed = tree(probe.after())
    assert changed != before
    assert git_calls[-2:] == [("add", "-A", "--dry-run"), ("add", "-A", "-v")]
    assert tree(probe.after()) == changed
    assert git_calls[-1] == ("add", "-A", "--dry-run")


def test_a_submodules_new_commit_is_progress_and_gets_staged(repo: Path, probe: ProgressProbe):
    inner = repo / "inner"
    inner.mkdir()
    git(inner, "init", "-q")
    git(inner, "commit", "-q", "--allow-empty", "-m", "one")
    git(repo, "add", "inner")
    git(repo, "commit", "-q", "-m", "with a submodule")
    probe.forget()
    before = tree(probe.before())
    git(inner, "commit", "-q", "--allow-empty", "-m", "two")
    moved = tree(probe.after())
    assert moved != before
    assert tree(probe.after()) == moved  # staged: named no more


def test_a_checkpoint_after_a_light_look_commits_what_that_look_saw(
    repo: Path, probe: ProgressProbe
):
    tree(probe.before())
    (repo / "b.txt").write_text("b\n")
    tree(probe.after())
    staged = asyncio.run(probe.staged())
    assert staged is not None
    expected = git(repo, "add", "-A", "--dry-run")  # the user's index is still untouched
    assert "b.txt" in expected
    scratch = repo.parent / "expected-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(scratch)}
    subprocess.run(["git", "read-tree", "HEAD"], cwd=repo, env=env, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
    done = subprocess.run(
        ["git", "write-tree"], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    assert staged.tree == done.stdout.strip()
