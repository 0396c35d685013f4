"""Record the real CLI's stdout for each scenario into ``cassettes/<name>.jsonl``.

Run from the repository root: ``.venv/bin/python -m tests.realcli.record_cassettes
[--version V] [NAME…]`` (or ``.venv/bin/python tests/realcli/record_cassettes.py …``). Each
cassette gets a sidecar ``<name>.json`` with the exit code, the stderr tail and what the
scenario shows. The newest supported CLI records into ``cassettes/``; an older pinned one
(``--version 2.1.100``) into ``cassettes/claude-<version>/``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a path: make ``tests`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.agents.recording import chosen_names, require_binary, save_run
from tests.realcli.harness import (
    INSTALL_HINT,
    NEWEST_VERSION,
    ClaudeRun,
    claude_binary,
    real_claude_session,
)
from tests.realcli.scenarios import SCENARIOS, Scenario

CASSETTES = Path(__file__).resolve().parent / "cassettes"


def cassette_dir(version: str) -> Path:
    """Where the cassettes of one pinned CLI version live."""
    return CASSETTES if version == NEWEST_VERSION else CASSETTES / f"claude-{version}"


def record(scenario: Scenario, binary: Path, version: str = NEWEST_VERSION) -> ClaudeRun:
    with real_claude_session(binary, version=version) as claude:
        run = scenario.play(claude)
    save_run(
        cassette_dir(version),
        scenario.name,
        scenario.shows,
        run,
        stdout_suffix=".jsonl",
        program="claude",
        version=("claude_code_version", run.init.get("claude_code_version")),
    )
    return run


def main(args: list[str]) -> int:
    version, names = NEWEST_VERSION, args
    if args[:1] == ["--version"]:
        if len(args) < 2:
            print("--version needs a version, e.g. --version 2.1.100", file=sys.stderr)
            return 2
        version, names = args[1], args[2:]
    found = claude_binary(None if version == NEWEST_VERSION else version)
    binary = require_binary(found, f"Claude Code {version}: {INSTALL_HINT}")
    chosen = chosen_names(names, SCENARIOS)
    cassette_dir(version).mkdir(parents=True, exist_ok=True)
    for name in chosen:
        run = record(SCENARIOS[name], binary, version)
        print(f"{name}: exit {run.exit_code}, {len(run.events)} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
