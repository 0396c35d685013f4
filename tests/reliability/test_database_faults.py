"""Database faults (issue 10): a read-only database file, a foreign write lock during
``ralphctl run``, an unreachable PostgreSQL. Each is a clear error naming the database (exit 2
before any agent starts, or exit 3 saying how to resume), and loses nothing recorded.

A read-only file: as root, file modes stop nothing, so the database's directory is bound
read-only in a private mount namespace (``unshare -m``), where SQLite truly cannot write;
otherwise the file and its directory lose their write bits. (Opening with ``mode=ro`` is not
the fault under test: the user's file is what is read-only.) The full disk and the lock under
``serve`` have their tests in tests/cli/test_cli.py and tests/server/test_store_failure.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ralphctl.store.repository import Store
from tests.cli.test_bad_database import flat
from tests.cli.test_cli import env, ralphctl, scripted_run, wait_for_iteration, workdir
from tests.reliability.figures import Figure

__all__ = ["env", "workdir"]  # fixtures, shared with tests/cli/test_cli.py

BUSY_TIMEOUT_S = 5.0  # store/database.py
COST_USD = 0.1
STEP = {"text": "working", "cost_usd": COST_USD, "edits": [{"path": "runs.log", "append": "."}]}
SLOW_STEP = {**STEP, "sleep_s": 1.0}
DONE = {"text": "Finished.\n<promise>COMPLETE</promise>", "cost_usd": 0.25}


# -- a read-only database file ----------------------------------------------------------------

#: Runs "$@" with the directory "$0" bound read-only, in a mount namespace of its own.
READ_ONLY_BIND = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'


@pytest.fixture
def read_only(env: dict[str, str]) -> Iterator[list[str]]:
    """The argv prefix under which the database (``RALPHCTL_DB``) is read-only."""
    db = Path(env["RALPHCTL_DB"])
    if os.geteuid() != 0:
        db.chmod(0o444)
        db.parent.chmod(0o555)
        try:
            yield []
        finally:
            db.parent.chmod(0o755)
            db.chmod(0o644)
        return
    prefix = ["unshare", "-m", "sh", "-c", READ_ONLY_BIND, str(db.parent)]
    probe = subprocess.run([*prefix, "touch", str(db)], capture_output=True, text=True, check=False)
    if "Read-only file system" not in probe.stderr:
        pytest.skip(f"cannot bind a directory read-only here: {probe.stderr.strip()}")
    yield prefix


def under(prefix: list[str], env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    argv = [*prefix, sys.executable, "-m", "ralphctl", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def serve_env(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """``env``, with a server dir of the test's own (``serve`` makes its token first), apart
    from the database's directory (which may be read-only)."""
    return {**env, "RALPHCTL_SERVER_DIR": str(tmp_path_factory.mktemp("server"))}


@pytest.fixture
def recorded(env: dict[str, str], workdir: Path) -> str:
    """A database holding one completed loop; its id."""
    done = scripted_run(workdir, env, STEP, DONE)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["loop_id"])


def digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_run_on_a_read_only_database_exits_2_before_the_agent_starts(
    env, workdir, recorded, read_only
):
    before = digest(env["RALPHCTL_DB"])
    (workdir / "runs.log").unlink()

    done = under(
        read_only,
        env,
        "run",
        "Do it.",
        "--script",
        str(workdir.parent / "script.json"),
        "--checkpoint-interval=0",
        "--workdir",
        str(workdir),
    )

    assert done.returncode == 2, done.stderr
    assert f"the database '{env['RALPHCTL_DB']}' is not writable" in flat(done.stderr)
    assert not (workdir / "runs.log").exists()  # the agent never ran
    assert digest(env["RALPHCTL_DB"]) == before


@pytest.mark.parametrize("command", [["status"], ["serve", "--port", "0"]])
def test_reading_or_serving_a_read_only_database_is_a_clear_error(
    env, serve_env, recorded, read_only, command
):
    done = under(read_only, serve_env, *command)

    assert done.returncode == 2, done.stderr
    assert f"the SQLite database '{env['RALPHCTL_DB']}'" in flat(done.stderr)
    assert "Traceback" not in done.stderr
    with Store.open(env["RALPHCTL_DB"]) as store:
        assert [it.status for it in store.iterations(recorded)] == ["ok", "ok"]


# -- a foreign write lock during `ralphctl run` -----------------------------------------------


