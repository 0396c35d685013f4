"""Index files compared by the hash git ends them with, and whole only when there is none."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ralphctl.engine.gitindex import copy_index, same_content


def index_of(tmp_path: Path, name: str, content: str) -> Path:
    """The index file of a new repository holding one file ``a.txt`` with ``content``."""
    repo = tmp_path / name
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "a.txt").write_text(content)
    subprocess.run(["git", "add", "a.txt"], cwd=repo, check=True)
    return repo / ".git" / "index"


def test_a_copy_of_an_index_is_the_same_content(tmp_path: Path):
    index = index_of(tmp_path, "repo", "a\n")
    copy = tmp_path / "copy"
    copy_index(index, copy)

    assert same_content(index, copy)


def test_indexes_of_one_size_that_stage_different_files_differ(tmp_path: Path):
    one, other = index_of(tmp_path, "one", "a\n"), index_of(tmp_path, "other", "b\n")
    assert one.stat().st_size == other.stat().st_size

    assert not same_content(one, other)


def test_indexes_without_a_hash_are_compared_whole(tmp_path: Path):
    """``index.skipHash`` writes zeros where the hash would be: the ends then tell nothing."""
    one, other, copy = tmp_path / "one", tmp_path / "other", tmp_path / "copy"
    one.write_bytes(b"DIRC" + b"\x01" * 40 + bytes(20))
    other.write_bytes(b"DIRC" + b"\x02" + b"\x01" * 39 + bytes(20))  # the same last 32 bytes
    copy.write_bytes(one.read_bytes())

    assert not same_content(one, other)
    assert same_content(one, copy)


def test_a_missing_index_is_never_the_same_content(tmp_path: Path):
    index = index_of(tmp_path, "repo", "a\n")

    assert not same_content(index, tmp_path / "missing")
    assert not same_content(tmp_path / "missing", index)
