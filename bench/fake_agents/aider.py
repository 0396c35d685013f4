#!/usr/bin/env python3
"""A stand-in for ``aider --message-file … --no-pretty --no-stream``, for the benchmarks:
prints the output recorded from the real Aider 0.86.2 (tests/agents/cassettes/aider/
create_file.txt: its announcements, a whole-format reply creating notes.txt, the ``Tokens:``
line, ``Applied edit to notes.txt``) line for line, appends the recorded ``message_send``
event to the file ``--analytics-log`` names (as Aider does) and exits 0. It never claims
completion: the recorded reply's closing tag is left out. Standard library only, so that it
starts as fast as Python can; it drains stdin (the prompt) unread.

    RALPHCTL_AIDER_BIN=bench/fake_agents/aider.py ralphctl run --agent aider --task ...
"""

from __future__ import annotations

import json
import sys

LINES = [
    "",
    "Aider v0.86.2",
    "Model: openai/gpt-mock with whole edit format",
    "Git repo: none",
    "Repo-map: disabled",
    "",
    "",
    "https://aider.chat/HISTORY.html#release-notes",
    "",
    "I will create the notes.",
    "",
    "",
    "",
    "notes.txt",
    "",
    "```",
    "hello from the mock",
    "",
    "```",
    "",
    "",
    "<promise>COMPLETE</promise>",
    "",
    "Tokens: 1.2k sent, 80 received.",
    "",
    "notes.txt",
    "Applied edit to notes.txt",
]
MESSAGE_SEND = {
    "event": "message_send",
    "properties": {
        "edit_format": "whole",
        "prompt_tokens": 1200,
        "completion_tokens": 80,
        "total_tokens": 1280,
        "cost": 0,
        "total_cost": 0.0,
    },
}
OUTPUT = "".join(line + "\n" for line in LINES if line != "<promise>COMPLETE</promise>").encode()


def main(argv: list[str]) -> int:
    if not sys.stdin.isatty():
        sys.stdin.buffer.read()
    if "--analytics-log" in argv[:-1]:
        with open(argv[argv.index("--analytics-log") + 1], "a") as log:
            log.write(json.dumps(MESSAGE_SEND) + "\n")
    sys.stdout.buffer.write(OUTPUT)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
