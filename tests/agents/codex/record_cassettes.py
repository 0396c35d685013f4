"""Record the real Codex CLI's stdout for each scenario into the cassettes folder.

Run from the repository root: ``.venv/bin/python -m tests.agents.codex.record_cassettes
[NAME…]``. Each ``<name>.jsonl`` gets a sidecar ``<name>.json`` with the argv, the exit code,
the stderr tail and what the scenario shows.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a path: make ``tests`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.agents.codex.harness import (
    INSTALL_HINT,
    VERSION,
    CodexRun,
    codex_binary,
    real_codex_session,
)
from tests.agents.codex.scenarios import SCENARIOS, Scenario
from tests.agents.recording import chosen_names, require_binary, save_run

CASSETTES = Path(__file__).resolve().parents[1] / "cassettes" / "codex"


def record(scenario: Scenario, binary: Path) -> CodexRun:
    with tempfile.TemporaryDirectory() as root, real_codex_session(binary, Path(root)) as codex:
        run = scenario.play(codex)
    save_run(
        CASSETTES,
        scenario.name,
        scenario.shows,
        run,
        stdout_suffix=".jsonl",
        program="codex",
        version=("codex_version", VERSION),
    )
    return run


def main(names: list[str]) -> int:
    binary = require_binary(codex_binary(), INSTALL_HINT)
    chosen = chosen_names(names, SCENARIOS)
    CASSETTES.mkdir(parents=True, exist_ok=True)
    for name in chosen:
        run = record(SCENARIOS[name], binary)
        print(f"{name}: exit {run.exit_code}, {len(run.events)} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
