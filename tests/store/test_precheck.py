"""The cheap database check `ralphctl run` makes before its first agent starts."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ralphctl.store.errors import StoreError
from ralphctl.store.precheck import check_database
from ralphctl.store.repository import Store


def test_a_new_file_in_an_existing_writable_directory_is_fine(tmp_path: Path) -> None:
    check_database(str(tmp_path / "ralphctl.db"))


def test_a_missing_directory_that_can_be_created_is_fine(tmp_path: Path) -> None:
    check_database(str(tmp_path / "new" / "deeper" / "ralphctl.db"))


def test_a_directory_under_a_regular_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory")

    with pytest.raises(StoreError, match="a-file is not a directory"):
        check_database(str(tmp_path / "a-file" / "sub" / "ralphctl.db"))


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my shopping list\n")

    with pytest.raises(StoreError, match="is not a ralphctl database: it is not a SQLite file"):
        check_database(str(notes))


def test_the_sqlite_database_of_another_application_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "browser-history.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE visits (url TEXT)")
    conn.close()

    with pytest.raises(StoreError, match=r"another application's tables \(visits\)"):
        check_database(str(other))


def test_an_empty_file_or_an_empty_sqlite_database_can_become_ours(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    fresh = tmp_path / "fresh.db"
    sqlite3.connect(fresh).close()

    check_database(str(empty))
    check_database(str(fresh))


def test_a_ralphctl_database_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "ralphctl.db"
    Store.open(str(path)).close()

    check_database(str(path))


def test_a_directory_where_the_file_should_be_is_refused(tmp_path: Path) -> None:
    (tmp_path / "db").mkdir()

    with pytest.raises(StoreError, match="is not a file"):
        check_database(str(tmp_path / "db"))


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://user@host:notaport/ralphctl", "invalid database URL"),
        ("mysql://user@host/ralphctl", "unsupported database URL"),
    ],
)
def test_a_url_that_cannot_work_is_refused_without_connecting(url: str, message: str) -> None:
    with pytest.raises(StoreError, match=message):
        check_database(url)


def test_a_postgresql_url_that_parses_is_left_to_opening() -> None:
    check_database("postgresql://user:secret@db.internal:5432/ralphctl")


def test_the_check_imports_no_sqlalchemy(tmp_path: Path) -> None:
    code = (
        "import sys; from ralphctl.store.precheck import check_database; "
        f"check_database({str(tmp_path / 'x.db')!r}); print('sqlalchemy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory every user may enter (pytest's own are root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="ralphctl-precheck-"))
    path.chmod(0o755)
    yield path
    for inner in path.iterdir():
        inner.chmod(0o755)
    shutil.rmtree(path)


def test_a_read_only_directory_is_refused(shared_dir: Path) -> None:
    locked = shared_dir / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    code = f"from ralphctl.store.precheck import *; check_database({str(locked / 'x.db')!r})"
    argv = [sys.executable, "-c", code]
    if os.geteuid() == 0:  # root writes anywhere: ask as an ordinary user
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert out.returncode != 0
    assert f"the directory {locked} is not writable" in out.stderr


def test_a_directory_that_cannot_be_entered_is_a_store_error(shared_dir: Path) -> None:
    closed = shared_dir / "closed"
    closed.mkdir()
    closed.chmod(0o000)
    code = f"from ralphctl.store.precheck import *; check_database({str(closed / 'x.db')!r})"
    argv = [sys.executable, "-c", code]
    if os.geteuid() == 0:
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert "StoreError: cannot use the database" in out.stderr
    assert "Permission denied" in out.stderr
