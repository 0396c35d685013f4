"""Every read command works on every loop the store can hold (tests/cli/loop_shapes.py).

``status``, ``history``, ``loops ls/show/stats``, with and without ``--json``: none crashes,
every JSON output parses, and no loop is offered a ``resume`` it cannot have. Fleet loops
(pending, running on a worker, completed) live on PostgreSQL: they are read there.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner, Result

from ralphctl.cli.app import app
from ralphctl.cli.common import console
from tests.cli.conftest import Shaped
from tests.cli.loop_shapes import FLEET_SHAPES, FLOAT_NOISE, SHAPES

SHAPE_NAMES = [shape.name for shape in SHAPES]
RESUMABLE = {shape.name: shape.resumable for shape in SHAPES}


def ralphctl(shaped: Shaped, *args: str) -> Result:
    result = CliRunner().invoke(app, [*args, "--db", shaped.url])
    assert result.exit_code == 0, f"{args}: {result.output}\n{result.exception!r}"
    if "--json" in args:
        assert not FLOAT_NOISE.search(result.output), result.output
    return result


@pytest.mark.parametrize(
    "args",
    [("status", "--all"), ("loops", "ls")],
    ids=["status", "loops ls"],
)
def test_listings_show_every_loop(shaped: Shaped, args: tuple[str, ...]) -> None:
    output = ralphctl(shaped, *args).output
    for loop_id in shaped.ids.values():
        assert loop_id in output


@pytest.mark.parametrize(
    "args",
    [("status", "--all", "--json"), ("loops", "ls", "--json")],
    ids=["status", "loops ls"],
)
def test_listings_as_json_parse_and_hold_every_loop(shaped: Shaped, args: tuple[str, ...]) -> None:
    loops = json.loads(ralphctl(shaped, *args).output)
    assert {loop["id"] for loop in loops} == set(shaped.ids.values())


def test_status_shows_the_newest_loops_by_default(shaped: Shaped) -> None:
    assert "loops" in ralphctl(shaped, "status").output


@pytest.mark.parametrize("shape", SHAPE_NAMES)
@pytest.mark.parametrize("command", [("history",), ("loops", "show")], ids=["history", "show"])
def test_one_loops_views_work_on_every_shape(shaped: Shaped, command: tuple[str, ...], shape: str):
    loop_id = shaped.ids[shape]
    assert loop_id in ralphctl(shaped, *command, loop_id).output
    printed = json.loads(ralphctl(shaped, *command, loop_id, "--json").output)
    assert loop_id in json.dumps(printed)


def test_stats_print_and_parse_as_json(shaped: Shaped) -> None:
    assert ralphctl(shaped, "loops", "stats").output.strip()
    assert isinstance(json.loads(ralphctl(shaped, "loops", "stats", "--json").output), dict)


@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_status_offers_resume_only_for_a_loop_that_can_be_resumed(shaped: Shaped, shape: str):
    loop_id = shaped.ids[shape]
    offered = f"ralphctl resume {loop_id}" in ralphctl(shaped, "status", "--all").output
    assert not offered or RESUMABLE[shape]


def test_status_offers_resume_for_a_fresh_loop_whose_runner_died(shaped: Shaped) -> None:
    loop_id = shaped.ids["fresh crashed"]
    assert f"ralphctl resume {loop_id}" in ralphctl(shaped, "status", "--all").output


@pytest.mark.parametrize("shape", [name for name in SHAPE_NAMES if not RESUMABLE[name]])
def test_resume_refuses_what_status_does_not_offer(shaped: Shaped, shape: str) -> None:
    result = CliRunner().invoke(app, ["resume", shaped.ids[shape], "--db", shaped.url])
    assert result.exit_code != 0
    assert type(result.exception).__name__ == "UsageError", result.output


@pytest.mark.parametrize("shape", [name for name in SHAPE_NAMES if name.startswith("plugin")])
def test_sessions_list_a_plugin_loops_tracker_with_its_task_as_written(shaped: Shaped, shape):
    workdir = shaped.store.get_loop(shaped.ids[shape]).workdir
    wide = console.width
    console.width = 400  # the tracker's path is long: the table would wrap the task
    try:
        result = CliRunner().invoke(app, ["sessions", "-C", workdir])
    finally:
        console.width = wide
    assert result.exit_code == 0, result.output
    assert "Fix [loops.defaults] parsing." in result.output
    assert json.loads(CliRunner().invoke(app, ["sessions", "-C", workdir, "--json"]).output)


@pytest.mark.parametrize("shape", SHAPE_NAMES)
@pytest.mark.parametrize("mode", ["--text", "--raw"])
def test_logs_work_on_every_shape(shaped: Shaped, mode: str, shape: str) -> None:
    ralphctl(shaped, "logs", shaped.ids[shape], mode)


def test_resume_of_a_running_loop_names_the_process_running_it(shaped: Shaped) -> None:
    loop = shaped.store.get_loop(shaped.ids["fresh running"])
    result = CliRunner().invoke(app, ["resume", loop.id, "--db", shaped.url])
    assert f"it is running in process {loop.runner_pid} on {loop.runner_host}" in str(
        result.exception
    )


FLEET_NAMES = [shape.name for shape in FLEET_SHAPES]
FLEET_RESUMABLE = {shape.name: shape.resumable for shape in FLEET_SHAPES}


@pytest.mark.postgres
@pytest.mark.parametrize("json_out", [(), ("--json",)], ids=["text", "json"])
@pytest.mark.parametrize("args", [("status", "--all"), ("loops", "ls")], ids=["status", "ls"])
def test_listings_hold_every_fleet_loop(
    fleet_shaped: Shaped, args: tuple[str, ...], json_out: tuple[str, ...]
) -> None:
    output = ralphctl(fleet_shaped, *args, *json_out).output
    if json_out:
        assert {loop["id"] for loop in json.loads(output)} == set(fleet_shaped.ids.values())
    for loop_id in fleet_shaped.ids.values():
        assert loop_id in output


@pytest.mark.postgres
@pytest.mark.parametrize("json_out", [(), ("--json",)], ids=["text", "json"])
def test_stats_count_fleet_loops(fleet_shaped: Shaped, json_out: tuple[str, ...]) -> None:
    assert ralphctl(fleet_shaped, "loops", "stats", *json_out).output.strip()


@pytest.mark.postgres
@pytest.mark.parametrize("shape", FLEET_NAMES)
@pytest.mark.parametrize("command", [("history",), ("loops", "show")], ids=["history", "show"])
def test_one_loops_views_work_on_every_fleet_shape(
    fleet_shaped: Shaped, command: tuple[str, ...], shape: str
) -> None:
    loop_id = fleet_shaped.ids[shape]
    assert loop_id in ralphctl(fleet_shaped, *command, loop_id).output
    printed = json.loads(ralphctl(fleet_shaped, *command, loop_id, "--json").output)
    assert loop_id in json.dumps(printed)


@pytest.mark.postgres
@pytest.mark.parametrize("shape", FLEET_NAMES)
@pytest.mark.parametrize("mode", ["--text", "--raw"])
def test_logs_work_on_every_fleet_shape(fleet_shaped: Shaped, mode: str, shape: str) -> None:
    ralphctl(fleet_shaped, "logs", fleet_shaped.ids[shape], mode)


@pytest.mark.postgres
@pytest.mark.parametrize("shape", FLEET_NAMES)
def test_status_offers_resume_only_for_a_fleet_loop_that_can_be_resumed(
    fleet_shaped: Shaped, shape: str
) -> None:
    loop_id = fleet_shaped.ids[shape]
    offered = f"ralphctl resume {loop_id}" in ralphctl(fleet_shaped, "status", "--all").output
    assert not offered or FLEET_RESUMABLE[shape]


@pytest.mark.postgres
@pytest.mark.parametrize("shape", [name for name in FLEET_NAMES if not FLEET_RESUMABLE[name]])
def test_loops_resume_refuses_a_fleet_loop_it_cannot_continue(fleet_shaped: Shaped, shape: str):
    result = CliRunner().invoke(
        app, ["loops", "resume", fleet_shaped.ids[shape], "--db", fleet_shaped.url]
    )
    assert result.exit_code != 0
    assert type(result.exception).__name__ == "UsageError", result.output
