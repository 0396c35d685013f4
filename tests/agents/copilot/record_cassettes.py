"""Record the real Copilot CLI's stdout for each scenario into the cassettes folder.

Run from the repository root: ``.venv/bin/python -m tests.agents.copilot.record_cassettes
[NAME…]``. Each scenario gives ``<name>.jsonl`` (stdout), ``<name>.usage.json`` (the usage
file the CLI wrote, when it wrote one) and ``<name>.json`` (exit code, stderr tail, what the
scenario shows).
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.agents.copilot.harness import (
    INSTALL_HINT,
    VERSION,
    CopilotRun,
    copilot_binary,
    copilot_session,
)
from tests.agents.copilot.scenarios import SCENARIOS, Scenario
from tests.agents.recording import chosen_names, require_binary, save_run

CASSETTES = Path(__file__).resolve().parents[1] / "cassettes" / "copilot"


def record(scenario: Scenario, binary: Path) -> CopilotRun:
    with copilot_session(binary) as copilot:
        run = scenario.play(copilot)
    save_run(
        CASSETTES,
        scenario.name,
        scenario.shows,
        run,
        stdout_suffix=".jsonl",
        program="copilot",
        version=("copilot_version", VERSION),
        side_files={".usage.json": run.usage},
    )
    return run


def main(names: list[str]) -> int:
    binary = require_binary(copilot_binary(), INSTALL_HINT)
    chosen = chosen_names(names, SCENARIOS)
    CASSETTES.mkdir(parents=True, exist_ok=True)
    for name in chosen:
        run = record(SCENARIOS[name], binary)
        print(f"{name}: exit {run.exit_code}, {len(run.events)} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
