"""Response analysis: deterministic signals read from one iteration's result (never an LLM).

The signals feed the circuit breaker (``breaker_outcome``) and the next prompt
(``prompt_notes``). User guide: docs/guards.md.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from ralphctl.domain.breaker import IterationOutcome, error_signature
from ralphctl.domain.model import IterationResult, ToolUse
from ralphctl.domain.questions import find_question
from ralphctl.domain.status_block import StatusBlock, StatusBlockError, parse_status_block
from ralphctl.domain.steering import NO_HUMAN_NOTE


class ErrorClass(StrEnum):
    RATE_LIMITED = "rate_limited"
    API_OVERLOADED = "api_overloaded"
    AUTH = "auth"
    API_ERROR = "api_error"
    TIMEOUT = "timeout"
    AGENT_LIMIT = "agent_limit"
    TOOL_ERROR = "tool_error"
    CRASH = "crash"
    AGENT_EXIT = "agent_exit"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class AnalyzerConfig:
    """Output collapse: the output is shorter than ``1 - collapse_drop`` times the median of
    the last ``collapse_window`` outputs (needing ``collapse_min_history`` of them, with a
    median of at least ``collapse_min_median_chars``, so that short answers are no noise)."""

    collapse_drop: float = 0.7
    collapse_window: int = 5
    collapse_min_history: int = 3
    collapse_min_median_chars: int = 200

    def __post_init__(self) -> None:
        if not 0 < self.collapse_drop < 1:
            raise ValueError(f"collapse_drop must be between 0 and 1: {self.collapse_drop}")
        if self.collapse_window < 1 or self.collapse_min_history < 1:
            raise ValueError("collapse_window and collapse_min_history must be at least 1")


DEFAULT_CONFIG = AnalyzerConfig()


@dataclass(frozen=True, slots=True)
class Signals:
    """What one iteration's result says, beyond success or failure."""

    output_chars: int
    asked_question: bool = False
    question: str | None = None
    test_only: bool = False
    output_collapsed: bool = False
    status_block: StatusBlock | None = None
    status_block_error: str | None = None
    permission_denied: tuple[str, ...] = ()
    error_class: ErrorClass | None = None
    error_signature: str | None = None

    @property
    def declared_progress(self) -> bool:
        """The agent's status block says it modified files."""
        block = self.status_block
        return block is not None and (block.files_modified or 0) > 0


def analyse(
    result: IterationResult,
    *,
    previous_lengths: Sequence[int] = (),
    config: AnalyzerConfig = DEFAULT_CONFIG,
) -> Signals:
    """The signals of ``result``; ``previous_lengths`` are the final-text lengths of the
    loop's earlier successful iterations, oldest first (for the output collapse)."""
    text = result.final_text
    block, block_error = _status_block(text)
    error_class = classify_error(result)
    question = find_question(text) if not result.is_error else None
    return Signals(
        output_chars=len(text),
        asked_question=question is not None,
        question=question,
        test_only=_test_only(result.tool_uses, block),
        output_collapsed=not result.is_error and _collapsed(len(text), previous_lengths, config),
        status_block=block,
        status_block_error=block_error,
        permission_denied=tuple(sorted({d.tool_name for d in result.permission_denials})),
        error_class=error_class,
        error_signature=(
            None
            if error_class is None
            else error_signature(error_class, result.error_message or text)
        ),
    )


def prompt_notes(signals: Signals) -> list[str]:
    """The sentences the next prompt should carry because of these signals."""
    notes: list[str] = []
    if signals.asked_question:
        notes.append(NO_HUMAN_NOTE)
    if signals.test_only:
        notes.append(
            "The last iteration only ran tests and changed nothing: if the work is done, "
            "declare completion; otherwise make the next change."
        )
    if signals.permission_denied:
        notes.append(
            f"These tools were denied in the last iteration and will be denied again: "
            f"{', '.join(signals.permission_denied)}. Do the work without them, or declare "
            "that you are blocked."
        )
    if signals.status_block_error:
        notes.append(
            f"Your status block was ignored ({signals.status_block_error}); follow its format "
            "exactly or leave it out."
        )
    return notes


def edited_files(result: IterationResult) -> bool:
    """The run called a tool its adapter marks as editing files, and was not refused it: what
    tells progress where git cannot (outside a git work tree)."""
    denied = {denial.tool_use_id for denial in result.permission_denials if denial.tool_use_id}
    return any(tool.edits_files and tool.tool_use_id not in denied for tool in result.tool_uses)


def breaker_outcome(
    iteration: int,
    result: IterationResult,
    signals: Signals,
    *,
    files_changed: bool,
    usage_limited: bool = False,
) -> IterationOutcome:
    """The circuit breaker's view of an iteration.

    ``files_changed``: files changed during this iteration, commits included (the engine's
    git view, per iteration and not since the loop's start); the agent's declared changes
    count as progress too. ``usage_limited``: a usage limit cut the run short. An agent that
    stopped at its own turn or budget limit has not failed.
    """
    return IterationOutcome(
        iteration=iteration,
        errored=signals.error_class not in (None, ErrorClass.AGENT_LIMIT),
        error_signature=signals.error_signature,
        progressed=files_changed or signals.declared_progress,
        denied_tools=signals.permission_denied,
        interrupted=result.interrupted,
        usage_limited=usage_limited,
    )


