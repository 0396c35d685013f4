"""A team's repository for fleet tests: a local bare repository as the remote."""

from __future__ import annotations

import subprocess
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "ralphctl tests",
    "GIT_AUTHOR_EMAIL": "tests@ralphctl.invalid",
    "GIT_COMMITTER_NAME": "ralphctl tests",
    "GIT_COMMITTER_EMAIL": "tests@ralphctl.invalid",
}


def git(cwd: Path, *args: str) -> str:
    identity = ("-c", "user.name=ralphctl tests", "-c", "user.email=tests@ralphctl.invalid")
    done = subprocess.run(
        ["git", *identity, *args], cwd=cwd, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def make_remote(root: Path) -> Path:
    """A bare repository ``root/team-app.git`` whose ``main`` has one commit."""
    bare = root / "team-app.git"
    git(root, "init", "-q", "--bare", "-b", "main", str(bare))
    seed = root / "seed"
    git(root, "init", "-q", "-b", "main", str(seed))
    (seed / "README.md").write_text("# app\n")
    git(seed, "add", "README.md")
    git(seed, "commit", "-q", "-m", "initial")
    git(seed, "push", "-q", str(bare), "main")
    return bare
