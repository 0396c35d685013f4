"""What the next turn of a hook-mode loop is told about the last one, as a fresh loop's next
prompt is: the same analysis (``domain.analyzer``) of the Stop's final text and of the
iteration's tool calls and permission denials, its notes appended to the block reason ("No
human is available…" after a question, an iteration that only ran tests, the denied tools,
an ignored status block)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ralphctl.domain.analyzer import analyse, prompt_notes
from ralphctl.engine.hookmode.activity import Activity

#: The decisions that send a reason back to the agent (Claude, Codex, Copilot: block;
#: Gemini: deny).
_CONTINUING = frozenset({"block", "deny"})
#: Cursor's only answer, a follow-up: the next user message.
_FOLLOWUP = "followup_message"


def iteration_notes(final_text: str, activity: Activity) -> list[str]:
    """The notes for the turn after an iteration that ended with ``final_text``."""
    return prompt_notes(analyse(activity.result(final_text)))


def with_notes(line: str | None, notes: Sequence[str]) -> str | None:
    """The hook's answer ``line`` with ``notes`` after its reason, if it continues the loop;
    any other answer unchanged."""
    if line is None or not notes:
        return line
    try:
        answer = json.loads(line)
    except ValueError:
        return line
    if not isinstance(answer, dict):
        return line
    key = _FOLLOWUP if _FOLLOWUP in answer else "reason"
    if key == "reason" and answer.get("decision") not in _CONTINUING:
        return line
    reason = answer.get(key)
    if not isinstance(reason, str):
        return line
    answer[key] = "\n\n".join([reason, *notes])
    return json.dumps(answer)
