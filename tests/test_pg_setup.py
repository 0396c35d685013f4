"""The throwaway PostgreSQL server of the store tests (tests/pg.py) and
scripts/ensure-postgres: found where root's PATH does not look, and nothing left behind."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests import pg

ROOT = Path(__file__).parents[1]
ENSURE_POSTGRES = ROOT / "scripts" / "ensure-postgres"
PATH_WITHOUT_SBIN = "/usr/local/bin:/usr/bin:/bin"

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the root-only path (runuser) is tested")
needs_server = pytest.mark.skipif(pg.find_bin_dir() is None, reason="no PostgreSQL binaries")


@pytest.fixture
def own_tempdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Temporary directories made by the code under test go here, to be counted. Not under
    pytest's own (mode 0700 as root): the postgres user must be able to reach the server's."""
    directory = Path(tempfile.mkdtemp(prefix="ralphctl-pg-test-"))
    directory.chmod(0o755)
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("ralphctl-pg-*"))


def port_open(url: str) -> bool:
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_runuser_is_found_in_sbin_when_path_lacks_it(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PATH", PATH_WITHOUT_SBIN)
    runuser = pg.find_runuser()
    assert runuser is not None, "runuser (util-linux) is on every Debian system"
    assert runuser.is_absolute()


def test_the_server_binaries_are_found_with_all_three_tools():
    bin_dir = pg.find_bin_dir()
    if bin_dir is None:
        pytest.skip("no PostgreSQL binaries")
    assert all((bin_dir / tool).is_file() for tool in pg.SERVER_TOOLS)


def test_a_directory_without_the_postgres_binary_is_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    partial = tmp_path / "bin"
    partial.mkdir()
    for tool in ("initdb", "pg_ctl"):
        (partial / tool).write_text("#!/bin/sh\n")
        (partial / tool).chmod(0o755)
    monkeypatch.setenv("RALPHCTL_PG_BIN", str(partial))
    assert pg.find_bin_dir() != partial


@as_root
@needs_server
@pytest.mark.postgres
def test_as_root_without_sbin_on_path_the_server_runs_and_leaves_nothing(
    own_tempdir: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("PATH", PATH_WITHOUT_SBIN)
    bin_dir = pg.find_bin_dir()
    assert bin_dir is not None
    with pg.postgres_server(bin_dir) as url, psycopg.connect(url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert not port_open(url)
    assert leftovers(own_tempdir) == []


@needs_server
@pytest.mark.postgres
def test_a_failure_while_the_server_runs_stops_it_and_removes_its_directory(own_tempdir: Path):
    bin_dir = pg.find_bin_dir()
    assert bin_dir is not None
    urls = []
    with pytest.raises(ZeroDivisionError), pg.postgres_server(bin_dir) as url:  # noqa: PT012
        urls.append(url)
        _ = 1 / 0
    assert not port_open(urls[0])
    assert leftovers(own_tempdir) == []


@as_root
def test_as_root_without_runuser_the_error_says_so_and_nothing_is_left(
    own_tempdir: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(pg, "find_runuser", lambda: None)
    monkeypatch.setattr(pwd, "getpwnam", lambda name: pwd.getpwuid(0))
    with pytest.raises(RuntimeError, match="runuser"), pg.postgres_server(Path("/nonexistent")):
        pass
    assert leftovers(own_tempdir) == []


def test_a_server_that_cannot_start_reports_why_and_leaves_nothing(
    own_tempdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    broken = tmp_path / "broken"
    broken.mkdir()
    for tool in pg.SERVER_TOOLS:
        (broken / tool).write_text("#!/bin/sh\necho 'cannot do that' >&2\nexit 1\n")
        (broken / tool).chmod(0o755)
    monkeypatch.setattr(pg, "_unprivileged_prefix", lambda root: [])
    with pytest.raises(RuntimeError, match="cannot do that"), pg.postgres_server(broken):
        pass
    assert leftovers(own_tempdir) == []


def test_ensure_postgres_finds_everything_without_sbin_on_path():
    if pg.find_bin_dir() is None:
        pytest.skip("no PostgreSQL binaries: the script would install them")
    result = subprocess.run(
        ["bash", str(ENSURE_POSTGRES)],
        env={**os.environ, "PATH": PATH_WITHOUT_SBIN},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, "")


@as_root
@pytest.mark.parametrize(
    ("hidden", "named"),
    [
        pytest.param(["/usr/sbin/runuser"], "runuser", id="runuser"),
        pytest.param(["/usr/lib/postgresql"], "initdb, pg_ctl and postgres", id="server"),
    ],
)
def test_ensure_postgres_names_what_is_missing_when_it_cannot_install_it(
    hidden: list[str], named: str
):
    """In a private mount namespace, the missing thing and apt-get are hidden."""
    found = pg.find_bin_dir()
    debian = Path("/usr/lib/postgresql")
    if debian in map(Path, hidden) and found and not found.resolve().is_relative_to(debian):
        pytest.skip(f"the server binaries in {found} are not where this test hides them")
    if (
        shutil.which("unshare") is None
        or subprocess.run(["unshare", "-m", "true"], check=False).returncode
    ):
        pytest.skip("cannot make a private mount namespace here")
    mounts = [
        f"mount -t tmpfs none {path}" if Path(path).is_dir() else f"mount --bind /dev/null {path}"
        for path in [*hidden, "/usr/bin/apt-get"]
        if Path(path).exists()
    ]
    script = " && ".join([*mounts, f"bash {ENSURE_POSTGRES}"])
    result = subprocess.run(
        ["unshare", "-m", "sh", "-c", script],
        env={k: v for k, v in os.environ.items() if k != "RALPHCTL_PG_BIN"}
        | {"PATH": PATH_WITHOUT_SBIN},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert f"not found: {named}" in result.stderr
    assert "no apt-get here" in result.stderr
