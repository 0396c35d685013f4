"""``ralphctl.atomic``: the one atomic write (trackers, state files, settings, secrets)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ralphctl.atomic import write_atomic


def test_the_file_is_replaced_whole_and_no_temp_file_stays(tmp_path: Path) -> None:
    path = tmp_path / "tracker.md"
    path.write_text("old\n")

    write_atomic(path, "new ✓\n")

    assert path.read_text(encoding="utf-8") == "new ✓\n"
    assert [p.name for p in tmp_path.iterdir()] == ["tracker.md"]


def test_bytes_are_written_as_they_are(tmp_path: Path) -> None:
    write_atomic(str(tmp_path / "blob"), b"\x00\xff")

    assert (tmp_path / "blob").read_bytes() == b"\x00\xff"


def test_a_replaced_file_keeps_its_permissions(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text("{}")
    path.chmod(0o640)

    write_atomic(path, '{"a": 1}')

    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_new_file_gets_the_usual_permissions(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        write_atomic(tmp_path / "new.txt", "x")
    finally:
        os.umask(umask)

    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o644


def test_a_private_file_is_never_readable_by_others(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("old")
    path.chmod(0o644)

    write_atomic(path, "secret", mode=0o600)

    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_failed_rename_leaves_the_old_file_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.json"
    path.write_text("old")

    def refuse(*_: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk on fire"):
        write_atomic(path, "new")

    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_the_file_and_then_its_directory_are_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[bool] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(stat.S_ISDIR(os.fstat(fd).st_mode))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    write_atomic(tmp_path / "x", "y")

    assert synced == [False, True]


def test_it_imports_nothing_but_os_for_the_stop_hook() -> None:
    source = str(Path(__file__).parents[1] / "src")
    code = (
        f"import sys, os, __future__; sys.path.insert(0, {source!r}); before = set(sys.modules); "
        "import ralphctl.atomic; print(sorted(set(sys.modules) - before))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "['ralphctl', 'ralphctl.atomic']"
