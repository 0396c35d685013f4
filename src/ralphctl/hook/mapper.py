"""Map the neutral Stop intent to each agent's hook output (one JSON object, or nothing).

Claude Code and Codex: ``{"decision": "block", "reason": …, "systemMessage": …}``; an allowed
stop prints nothing, or only ``{"systemMessage": …}``. Gemini's AfterAgent hook says
``"deny"`` where the others say ``"block"``. Copilot's agentStop takes only ``decision`` and
``reason`` (no message for the user). Cursor's stop hook has one output,
``{"followup_message": …}``, sent as the next user message; an allowed stop prints nothing.
OpenCode has no hook: ralphctl's plugin reads ``{"decision": "block", "reason": …}`` and
prompts the session with the reason.
A Gemini block may also ask for a fresh context, ``hookSpecificOutput.clearContext``.
A block's reason is never empty (Codex rejects an empty one, and it is the agent's next
instruction).
"""

from __future__ import annotations

from ralphctl.domain.defaults import CONTINUE_MESSAGE
from ralphctl.hook.jsonio import dumps

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ralphctl.hook.stop import Intent

FORMATS = ("claude", "codex", "gemini", "copilot", "cursor", "opencode")
_BLOCK_WORD = {
    "claude": "block",
    "codex": "block",
    "gemini": "deny",
    "copilot": "block",
    "opencode": "block",
}
#: Formats whose CLI shows a ``systemMessage`` to the user.
_SYSTEM_MESSAGE = frozenset({"claude", "codex", "gemini"})
#: Formats whose CLI can clear the model's memory at a block (``clear_context``).
CLEARS_CONTEXT = ("gemini",)


def check(output_format: str) -> None:
    if output_format not in FORMATS:
        raise ValueError(f"unknown hook output format {output_format!r}: use {', '.join(FORMATS)}")


def render(intent: Intent | None, output_format: str) -> str | None:
    """The line to print for ``intent`` in ``output_format``; None means print nothing."""
    check(output_format)
    if intent is None:
        return None
    from ralphctl.hook.stop import StopBlock  # the brain: only once a loop applies

    document: dict[str, object] = {}
    if isinstance(intent, StopBlock):
        reason = intent.reason.strip() or CONTINUE_MESSAGE
        if output_format == "cursor":
            return dumps({"followup_message": reason})
        document["decision"] = _BLOCK_WORD[output_format]
        document["reason"] = reason
        if intent.clear_context and output_format in CLEARS_CONTEXT:
            document["hookSpecificOutput"] = {"hookEventName": "AfterAgent", "clearContext": True}
    if intent.system_message and output_format in _SYSTEM_MESSAGE:
        document["systemMessage"] = intent.system_message
    return dumps(document) if document else None
