"""The shared part of the record_cassettes scripts writes what the cassette tests read."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.agents.recording import chosen_names, save_run


@dataclass(frozen=True)
class Run:
    argv: tuple[str, ...]
    exit_code: int
    stdout: bytes
    stderr: str


def test_a_run_is_saved_as_stdout_side_files_and_a_sidecar(tmp_path: Path) -> None:
    (tmp_path / "ok.stale").write_bytes(b"old")
    run = Run(("/opt/bin/tool", "-p", "x"), 3, b'{"a": 1}\n', "e" * 2500)
    save_run(
        tmp_path,
        "ok",
        "a plain answer",
        run,
        stdout_suffix=".jsonl",
        program="tool",
        version=("tool_version", "1.2.3"),
        side_files={".usage.json": b"{}", ".stale": None},
        extra={"env": {"K": "v"}},
    )
    assert (tmp_path / "ok.jsonl").read_bytes() == run.stdout
    assert (tmp_path / "ok.usage.json").read_bytes() == b"{}"
    assert not (tmp_path / "ok.stale").exists()
    assert json.loads((tmp_path / "ok.json").read_text()) == {
        "scenario": "ok",
        "shows": "a plain answer",
        "argv": ["tool", "-p", "x"],
        "env": {"K": "v"},
        "exit_code": 3,
        "stderr_tail": "e" * 2000,
        "tool_version": "1.2.3",
    }


def test_no_names_choose_every_scenario_and_an_unknown_one_exits_2() -> None:
    assert chosen_names([], {"a": 1, "b": 2}) == ["a", "b"]
    assert chosen_names(["b"], {"a": 1, "b": 2}) == ["b"]
    with pytest.raises(SystemExit) as exited:
        chosen_names(["c"], {"a": 1})
    assert exited.value.code == 2
