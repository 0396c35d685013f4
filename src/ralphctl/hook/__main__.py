"""``ralphctl-hook`` and ``python -m ralphctl.hook``: the Stop hook and its slash commands.

    stop [--format claude|codex|gemini|copilot|cursor]
                                          answer a Stop event (stdin JSON → stdout JSON)
    arm PROMPT… [options]                 start a loop in this session (/ralph-loop)
    cancel [--session ID]                 deactivate it (/cancel-ralph)
    status [--session ID]                 show it (/ralph-status)

The fastest start, for hooks.json: ``PYTHON -I -S …/ralphctl/hook/__main__.py stop``, run
as a file: without ``site`` the package directory is put on ``sys.path`` here.
"""

from __future__ import annotations

import os
import sys

if not __package__:  # run as a file, e.g. with -I -S: make ``ralphctl`` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

USAGE = "usage: ralphctl-hook {stop,arm,cancel,status} [options] (see --help of each)"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    command, rest = (args[0], args[1:]) if args else ("", [])
    if command == "stop":
        from ralphctl.hook.handler import main as stop

        return stop(rest)
    if command in ("arm", "cancel", "status"):
        from ralphctl.hook.commands import main as commands

        return commands(command, rest)
    sys.stderr.write(USAGE + "\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
