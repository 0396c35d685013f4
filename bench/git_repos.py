"""Git repositories of a given size for the benchmarks, and what one ``git status`` costs.

A repository of N files holds small source files, 100 per directory, all committed and
packed, as a user's checkout would be. ``cached_repository`` builds one once per size under
the temp dir (100,000 files take a while) and hands it back reset to that first commit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from timing import Cost, median, timed

FILES_PER_DIR = 100
IDENTITY = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def make_repository(path: Path, files: int) -> Path:
    """A committed repository of ``files`` files at ``path``."""
    path.mkdir(parents=True)
    git(path, "init", "-q")
    for n in range(files):
        directory = path / "src" / f"pkg{n // FILES_PER_DIR}"
        if n % FILES_PER_DIR == 0:
            directory.mkdir(parents=True)
        (directory / f"module{n % FILES_PER_DIR}.py").write_text(f"VALUE = {n}\n")
    git(path, "add", "-A")
    git(path, "-c", "gc.auto=0", "commit", "-q", "-m", f"{files} files")
    git(path, "gc", "--quiet")  # packed, as a clone is: no automatic gc during the runs
    return path


CACHE = Path(tempfile.gettempdir()) / "ralphctl-bench-repositories"
START = "bench-start"


def cached_repository(files: int) -> Path:
    """A repository of ``files`` files, as first committed: built once, then reused."""
    path = CACHE / f"files-{files}"
    if not path.is_dir():
        building = CACHE / f"files-{files}.building-{os.getpid()}"
        shutil.rmtree(building, ignore_errors=True)
        make_repository(building, files)
        git(building, "tag", START)
        building.rename(path)
    git(path, "reset", "-q", "--hard", START)  # what earlier runs committed goes
    git(path, "clean", "-q", "-f", "-d", "-x")  # and what they left (.ralph/, progress files)
    return path


def git_status(path: Path, runs: int = 7) -> Cost:
    """The median cost of ``git status`` in ``path``, in milliseconds."""
    env = {**os.environ, **IDENTITY}
    return median([timed(["git", "status"], path, env)[0].ms() for _ in range(runs)])


def git(path: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args],
        cwd=path,
        env={**os.environ, **IDENTITY},
        stdout=subprocess.DEVNULL,
        check=True,
    )
