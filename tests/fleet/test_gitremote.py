"""A loop's branch on a real remote (a local bare repository), worked on from the caches of
several "machines": resume from the last push, and a stale machine's push refused."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from threading import Barrier

import pytest

from ralphctl.fleet.errors import GitRemoteError
from ralphctl.fleet.gitremote import LoopCheckout, checkout_loop, loop_branch, push_loop
from tests.fleet.remotes import git

LOOP = "loop-7f3a"
REF = f"refs/heads/ralph/{LOOP}"


def commit(checkout: LoopCheckout, name: str, content: str) -> str:
    """What an iteration leaves: a file changed and committed on the loop branch."""
    (checkout.workdir / name).write_text(content)
    git(checkout.workdir, "add", name)
    git(checkout.workdir, "commit", "-q", "-m", f"iteration: {name}")
    return git(checkout.workdir, "rev-parse", "HEAD")


def remote_sha(remote: Path, ref: str) -> str:
    return git(remote, "rev-parse", ref)


def test_a_new_loop_starts_its_branch_from_the_base_branch(remote: Path, tmp_path: Path) -> None:
    checkout = checkout_loop(str(remote), tmp_path / "build-01", LOOP, "main")

    assert checkout.workdir == tmp_path / "build-01" / LOOP
    assert checkout.head == remote_sha(remote, "main")
    assert checkout.pushed is None
    assert git(checkout.workdir, "branch", "--show-current") == f"ralph/{LOOP}"
    assert (checkout.workdir / "README.md").read_text() == "# app\n"


def test_a_first_push_creates_the_loop_branch_on_the_remote(remote: Path, tmp_path: Path) -> None:
    checkout = checkout_loop(str(remote), tmp_path / "build-01", LOOP, "main")
    sha = commit(checkout, "step1.txt", "one")

    outcome = push_loop(checkout.workdir, LOOP, checkout.pushed)

    assert (outcome.sha, outcome.fenced) == (sha, False)
    assert remote_sha(remote, REF) == sha


def test_another_machine_resumes_from_the_last_pushed_commit(remote: Path, tmp_path: Path) -> None:
    first = checkout_loop(str(remote), tmp_path / "build-01", LOOP, "main")
    commit(first, "step1.txt", "one")
    pushed = push_loop(first.workdir, LOOP, first.pushed).sha
    commit(first, "step2.txt", "two")
    pushed = push_loop(first.workdir, LOOP, pushed).sha

    resumed = checkout_loop(str(remote), tmp_path / "build-02", LOOP, "main")

    assert pushed is not None
    assert (resumed.head, resumed.pushed) == (pushed, pushed)
    assert (resumed.workdir / "step2.txt").read_text() == "two"
    sha = commit(resumed, "step3.txt", "three")
    assert push_loop(resumed.workdir, LOOP, resumed.pushed).sha == sha


def test_of_two_machines_pushing_from_the_same_checkpoint_the_stale_one_is_refused(
    remote: Path, tmp_path: Path
) -> None:
    first = checkout_loop(str(remote), tmp_path / "build-01", LOOP, "main")
    commit(first, "step1.txt", "one")
    checkpoint = push_loop(first.workdir, LOOP, None).sha
    stale = checkout_loop(str(remote), tmp_path / "build-01", LOOP, "main")
    holder = checkout_loop(str(remote), tmp_path / "build-02", LOOP, "main")
    assert stale.pushed == holder.pushed == checkpoint

    assert push_loop(holder.workdir, LOOP, holder.pushed).sha == checkpoint  # nothing new yet
    holder_sha = commit(holder, "step2.txt", "from build-02")
    assert push_loop(holder.workdir, LOOP, checkpoint).sha == holder_sha
    commit(stale, "step2.txt", "from build-01")
    refused = push_loop(stale.workdir, LOOP, stale.pushed)

    assert refused.fenced
    assert refused.found == holder_sha
    assert remote_sha(remote, REF) == holder_sha


def test_of_two_first_pushes_racing_exactly_one_creates_the_branch(
    remote: Path, tmp_path: Path
) -> None:
    checkouts = [checkout_loop(str(remote), tmp_path / f"build-0{i}", LOOP, "main") for i in (1, 2)]
    shas = [commit(c, "step1.txt", c.workdir.parent.name) for c in checkouts]
    start = Barrier(len(checkouts))

    def race(checkout: LoopCheckout) -> str | None:
        start.wait()
        return push_loop(checkout.workdir, LOOP, checkout.pushed).sha

    with ThreadPoolExecutor(len(checkouts)) as pool:
        landed = [sha for sha in pool.map(race, checkouts) if sha is not None]

    assert len(landed) == 1
    assert landed[0] in shas
    assert remote_sha(remote, REF) == landed[0]


def test_work_never_pushed_is_dropped_when_the_loop_is_checked_out_again(
    remote: Path, tmp_path: Path
) -> None:
    mine = checkout_loop(str(remote), tmp_path / "build-01", LOOP, "main")
    commit(mine, "unpushed.txt", "lost with the machine")
    (mine.workdir / "README.md").write_text("edited, never committed\n")
    (mine.workdir / "scratch.tmp").write_text("untracked")
    theirs = checkout_loop(str(remote), tmp_path / "build-02", LOOP, "main")
    pushed = push_loop(theirs.workdir, LOOP, None).sha

    again = checkout_loop(str(remote), tmp_path / "build-01", LOOP, "main")

    assert again.head == pushed == remote_sha(remote, "main")
    assert sorted(p.name for p in again.workdir.iterdir()) == [".git", "README.md"]
    assert (again.workdir / "README.md").read_text() == "# app\n"


def test_a_remote_without_the_base_branch_is_a_clear_error(remote: Path, tmp_path: Path) -> None:
    with pytest.raises(GitRemoteError, match="neither the loop branch 'ralph/loop-7f3a' nor the"):
        checkout_loop(str(remote), tmp_path / "build-01", LOOP, "develop")


def test_an_unreachable_remote_is_a_clear_error_and_leaves_no_clone(tmp_path: Path) -> None:
    cache = tmp_path / "build-01"

    with pytest.raises(GitRemoteError, match=r"git clone failed: .*missing\.git' does not exist"):
        checkout_loop(str(tmp_path / "missing.git"), cache, LOOP, "main")
    assert list(cache.iterdir()) == []


def test_a_loop_id_that_cannot_name_a_branch_is_refused() -> None:
    assert loop_branch("loop-7f3a") == "ralph/loop-7f3a"
    for bad in ("../escape", "a/b", "-flag", "x..y", ""):
        with pytest.raises(ValueError, match="cannot name a branch"):
            loop_branch(bad)
