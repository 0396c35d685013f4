"""Default budgets and markers, shared by both loop modes (stdlib only: the hook imports it)."""

from __future__ import annotations

MAX_ITERATIONS = 100
MAX_RUNTIME_S = 4 * 3600.0
MAX_COST_USD = 300.0
CHECKPOINT_INTERVAL = 5
COOLDOWN_S = 5.0
COMPLETION_SIGNAL = "<promise>COMPLETE</promise>"
CIRCUIT_BREAKER_THRESHOLD = 5
ITERATION_TIMEOUT_S = 3600.0
PERMISSION_MODE = "acceptEdits"
CONTINUE_MESSAGE = "Continue working on the task. Check the tracker for remaining items."
