"""The hot path on SQLite (``store/sqlite_direct``): the rows SQLAlchemy would write, read back
as SQLAlchemy reads them, without importing it; the schema stays Alembic's."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import JSON, Boolean

from ralphctl.store import core, repository, sqlite_direct
from ralphctl.store.database import open_engine
from ralphctl.store.errors import StoreError
from ralphctl.store.repository import Store
from ralphctl.store.schema import UTCDateTime, metadata
from ralphctl.store.url import resolve_url
from tests.store.factories import T0, ended_loop, started_iteration
from tests.store.run_writes import write_a_run

EVENT_TYPES = ("iteration_started", "iteration_completed", "two")
WRITTEN_DIRECTLY = ("loops", "iterations", "events", "errors", "checkpoints", "transcript_chunks")


def raw_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows as SQLite holds them, with their storage types."""
    with sqlite3.connect(path) as conn:
        return {
            table: [
                tuple((value, type(value).__name__) for value in row)
                for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")
            ]
            for table in WRITTEN_DIRECTLY
        }


@pytest.fixture
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (repository, core):
        monkeypatch.setattr(module, "_now", lambda: T0)


def test_the_direct_path_writes_the_very_rows_sqlalchemy_writes(
    tmp_path: Path, fixed_clock: None
) -> None:
    through_sqlalchemy, direct = tmp_path / "core.db", tmp_path / "direct.db"
    url = resolve_url(str(through_sqlalchemy))
    with Store(open_engine(url), url) as store:
        write_a_run(store)
    with Store.open(str(direct)) as store:
        assert store._fast is not None
        write_a_run(store)

    assert raw_rows(direct) == raw_rows(through_sqlalchemy)


def test_the_direct_path_reads_back_what_sqlalchemy_reads(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    with Store.open(str(path)) as store:
        write_a_run(store)
        store.begin_iteration(started_iteration("loop-d", 2))
        direct = (
            store.iterations("loop-d"),
            store.running_iterations("loop-d"),
            store.events_of("loop-d", EVENT_TYPES, after=1),
        )
        last_seq = store.last_transcript_seq("loop-d", 1)
    url = resolve_url(str(path))
    with Store(open_engine(url), url) as store:
        through_sqlalchemy = (
            store.iterations("loop-d"),
            store.running_iterations("loop-d"),
            store.events_of("loop-d", EVENT_TYPES, after=1),
        )
        assert store.last_transcript_seq("loop-d", 1) == last_seq == 0

    assert direct == through_sqlalchemy
    assert [i.n for i in direct[1]] == [2]
    assert [e.event_type for e in direct[2]] == ["iteration_completed", "two"]


def test_the_converted_columns_are_the_schemas() -> None:
    for name in WRITTEN_DIRECTLY:
        columns = metadata.tables[name].columns
        of_type = {
            kind: {c.name for c in columns if isinstance(c.type, kind)}
            for kind in (UTCDateTime, JSON, Boolean)
        }
        assert sqlite_direct.DATETIME_COLUMNS[name] == of_type[UTCDateTime], name
        assert sqlite_direct.JSON_COLUMNS[name] == of_type[JSON], name
        assert sqlite_direct.BOOLEAN_COLUMNS[name] == of_type[Boolean], name


def test_values_sqlalchemy_refuses_are_refused_with_the_same_kind_of_message(
    tmp_path: Path,
) -> None:
    with Store.open(str(tmp_path / "r.db")) as store:
        store.create_loop(ended_loop("loop-d"))
        with pytest.raises(StoreError, match=r"^cannot record events: .*not JSON serializable"):
            store.append_events("loop-d", [("odd", {"value": object()})])
        with pytest.raises(StoreError, match=r"^cannot record the agent of iteration 1: naive"):
            store.set_iteration_agent("loop-d", 1, 1, datetime(2026, 1, 1))
        with pytest.raises(StoreError, match="FOREIGN KEY"):
            store.begin_iteration(started_iteration("no-such-loop", 1))

        assert store.events_since(0) == []  # each failed write left nothing behind


def test_a_database_without_a_schema_is_created_by_alembic_then_written_directly(
    tmp_path: Path,
) -> None:
    path = tmp_path / "new.db"
    path.touch()  # empty: becomes a database

    with Store.open(str(path)) as store:
        assert store._fast is not None
        write_a_run(store)
        assert store.get_loop("loop-d").task == ended_loop().task


def test_recording_a_run_on_a_current_database_never_imports_sqlalchemy(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    Store.open(str(path)).close()  # created (and migrated) by Alembic, as a first run does
    script = textwrap.dedent(
        f"""
        import sys
        from tests.store.run_writes import write_a_run
        from ralphctl.store.repository import Store

        with Store.open({str(path)!r}) as store:
            write_a_run(store)
            store.iterations("loop-d")
            store.events_of("loop-d", ["message"])
            assert not [m for m in sys.modules if m.startswith(("sqlalchemy", "alembic"))]
            assert store.get_loop("loop-d").iteration == 3  # any other call: SQLAlchemy's
            assert "sqlalchemy" in sys.modules
        """
    )
    root = Path(__file__).parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_a_reader_does_not_wait_for_a_writer_held_up_by_a_foreign_lock(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    with Store.open(str(path)) as store:
        store.create_loop(ended_loop("loop-d"))
        foreign = sqlite3.connect(path, isolation_level=None)
        foreign.execute("BEGIN IMMEDIATE")  # another process writing
        with ThreadPoolExecutor(max_workers=1) as pool:
            held_up = pool.submit(store.append_events, "loop-d", [("late", {})])
            time.sleep(0.1)
            started = time.monotonic()
            assert store.iterations("loop-d") == []
            assert time.monotonic() - started < 1.0
            assert not held_up.done()
            foreign.execute("ROLLBACK")
            foreign.close()
            (event,) = held_up.result(timeout=10)
        assert event.event_type == "late"
