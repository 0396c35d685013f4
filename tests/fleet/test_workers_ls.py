"""`ralphctl workers ls`: each worker, alive or not, its labels, and the loops it holds now
out of its slots."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlalchemy import Engine
from typer.testing import CliRunner

from ralphctl.cli.app import app
from ralphctl.fleet.leases import acquire
from ralphctl.fleet.registry import register

pytestmark = pytest.mark.postgres

runner = CliRunner()


def workers_ls(url: str, *flags: str) -> str:
    done = runner.invoke(app, ["workers", "ls", "--db", url, *flags], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    return done.output


def test_without_workers_it_says_how_to_start_one(postgres_url: str, fleet_engine: Engine) -> None:
    assert "No workers. Start one with `ralphctl worker" in workers_ls(postgres_url)


def test_a_worker_shows_the_loops_it_holds_out_of_its_slots(
    postgres_url: str, fleet_engine: Engine, make_loop: Callable[[str], str]
) -> None:
    with fleet_engine.begin() as conn:
        register(conn, "build-01", ["gpu"], 2, "1.0")
        register(conn, "build-02", [], 4, "1.0")
        acquire(conn, make_loop("loop-held"), "build-01", timedelta(minutes=5))
        acquire(conn, make_loop("loop-gone"), "build-02", timedelta(milliseconds=1))

    shown = json.loads(workers_ls(postgres_url, "--json"))

    assert [(w["name"], w["alive"], w["labels"], w["slots_used"], w["slots"], w["loops"])
            for w in shown] == [
        ("build-01", True, ["gpu"], 1, 2, ["loop-held"]),
        ("build-02", True, [], 0, 4, []),  # its lease expired: it holds nothing
    ]  # fmt: skip
    assert "1/2" in workers_ls(postgres_url)
