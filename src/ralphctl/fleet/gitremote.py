"""A loop's work in git: its branch ``ralph/<loop-id>`` on the team's repository is the truth.

A worker clones the repository into its cache (one clone per loop, kept between runs and
fetched again), and checks the loop branch out: from the remote loop branch when one was
pushed (the loop resumes where any machine left it), else from the base branch; a push whose
record never committed is rewound (``rewind_loop``: the records say where a loop is). Whatever
that clone held beyond the remote's state (commits never pushed, edits, untracked and
ignored files) is discarded: it is work since the last push, lost with the machine by
design.

A push names the sha the worker expects the remote's loop branch to be at
(``--force-with-lease=refs/heads/ralph/<id>:<sha>``; no sha: the branch must not exist yet).
The remote checks it under its ref lock, so of two workers pushing from the same checkpoint
one lands and the other is refused: ``PushOutcome.fenced``. Any other failure (network,
credentials, a remote hook) is a GitRemoteError. Commands never prompt for credentials.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from ralphctl.fleet.errors import GitRemoteError

GIT_TIMEOUT_S = 600.0
BRANCH_PREFIX = "ralph/"
_LOOP_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "LC_ALL": "C"}


@dataclass(frozen=True, slots=True)
class LoopCheckout:
    """A loop's clone in a worker's cache, on its loop branch at ``head``. ``pushed`` is the
    remote loop branch's sha as fetched (the expectation of the next push); None when the
    loop was never pushed and starts from its base branch."""

    loop_id: str
    workdir: Path
    head: str
    pushed: str | None


@dataclass(frozen=True, slots=True)
class PushOutcome:
    """``sha`` is the remote loop branch's new head when the push landed; None when it was
    fenced: the branch was not at the expected sha but at ``found`` (None: absent)."""

    sha: str | None
    found: str | None = None

    @property
    def fenced(self) -> bool:
        return self.sha is None


def loop_branch(loop_id: str) -> str:
    """The branch a loop works on; ValueError for an id that cannot name one."""
    if _LOOP_ID.fullmatch(loop_id) is None:
        raise ValueError(f"loop id {loop_id!r} cannot name a branch: use letters, digits, - and _")
    return BRANCH_PREFIX + loop_id


def checkout_loop(repo_url: str, cache: Path, loop_id: str, base_branch: str) -> LoopCheckout:
    """Clone or fetch ``repo_url`` into ``cache/<loop-id>`` and check the loop branch out."""
    branch = loop_branch(loop_id)
    workdir = cache / loop_id
    if not (workdir / ".git").is_dir():
        _clone(repo_url, workdir)
    _git(workdir, "remote", "set-url", "origin", repo_url)
    _git(workdir, "fetch", "--prune", "--no-tags", "origin")
    pushed = _ref(workdir, f"refs/remotes/origin/{branch}")
    start = pushed or _ref(workdir, f"refs/remotes/origin/{base_branch}")
    if start is None:
        raise GitRemoteError(
            f"{repo_url} has neither the loop branch {branch!r} nor the base branch {base_branch!r}"
        )
    _git(workdir, "checkout", "--force", "--no-track", "-B", branch, start)
    _git(workdir, "clean", "-ffdxq")
    return LoopCheckout(loop_id, workdir, start, pushed)


def push_loop(workdir: Path, loop_id: str, expected: str | None) -> PushOutcome:
    """Push HEAD to the remote loop branch, if the branch is at ``expected`` (None: absent)."""
    ref = f"refs/heads/{loop_branch(loop_id)}"
    head = _git(workdir, "rev-parse", "--verify", "HEAD^{commit}").strip()
    lease = f"--force-with-lease={ref}:{expected or ''}"
    result = _run(workdir, "push", "--porcelain", lease, "origin", f"{head}:{ref}")
    if result.returncode == 0:
        return PushOutcome(head)
    found = _remote_ref(workdir, ref)
    if found != expected:
        return PushOutcome(None, found)
    raise GitRemoteError(f"cannot push {ref}: {_reason(result)}")


def rewind_loop(checkout: LoopCheckout, to: str | None, base_branch: str) -> LoopCheckout:
    """Put the clone's loop branch back at ``to`` (None: the base branch), behind the remote
    loop branch: a commit pushed in a transaction that never committed is not the loop's. The
    next push replaces it (``pushed``, its expectation, stays the remote's sha)."""
    workdir, branch = checkout.workdir, loop_branch(checkout.loop_id)
    start = to or _ref(workdir, f"refs/remotes/origin/{base_branch}")
    if start is None:
        raise GitRemoteError(f"the remote has no base branch {base_branch!r}")
    _git(workdir, "checkout", "--force", "--no-track", "-B", branch, start)
    return replace(checkout, head=start)


def _clone(repo_url: str, workdir: Path) -> None:
    """Clone into a sibling first, so that an interrupted clone leaves no half a work dir."""
    partial = workdir.with_name(workdir.name + ".cloning")
    shutil.rmtree(partial, ignore_errors=True)
    workdir.parent.mkdir(parents=True, exist_ok=True)
    _git(workdir.parent, "clone", "--quiet", "--no-checkout", "--", repo_url, str(partial))
    shutil.rmtree(workdir, ignore_errors=True)
    partial.rename(workdir)


def _ref(workdir: Path, ref: str) -> str | None:
    result = _run(workdir, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    return result.stdout.strip() if result.returncode == 0 else None


def _remote_ref(workdir: Path, ref: str) -> str | None:
    listed = _git(workdir, "ls-remote", "origin", ref).split()
    return listed[0] if listed else None


def _git(cwd: Path, *args: str) -> str:
    result = _run(cwd, *args)
    if result.returncode != 0:
        raise GitRemoteError(f"git {args[0]} failed: {_reason(result)}")
    return result.stdout


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            env={**os.environ, **_ENV},
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitRemoteError(f"git {args[0]} could not run: {exc}") from exc


def _reason(result: subprocess.CompletedProcess[str]) -> str:
    """git's own words: the rejected ref's line of ``--porcelain`` output, else stderr."""
    lines = [line for line in result.stdout.splitlines() if line.startswith("!")]
    text = lines[0].split("\t")[-1] if lines else result.stderr
    return " ".join(text.split()) or f"exit status {result.returncode}"
