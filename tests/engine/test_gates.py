"""Verification gates, run for real: sh -c in the work dir, own process group, bounded output."""

from __future__ import annotations

import asyncio
import tracemalloc
from pathlib import Path

from ralphctl.engine.gates import (
    OUTPUT_TAIL_BYTES,
    GateResult,
    gate_report,
    run_gates,
    to_json,
)
from tests.agents.procs import gone


def run(commands: list[str], workdir: Path, timeout_s: float = 60.0) -> list[GateResult]:
    return asyncio.run(run_gates(commands, workdir, timeout_s=timeout_s))


def test_passing_gates_run_in_order_in_the_work_dir(tmp_path):
    results = run(["echo one >> log", "pwd >> log", "test -s log"], tmp_path)

    assert [(r.passed, r.exit_code) for r in results] == [(True, 0)] * 3
    assert (tmp_path / "log").read_text() == f"one\n{tmp_path}\n"
    assert gate_report(results) is None


def test_a_failing_gate_keeps_its_output_and_stops_the_rest(tmp_path):
    results = run(
        ["true", "echo 'E   assert 1 == 2' >&2; echo '1 failed'; exit 1", "touch ran"], tmp_path
    )

    assert [r.passed for r in results] == [True, False, False]
    failed, skipped = results[1], results[2]
    assert failed.exit_code == 1
    assert failed.output_tail == "E   assert 1 == 2\n1 failed\n"
    assert skipped.skipped
    assert skipped.exit_code is None
    assert not (tmp_path / "ran").exists()


def test_the_report_names_the_failing_command_its_output_and_what_was_not_run(tmp_path):
    results = run(["echo 'E   assert 1 == 2'; exit 1", "ruff check ."], tmp_path)

    assert gate_report(results) == (
        "The verification gate `echo 'E   assert 1 == 2'; exit 1` failed with exit code 1.\n"
        "The end of its output:\n"
        "```\n"
        "E   assert 1 == 2\n"
        "```\n"
        "Not run because of this failure: `ruff check .`."
    )


def test_the_report_keeps_only_the_end_of_a_long_output():
    output = "".join(f"line {i}\n" for i in range(2000))
    report = gate_report([GateResult("pytest", False, 1, 10, output)])

    assert report is not None
    assert "line 1999" in report
    assert "line 0\n" not in report
    assert len(report) < 2200


def test_the_report_fence_is_longer_than_any_backticks_in_the_output():
    report = gate_report([GateResult("make", False, 2, 10, "```\nnot the end\n```")])

    assert report is not None
    assert "````\n```\nnot the end\n```\n````" in report


def test_stdin_is_empty_so_a_gate_never_waits_for_input(tmp_path):
    (result,) = run(["cat; echo read-all"], tmp_path)

    assert result.passed
    assert result.output_tail == "read-all\n"


def test_a_gate_that_times_out_is_killed_with_its_whole_process_group(tmp_path):
    command = "sleep 300 & echo $! > child.pid; echo started; wait"
    (result,) = run([command], tmp_path, timeout_s=1.5)

    assert result.timed_out
    assert not result.passed
    assert result.output_tail == "started\n"
    assert gone(int((tmp_path / "child.pid").read_text()))
    assert "timed out after" in (gate_report([result]) or "")


def test_a_gate_that_ignores_sigterm_is_killed(tmp_path):
    command = "trap '' TERM; echo $$ > shell.pid; while :; do sleep 0.05; done"
    (result,) = asyncio.run(run_gates([command], tmp_path, timeout_s=1.5, grace_s=0.2))

    assert result.timed_out
    assert result.exit_code == -9
    assert gone(int((tmp_path / "shell.pid").read_text()))


def test_background_children_do_not_outlive_a_passing_gate(tmp_path):
    (result,) = run(["sleep 300 > /dev/null 2>&1 & echo $! > child.pid"], tmp_path)

    assert result.passed
    assert gone(int((tmp_path / "child.pid").read_text()))


def test_a_huge_output_keeps_only_a_bounded_tail(tmp_path):
    command = "yes 0123456789 | head -n 3000000; echo the-last-line"
    tracemalloc.start()
    try:
        (result,) = run([command], tmp_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert result.passed
    assert result.output_tail.endswith("0123456789\nthe-last-line\n")
    assert len(result.output_tail) == OUTPUT_TAIL_BYTES
    assert peak < 4 * 1024 * 1024  # the output was 33 MB


def test_an_interrupt_stops_the_running_gate_and_skips_the_rest(tmp_path):
    started = tmp_path / "started"

    async def interrupt_once_started() -> list[GateResult]:
        interrupt = asyncio.Event()
        gates = asyncio.create_task(
            run_gates(
                ["sleep 300 & echo $! > child.pid; touch started; wait", "touch ran"],
                tmp_path,
                timeout_s=600,
                interrupt=interrupt,
            )
        )
        while not started.exists():
            await asyncio.sleep(0.01)
        interrupt.set()
        return await gates

    interrupted, skipped = asyncio.run(interrupt_once_started())

    assert interrupted.interrupted
    assert not interrupted.passed
    assert not interrupted.timed_out
    assert skipped.skipped
    assert not (tmp_path / "ran").exists()
    assert gone(int((tmp_path / "child.pid").read_text()))


def test_a_missing_work_dir_fails_the_gate_without_raising(tmp_path):
    (result,) = run(["true"], tmp_path / "missing")

    assert not result.passed
    assert result.exit_code is None
    assert "cannot run the gate" in result.output_tail
    assert "`true` could not be started" in (gate_report([result]) or "")


def test_no_gates_means_nothing_to_report(tmp_path):
    assert run([], tmp_path) == []
    assert gate_report([]) is None


def test_results_are_stored_as_plain_json(tmp_path):
    results = run(["exit 3", "true"], tmp_path)

    assert to_json(results) == [
        {
            "command": "exit 3",
            "passed": False,
            "exit_code": 3,
            "duration_ms": results[0].duration_ms,
            "output_tail": "",
            "timed_out": False,
            "interrupted": False,
            "skipped": False,
        },
        {
            "command": "true",
            "passed": False,
            "exit_code": None,
            "duration_ms": 0,
            "output_tail": "",
            "timed_out": False,
            "interrupted": False,
            "skipped": True,
        },
    ]