class ForeignLock(threading.Thread):
    """Once iteration ``n`` runs, another connection holds the write lock for ``held_s``, or
    until ``release`` is set."""

    def __init__(self, db: str, n: int, held_s: float) -> None:
        super().__init__(daemon=True)
        self.db, self.n, self.held_s = db, n, held_s
        self.release = threading.Event()

    def run(self) -> None:
        wait_for_iteration(self.db, self.n)
        foreign = sqlite3.connect(self.db, isolation_level=None)
        foreign.execute("BEGIN IMMEDIATE")
        self.release.wait(self.held_s)
        foreign.execute("ROLLBACK")
        foreign.close()


def ledger(db: str, loop_id: str) -> tuple[list[int], float, float]:
    """The loop's iteration numbers, its total cost, and the sum of its iterations' costs."""
    with Store.open(db) as store:
        iterations = store.iterations(loop_id)
        loop = store.get_loop(loop_id)
    return [it.n for it in iterations], loop.cost_usd, sum(it.cost_usd or 0 for it in iterations)


def test_a_lock_shorter_than_the_busy_timeout_is_waited_out(env, workdir, figures):
    lock = ForeignLock(env["RALPHCTL_DB"], 2, held_s=BUSY_TIMEOUT_S - 2)
    lock.start()
    began = time.monotonic()

    done = scripted_run(workdir, env, SLOW_STEP, extra=("--max-iterations", "4"))

    lock.join()
    assert done.returncode == 1, done.stderr  # the iteration limit, as without the lock
    numbers, total, summed = ledger(env["RALPHCTL_DB"], json.loads(done.stdout)["loop_id"])
    assert numbers == [1, 2, 3, 4]
    assert total == pytest.approx(summed) == pytest.approx(4 * COST_USD)
    assert (workdir / "runs.log").read_text() == "...."  # every agent run is recorded
    figures(
        Figure(
            "run under a 3 s foreign lock",
            4,
            "iterations",
            worst_s=time.monotonic() - began,
            note="worst latency: the whole run",
        )
    )


def test_a_lock_held_past_the_busy_timeout_stops_run_with_exit_3_and_resume_completes(env, workdir):
    # Each write waits the busy timeout once; the iteration's transcript and record both fail.
    lock = ForeignLock(env["RALPHCTL_DB"], 2, held_s=3 * BUSY_TIMEOUT_S)
    lock.start()

    stopped = scripted_run(workdir, env, SLOW_STEP, extra=("--max-iterations", "4"))

    lock.release.set()  # run has given up: holding the lock longer proves nothing more
    lock.join()
    assert stopped.returncode == 3, stopped.stderr
    said = flat(stopped.stderr)
    assert "database is locked" in said
    assert "everything recorded before is kept" in said
    loop_id = said.rpartition("ralphctl resume ")[2].strip()
    numbers, _, _ = ledger(env["RALPHCTL_DB"], loop_id)
    assert numbers[0] == 1
    journal = workdir / ".ralph" / f"unrecorded-{loop_id}.json"
    assert journal.exists()  # what the agent of the refused iteration reported

    resumed = ralphctl("resume", loop_id, "--json", env=env)

    assert resumed.returncode == 1, resumed.stderr
    numbers, total, summed = ledger(env["RALPHCTL_DB"], loop_id)
    assert numbers == list(range(1, len(numbers) + 1))
    assert numbers[-1] == 4
    assert total == pytest.approx(summed)
    runs = len((workdir / "runs.log").read_text())
    assert len(numbers) == runs  # every agent run has its record
    assert total == pytest.approx(runs * COST_USD)  # and its cost: kept, then recorded on resume
    assert not journal.exists()


# -- an unreachable PostgreSQL -----------------------------------------------------------------


@pytest.fixture
def refused_url() -> str:
    """A PostgreSQL URL on a local port nobody listens on (connection refused)."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    return f"postgresql://ralphctl:s3cret@127.0.0.1:{port}/ralphctl"


@pytest.mark.parametrize("command", [["status"], ["history", "abc"], ["serve", "--port", "0"]])
def test_an_unreachable_postgresql_is_exit_2_naming_the_server(serve_env, refused_url, command):
    done = ralphctl(*command, "--db", refused_url, env=serve_env)

    assert done.returncode == 2, done.stderr
    port = refused_url.rsplit(":", 1)[1].split("/")[0]
    assert f"cannot connect to PostgreSQL at 127.0.0.1:{port}" in flat(done.stderr)
    assert "s3cret" not in done.stderr
    assert "Traceback" not in done.stderr
