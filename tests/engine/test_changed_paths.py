"""Reading what the paths ``git add`` names hold: stat data trusted like git's stat cache, except
for files modified too recently to tell two changes apart by it (engine/changed_paths)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from ralphctl.engine.changed_paths import GONE, RACY_NS, Seen, listing, parse, same_content


def stat_key(path: Path) -> tuple[int, ...]:
    found = path.lstat()
    return (found.st_mode, found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino)


def test_git_lines_are_parsed_and_anything_else_is_refused():
    assert parse("add 'a b'\nremove 'it's'\n") == [("a b", False), ("it's", True)]
    assert parse("") == []
    assert parse("warning: adding embedded git repository: inner\n") is None
    assert parse("add 'cut\n") is None


def test_a_recent_file_is_read_again_even_when_its_stat_data_did_not_change(tmp_path: Path):
    (tmp_path / "f").write_text("new\n")
    earlier = {"f": Seen(stat_key(tmp_path / "f"), ("file", False, b"old"), time.time_ns())}
    now = listing(tmp_path, [("f", False)], earlier)
    assert now is not None
    assert not same_content(now, earlier)


def test_an_old_file_with_the_same_stat_data_is_not_read_again(tmp_path: Path):
    path = tmp_path / "f"
    path.write_text("content\n")
    past = time.time() - 60
    os.utime(path, (past, past))
    read_later = path.lstat().st_mtime_ns + RACY_NS + 1
    earlier = {"f": Seen(stat_key(path), ("file", False, b"as read then"), read_later)}
    assert listing(tmp_path, [("f", False)], earlier) == earlier


def test_removed_and_vanished_paths_are_gone_and_directories_cannot_be_told(tmp_path: Path):
    (tmp_path / "d").mkdir()
    assert listing(tmp_path, [("x", True), ("vanished", False)], {}) == {
        "x": GONE,
        "vanished": GONE,
    }
    assert listing(tmp_path, [("d", False)], {}) is None


def test_a_symlink_holds_its_target(tmp_path: Path):
    link = tmp_path / "l"
    link.symlink_to("one")
    first = listing(tmp_path, [("l", False)], {})
    link.unlink()
    link.symlink_to("two")
    assert first is not None
    second = listing(tmp_path, [("l", False)], first)
    assert second is not None
    assert not same_content(first, second)
