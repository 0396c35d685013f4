"""Copilot CLI's hook files: ralphctl's ``agentStop`` hook, as a hook-mode run adds it and as
``ralphctl plugin install --agent copilot`` writes it (CLI 1.0.102, checked against it).

- A hook file is ``{"version": 1, "hooks": {"<event>": [{"type": "command", "bash": CMD,
  "timeoutSec": N}]}}``; the CLI loads every ``*.json`` of the user's hooks dir
  (``$COPILOT_HOME/hooks``, a linked file too) and of a project's ``.github/hooks``, and runs
  the entries of every file: the same hook in two files runs twice.
- Headless (``copilot`` with a piped prompt), the user's hooks fire; a project's fire only in
  a folder the user trusted (``--trust-folder`` does it for one session, but not together
  with ``--session-id``).
- ``agentStop`` gets ``{sessionId, timestamp, cwd, transcriptPath, stopReason,
  stop_hook_active}``; ``{"decision": "block", "reason": R}`` sends R to the model as the next
  prompt of the same session. The CLI ends the turn at the 9th block in a row.
- The hook runs with the CLI's environment (``RALPHCTL_HOOK_SOCKET`` reaches it unchanged).
"""

from __future__ import annotations

import json
from typing import Any

EVENT = "agentStop"
HOOKS_DIR = "hooks"
#: The file ``ralphctl plugin install --agent copilot`` writes in a hooks dir.
INSTALLED_FILE = "ralphctl.json"
#: The file a run of ``ralphctl run --mode hook --agent copilot`` adds for itself.
RUN_FILE = "ralphctl-loop.json"
FORMAT_ARGS = ("--format", "copilot")


def hook_file(command: str, timeout_s: int) -> str:
    """A hook file running ``command`` (the hook with ``FORMAT_ARGS``) at every ``agentStop``."""
    entry: dict[str, Any] = {"type": "command", "bash": command, "timeoutSec": timeout_s}
    return json.dumps({"version": 1, "hooks": {EVENT: [entry]}}, indent=2) + "\n"
