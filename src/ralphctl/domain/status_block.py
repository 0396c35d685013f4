"""The optional status block an agent may end its answer with (ralph-claude-code's format).

::

    ---RALPH_STATUS---
    STATUS: IN_PROGRESS | COMPLETE | BLOCKED
    EXIT_SIGNAL: true | false
    FILES_MODIFIED: <number>                      (optional)
    TASKS_COMPLETED_THIS_LOOP: <number>           (optional)
    TESTS_STATUS: PASSING | FAILING | NOT_RUN | SKIPPED   (optional)
    WORK_TYPE: <WORD>, e.g. IMPLEMENTATION, TESTING       (optional)
    RECOMMENDATION: <one line>                    (optional)
    ---END_RALPH_STATUS---

Parsed strictly: only the last block counts (in a code fence or not); STATUS and EXIT_SIGNAL
are required; a known key with a bad value (such as the template's ``IN_PROGRESS | COMPLETE |
BLOCKED`` echoed back), a repeated key, a line that is not ``KEY: value`` or a missing end line
makes the block invalid, with the reason. Unknown keys are ignored (peers add their own).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

START = "---RALPH_STATUS---"
END = "---END_RALPH_STATUS---"
_LINE = re.compile(r"([A-Z][A-Z0-9_]*):[ \t]*(.*)")
_COUNT = re.compile(r"\d{1,9}")
_WORD = re.compile(r"[A-Z][A-Z_]*")
_TESTS = frozenset({"PASSING", "FAILING", "NOT_RUN", "SKIPPED"})
_BOOLEANS = {"true": True, "false": False}


class AgentStatus(StrEnum):
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETE = "COMPLETE"
    BLOCKED = "BLOCKED"


@dataclass(frozen=True, slots=True)
class StatusBlock:
    status: AgentStatus
    exit_signal: bool
    files_modified: int | None = None
    tasks_completed: int | None = None
    tests_status: str | None = None
    work_type: str | None = None
    recommendation: str | None = None


class StatusBlockError(ValueError):
    """The agent wrote a status block that does not follow the format."""


def parse_status_block(text: str) -> StatusBlock | None:
    """The last status block of ``text``; None when there is none; StatusBlockError if bad."""
    lines = [line.strip() for line in text.splitlines()]
    starts = [index for index, line in enumerate(lines) if line == START]
    if not starts:
        return None
    begin = starts[-1] + 1
    end = next((index for index in range(begin, len(lines)) if lines[index] == END), None)
    if end is None:
        raise StatusBlockError(f"the status block has no {END} line")
    return _block(_fields(lines[begin:end]))


def _fields(lines: list[str]) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in filter(None, lines):
        match = _LINE.fullmatch(line)
        if match is None:
            raise StatusBlockError(f"not a KEY: value line: {line!r}")
        key, value = match.group(1), match.group(2).strip()
        if key in fields:
            raise StatusBlockError(f"{key} is given twice")
        fields[key] = value
    return fields


def _block(fields: dict[str, str]) -> StatusBlock:
    for required in ("STATUS", "EXIT_SIGNAL"):
        if required not in fields:
            raise StatusBlockError(f"{required} is missing")
    status = fields["STATUS"]
    if status not in AgentStatus.__members__:
        raise StatusBlockError(f"STATUS must be IN_PROGRESS, COMPLETE or BLOCKED, not {status!r}")
    exit_signal = _BOOLEANS.get(fields["EXIT_SIGNAL"].lower())
    if exit_signal is None:
        raise StatusBlockError(f"EXIT_SIGNAL must be true or false, not {fields['EXIT_SIGNAL']!r}")
    tests = fields.get("TESTS_STATUS")
    if tests is not None and tests not in _TESTS:
        raise StatusBlockError(f"TESTS_STATUS must be one of {', '.join(sorted(_TESTS))}")
    work_type = fields.get("WORK_TYPE")
    if work_type is not None and not _WORD.fullmatch(work_type):
        raise StatusBlockError(f"WORK_TYPE must be one upper-case word, not {work_type!r}")
    return StatusBlock(
        status=AgentStatus[status],
        exit_signal=exit_signal,
        files_modified=_count(fields, "FILES_MODIFIED"),
        tasks_completed=_count(fields, "TASKS_COMPLETED_THIS_LOOP"),
        tests_status=tests,
        work_type=work_type,
        recommendation=fields.get("RECOMMENDATION") or None,
    )


def _count(fields: dict[str, str], key: str) -> int | None:
    value = fields.get(key)
    if value is None:
        return None
    if not _COUNT.fullmatch(value):
        raise StatusBlockError(f"{key} must be a whole number, not {value!r}")
    return int(value)
