"""Map the neutral Stop intent to each agent's hook output (one JSON object, or nothing).

Claude Code and Codex: ``{"decision": "block", "reason": …, "systemMessage": …}``; an allowed
stop prints nothing, or only ``{"systemMessage": …}``. Gemini's AfterAgent hook says
``"deny"`` where the others say ``"block"``. A block's reason is never empty (Codex rejects
an empty one, and it is the agent's next instruction).
"""

from __future__ import annotations

from ralphctl.domain.defaults import CONTINUE_MESSAGE
from ralphctl.hook.jsonio import dumps
from ralphctl.hook.stop import Intent, StopBlock

FORMATS = ("claude", "codex", "gemini")
_BLOCK_WORD = {"claude": "block", "codex": "block", "gemini": "deny"}


def check(output_format: str) -> None:
    if output_format not in _BLOCK_WORD:
        raise ValueError(f"unknown hook output format {output_format!r}: use {', '.join(FORMATS)}")


def render(intent: Intent | None, output_format: str) -> str | None:
    """The line to print for ``intent`` in ``output_format``; None means print nothing."""
    check(output_format)
    if intent is None:
        return None
    document: dict[str, str] = {}
    if isinstance(intent, StopBlock):
        document["decision"] = _BLOCK_WORD[output_format]
        document["reason"] = intent.reason.strip() or CONTINUE_MESSAGE
    if intent.system_message:
        document["systemMessage"] = intent.system_message
    return dumps(document) if document else None
