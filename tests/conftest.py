"""Shared fixtures. The store ones run a test on SQLite and on a throwaway PostgreSQL server."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from ralphctl.store.repository import Store
from tests.pg import create_schema, find_bin_dir, postgres_server
from tests.reliability import figures as reliability_figures

pytest_plugins = ["tests.realcli.fixtures"]

FAKE_CLAUDE = Path(__file__).with_name("hookmode") / "fake_claude.py"
FIGURES_KEY = "reliability_figures"
COLUMNS_KEY = "controller_columns"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """The controller tells each pytest-xdist worker its ``COLUMNS`` (see pytest_configure)."""
    node.workerinput[COLUMNS_KEY] = os.environ.get("COLUMNS")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """A pytest-xdist worker runs its tests as a serial run would: it takes a numbered temp dir
    of its own, not one inside the controller's (``.../pytest-N/popen-gw0``), so paths are as
    long as in a serial run (a Unix socket path holds ~100 bytes); and it drops the
    ``COLUMNS=80`` its process starts with when the controller had none (the CLI's tables are
    then 160 columns wide, as when piped)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return
    if config.known_args_namespace.basetemp is None:
        config.option.basetemp = None
    columns = workerinput.get(COLUMNS_KEY)
    if columns is None:
        os.environ.pop("COLUMNS", None)
    else:
        os.environ["COLUMNS"] = columns


@pytest.fixture(scope="session")
def figures() -> Callable[[reliability_figures.Figure], None]:
    """Records a reliability test's figures for the table printed at the end of the run."""
    return reliability_figures.record


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist a worker hands its figures to the controller, which prints them."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[FIGURES_KEY] = [asdict(f) for f in reliability_figures.RECORDED]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """The controller gathers the figures of a pytest-xdist worker that finished."""
    output = getattr(node, "workeroutput", {})
    for fields in output.get(FIGURES_KEY, []):
        reliability_figures.record(reliability_figures.Figure(**fields))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The reliability figures recorded in this run (by every worker), as one table."""
    if not reliability_figures.RECORDED:
        return
    terminalreporter.write_sep("=", "reliability figures")
    for line in reliability_figures.table(reliability_figures.RECORDED):
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """One PostgreSQL server for the session; fails in CI (or when required) if none can run."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        reason = (
            "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found:"
            " run scripts/ensure-postgres or set RALPHCTL_PG_BIN"
        )
        if os.environ.get("CI") or os.environ.get("RALPHCTL_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    with postgres_server(bin_dir) as url:
        yield url


@pytest.fixture
def postgres_url(postgres_server_url: str) -> str:
    """A new, empty schema on the session's server: to the store, an empty database."""
    return create_schema(postgres_server_url, f"test_{uuid.uuid4().hex[:12]}")


@pytest.fixture(
    params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database, once per backend."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        return url
    return str(tmp_path / "ralphctl.db")


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """An open store on an empty database, once per backend."""
    with Store.open(store_url) as opened:
        yield opened


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Path]]:
    """``claude`` is the scripted stand-in (tests/hookmode/fake_claude.py), for hook-mode runs
    in this process: ``fake_claude(run, ...)`` scripts the runs of the ``claude`` processes
    started, each playing the next; returns the file that counts the runs begun."""
    wrapper = tmp_path / "claude"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_CLAUDE}" "$@"\n')
    wrapper.chmod(0o755)
    script = tmp_path / "script.json"
    runtime = tempfile.mkdtemp(prefix="rh-")  # short: a Unix socket path is ~100 bytes at most
    monkeypatch.setenv("RALPHCTL_CLAUDE_BIN", str(wrapper))
    monkeypatch.setenv("FAKE_CLAUDE_SCRIPT", str(script))
    monkeypatch.setenv("XDG_RUNTIME_DIR", runtime)
    monkeypatch.delenv("RALPHCTL_HOOK_SOCKET", raising=False)

    def play(*runs: list[dict[str, Any]]) -> Path:
        script.write_text(json.dumps(list(runs)))
        return script.with_suffix(".played")

    yield play
    shutil.rmtree(runtime, ignore_errors=True)
