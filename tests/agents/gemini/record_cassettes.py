"""Record the real Gemini CLI's stdout for each scenario into the cassettes folder.

Run from the repository root: ``.venv/bin/python -m tests.agents.gemini.record_cassettes
[NAME…]``. Each ``<name>.jsonl`` gets a sidecar ``<name>.json`` with the argv, the exit code,
the stderr tail and what the scenario shows.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a path: make ``tests`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.agents.gemini.harness import (
    INSTALL_HINT,
    VERSION,
    GeminiRun,
    gemini_binary,
    real_gemini_session,
)
from tests.agents.gemini.scenarios import SCENARIOS, Scenario
from tests.agents.recording import chosen_names, require_binary, save_run

CASSETTES = Path(__file__).resolve().parents[1] / "cassettes" / "gemini"


def record(scenario: Scenario, binary: Path) -> GeminiRun:
    with tempfile.TemporaryDirectory() as root, real_gemini_session(binary, Path(root)) as gemini:
        run = scenario.play(gemini)
    save_run(
        CASSETTES,
        scenario.name,
        scenario.shows,
        run,
        stdout_suffix=".jsonl",
        program="gemini",
        version=("gemini_cli_version", VERSION),
    )
    return run


def main(names: list[str]) -> int:
    binary = require_binary(gemini_binary(), INSTALL_HINT)
    chosen = chosen_names(names, SCENARIOS)
    CASSETTES.mkdir(parents=True, exist_ok=True)
    for name in chosen:
        run = record(SCENARIOS[name], binary)
        print(f"{name}: exit {run.exit_code}, {len(run.events)} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
