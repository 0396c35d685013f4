"""Opening a database: created and migrated when new, one query when current, clear failures."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from ralphctl.store.database import open_engine
from ralphctl.store.migrations import known_revisions
from ralphctl.store.repository import Store, StoreError
from ralphctl.store.revision import HEAD_REVISION
from ralphctl.store.url import resolve_url
from tests.store.factories import new_loop


def test_a_new_sqlite_file_is_created_with_its_directory(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "ralphctl.db"

    with Store.open(str(path)) as store:
        store.create_loop(new_loop())

    assert path.is_file()


def test_data_survives_reopening(store_url: str) -> None:
    with Store.open(store_url) as store:
        created = store.create_loop(new_loop())

    with Store.open(store_url) as store:
        assert store.get_loop(created.id) == created


def test_processes_opening_a_new_database_at_once_all_succeed(store_url: str) -> None:
    with ThreadPoolExecutor(max_workers=4) as pool:
        stores = list(pool.map(Store.open, [store_url] * 4))

    for store in stores:
        assert store.list_loops() == []
        store.close()


def test_switching_to_wal_waits_for_a_writer_holding_the_database(tmp_path: Path) -> None:
    # SQLite refuses the switch at once, without its busy timeout, while a writer holds the
    # lock: what happens when processes open a new database at once and one is migrating it.
    path = tmp_path / "r.db"
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.3, writer.execute, ["ROLLBACK"])
    release.start()

    engine = open_engine(resolve_url(str(path)))

    release.join()
    writer.close()
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    engine.dispose()


def test_sqlite_connections_use_wal_and_enforce_foreign_keys(tmp_path: Path) -> None:
    engine = open_engine(resolve_url(str(tmp_path / "r.db")))

    with engine.connect() as conn:
        settings = {
            name: conn.exec_driver_sql(f"PRAGMA {name}").scalar()
            for name in ("journal_mode", "synchronous", "busy_timeout", "foreign_keys")
        }
    engine.dispose()

    assert settings == {
        "journal_mode": "wal",
        "synchronous": 1,
        "busy_timeout": 5000,
        "foreign_keys": 1,
    }


def test_opening_a_current_database_does_not_import_alembic(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    Store.open(str(path)).close()
    snippet = (
        "import sys; from ralphctl.store.repository import Store;"
        f"Store.open({str(path)!r}).close(); print('alembic' in sys.modules)"
    )

    result = subprocess.run(
        [sys.executable, "-c", snippet], capture_output=True, text=True, check=False
    )

    assert result.stdout.strip() == "False", result.stderr


def test_recording_in_a_current_sqlite_database_does_not_import_the_postgresql_dialect(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.db"
    Store.open(str(path)).close()
    snippet = (
        "import sys; from ralphctl.store.repository import Store;"
        "from tests.store.factories import new_loop;"
        f"store = Store.open({str(path)!r}); store.create_loop(new_loop());"
        "store.close(); print('sqlalchemy.dialects.postgresql' in sys.modules)"
    )

    result = subprocess.run(
        [sys.executable, "-c", snippet], capture_output=True, text=True, check=False
    )

    assert result.stdout.strip() == "False", result.stderr


def test_the_head_constant_is_the_newest_migration() -> None:
    from alembic.script import ScriptDirectory

    from ralphctl.store import migrations

    script = ScriptDirectory(str(Path(migrations.__file__).parent))
    assert script.get_heads() == [HEAD_REVISION]
    assert HEAD_REVISION in known_revisions()


def test_a_corrupt_sqlite_file_is_reported_as_not_ours(tmp_path: Path) -> None:
    path = tmp_path / "random.db"
    path.write_bytes(os.urandom(8192))

    with pytest.raises(StoreError) as caught:
        Store.open(str(path))

    assert str(caught.value) == f"'{path}' is not a ralphctl database (file is not a database)"


def test_a_sqlite_file_of_another_program_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")

    with pytest.raises(StoreError, match="is not a ralphctl database \\(it holds other tables\\)"):
        Store.open(str(path))


def test_a_database_from_a_newer_ralphctl_asks_for_an_upgrade(store_url: str) -> None:
    Store.open(store_url).close()
    engine = create_engine(resolve_url(store_url))
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()

    with pytest.raises(StoreError, match=r"schema revision '9999', newer .* upgrade ralphctl"):
        Store.open(store_url)


def test_an_unreachable_postgresql_server_is_named_by_host_and_port() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        url = f"postgresql://ralphctl:secret@127.0.0.1:{port}/ralphctl"

        with pytest.raises(StoreError) as caught:
            Store.open(url)

    message = str(caught.value)
    assert message.startswith(f"cannot connect to PostgreSQL at 127.0.0.1:{port} (")
    assert "secret" not in message


def test_an_unsupported_url_is_refused() -> None:
    with pytest.raises(StoreError, match="unsupported database URL 'mysql://me:\\*\\*\\*@db/r'"):
        Store.open("mysql://me:pw@db/r")


def test_the_store_shows_its_url_without_the_password() -> None:
    store = Store(create_engine("sqlite://"), "postgresql+psycopg://me:pw@db/r")

    assert repr(store) == "Store('postgresql+psycopg://me:***@db/r')"
    assert store.url == "postgresql+psycopg://me:pw@db/r"
