#!/usr/bin/env python3
"""A stand-in for ``copilot --output-format json``, for the benchmarks: prints one stream
recorded from the real GitHub Copilot CLI 1.0.102 (tests/agents/cassettes/copilot/create_file:
the prompt echo, a ``create`` tool call writing notes.txt, a closing message, the ``result``
line), byte for byte as the CLI printed it, writes the usage file recorded with it where
``--usage-output-file`` says (as the CLI does before its ``result`` line) and exits 0. The
stream is read from the cassette (11 KB of JSON lines, too wide to inline). Standard library
only, so that it starts as fast as Python can; it drains stdin (the prompt) unread.

    RALPHCTL_COPILOT_BIN=bench/fake_agents/copilot.py ralphctl run --agent copilot --task ...
"""

from __future__ import annotations

import sys
from pathlib import Path

CASSETTE = Path(__file__).resolve().parents[2] / "tests" / "agents" / "cassettes" / "copilot"
NAME = "create_file"


def main(argv: list[str]) -> int:
    if not sys.stdin.isatty():
        sys.stdin.buffer.read()
    if "--usage-output-file" in argv[:-1]:
        target = Path(argv[argv.index("--usage-output-file") + 1])
        target.write_bytes((CASSETTE / f"{NAME}.usage.json").read_bytes())
    sys.stdout.buffer.write((CASSETTE / f"{NAME}.jsonl").read_bytes())
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
