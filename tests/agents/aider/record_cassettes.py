"""Record the real Aider's stdout for each scenario into the cassettes folder.

Run from the repository root: ``.venv/bin/python -m tests.agents.aider.record_cassettes
[NAME…]`` (``rate_limited_429`` takes about 100 s: Aider's own back-off). Each scenario gives
``<name>.txt`` (stdout), ``<name>.analytics.jsonl`` (the analytics log Aider wrote) and
``<name>.json`` (exit code, stderr tail, what the scenario shows).
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.agents.aider.harness import (
    INSTALL_HINT,
    VERSION,
    AiderRun,
    aider_binary,
    aider_session,
)
from tests.agents.aider.scenarios import SCENARIOS, Scenario
from tests.agents.recording import chosen_names, require_binary, save_run

CASSETTES = Path(__file__).resolve().parents[1] / "cassettes" / "aider"


def record(scenario: Scenario, binary: Path) -> AiderRun:
    with aider_session(binary) as aider:
        run = scenario.play(aider)
    save_run(
        CASSETTES,
        scenario.name,
        scenario.shows,
        run,
        stdout_suffix=".txt",
        program="aider",
        version=("aider_version", VERSION),
        side_files={".analytics.jsonl": run.log},
    )
    return run


def main(names: list[str]) -> int:
    binary = require_binary(aider_binary(), INSTALL_HINT)
    chosen = chosen_names(names, SCENARIOS)
    CASSETTES.mkdir(parents=True, exist_ok=True)
    for name in chosen:
        run = record(SCENARIOS[name], binary)
        print(f"{name}: exit {run.exit_code}, {len(run.stdout.splitlines())} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