# --- error classes ---------------------------------------------------------------------------

_API_ERROR_STATUS = re.compile(r"\bAPI Error:? (?:[^()\n]*\()?(\d{3})\b")
_AUTH_ERRORS = frozenset({"authentication_failed", "oauth_org_not_allowed", "billing_error"})
_AGENT_LIMITS = frozenset({"max_turns", "budget_exhausted"})
_TOOL_FAILURES = frozenset({"malformed_tool_use_exhausted", "tool_deferred_unavailable"})
_API_FAILURES = frozenset({"api_error", "model_error"})


def classify_error(result: IterationResult) -> ErrorClass | None:
    """Why a failed iteration failed; None when it did not fail (or the user interrupted it)."""
    if not result.is_error or result.interrupted:
        return None
    if result.timed_out:
        return ErrorClass.TIMEOUT
    status = result.api_error_status or _status_in_text(result.final_text)
    error = result.assistant_error
    rejected = result.rate_limit is not None and result.rate_limit.status == "rejected"
    if status == 429 or error == "rate_limit" or rejected:
        return ErrorClass.RATE_LIMITED
    if status == 529 or error == "overloaded" or "overloaded_error" in result.final_text:
        return ErrorClass.API_OVERLOADED
    if status in (401, 403) or error in _AUTH_ERRORS:
        return ErrorClass.AUTH
    if status is not None or error is not None or result.terminal_reason in _API_FAILURES:
        return ErrorClass.API_ERROR
    if result.terminal_reason in _AGENT_LIMITS:
        return ErrorClass.AGENT_LIMIT
    if result.terminal_reason in _TOOL_FAILURES:
        return ErrorClass.TOOL_ERROR
    if result.truncated:
        return ErrorClass.CRASH
    if result.exit_code not in (0, None):
        return ErrorClass.AGENT_EXIT
    return ErrorClass.UNKNOWN


def _status_in_text(text: str) -> int | None:
    """The HTTP status of an ``API Error: 529 …`` / ``API Error: … (429)`` message (old CLIs
    report no ``api_error_status``)."""
    match = _API_ERROR_STATUS.search(text[:500])
    return int(match.group(1)) if match else None


# --- test-only iterations --------------------------------------------------------------------

_SHELL_TOOLS = frozenset({"bash", "shell", "run_shell_command", "exec_command", "local_shell"})
_COMMAND_SEPARATOR = re.compile(r"&&|\|\||[;|\n]")
_WRAPPER = re.compile(
    r"^(?:\w+=\S*\s+|(?:uv|poetry|pipenv|hatch|pdm|bundle) (?:run|exec)\s+|npx\s+|"
    r"timeout\s+\S+\s+|time\s+|python3?\s+-m\s+)+"
)
_TEST_RUNNER = re.compile(
    r"(?:\S*/)?(?:pytest|py\.test|tox|nox|unittest|jest|vitest|mocha|bats|rspec|phpunit|ctest"
    r"|(?:npm|pnpm|yarn|bun|deno)(?: run)? test|cargo (?:test|nextest)|go test|gradlew? test"
    r"|mvn(?: \S+)* test|dotnet test|make (?:test|check)|mix test|swift test"
    r"|rake test)\b"
)
_READ_ONLY = re.compile(
    r"(?:cd|ls|cat|head|tail|wc|pwd|grep|rg|find|tree|which|echo|"
    r"git (?:status|diff|log|show|branch))\b"
)


def _test_only(tools: Sequence[ToolUse], block: StatusBlock | None) -> bool:
    """Ran tests and nothing that edits: no file-editing tool (its adapter marks those), every
    shell command a test run or a read-only look. Without tool data, the status block's
    ``WORK_TYPE: TESTING`` with ``FILES_MODIFIED: 0`` says so."""
    if not tools:
        return block is not None and block.work_type == "TESTING" and block.files_modified == 0
    ran_tests = False
    for tool in tools:
        if tool.edits_files:
            return False
        if tool.name.lower() in _SHELL_TOOLS:
            kinds = {_command_kind(part) for part in _COMMAND_SEPARATOR.split(tool.summary)}
            if "other" in kinds:
                return False
            ran_tests = ran_tests or "test" in kinds
    return ran_tests


def _command_kind(command: str) -> str:
    """``test``, ``read`` (read-only or empty) or ``other``, for one simple shell command."""
    command = _WRAPPER.sub("", command.strip())
    if not command or _READ_ONLY.match(command):
        return "read"
    return "test" if _TEST_RUNNER.match(command) else "other"


# --- helpers ---------------------------------------------------------------------------------


def _status_block(text: str) -> tuple[StatusBlock | None, str | None]:
    try:
        return parse_status_block(text), None
    except StatusBlockError as error:
        return None, str(error)


def _collapsed(chars: int, previous: Sequence[int], config: AnalyzerConfig) -> bool:
    recent = list(previous)[-config.collapse_window :]
    if len(recent) < config.collapse_min_history:
        return False
    median = statistics.median(recent)
    fell = median - chars
    return median >= config.collapse_min_median_chars and fell > config.collapse_drop * median
