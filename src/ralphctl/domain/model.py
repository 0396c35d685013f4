"""Plain data the brain reasons about: what one agent run produced, and loop totals."""

from __future__ import annotations

from dataclasses import dataclass, field

#: The model name given to tokens an agent reported without naming its model.
UNNAMED_MODEL = "(unnamed model)"


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens of one agent run (or a sum of runs)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total(self) -> int:
        """Input plus output."""
        return self.input + self.output

    def counted(self, *, include_cache: bool) -> int:
        """What the ``max_tokens`` budget counts: input + output, plus cache reads and writes
        when ``include_cache`` is set."""
        cache = self.cache_read + self.cache_write if include_cache else 0
        return self.total + cache

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
        )


@dataclass(frozen=True, slots=True)
class PermissionDenial:
    """A tool call the agent CLI refused because of its permission mode."""

    tool_name: str
    tool_use_id: str = ""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class RateLimitInfo:
    """A usage-limit signal from the agent (``status`` is allowed, allowed_warning or rejected)."""

    status: str
    resets_at: float | None = None
    limit_type: str | None = None


@dataclass(frozen=True, slots=True)
class ModelTokens:
    """The tokens one model used in a run: what prices a run whose agent reports no cost."""

    model: str
    tokens: TokenUsage


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One tool call of a run: the tool's name, a one-line summary (file, command…),
    whether the agent's adapter knows the tool as one that edits files, and the call's id
    (which a ``PermissionDenial`` names when the call was refused)."""

    name: str
    summary: str = ""
    edits_files: bool = False
    tool_use_id: str = ""


@dataclass(frozen=True, slots=True)
class IterationResult:
    """The normalised outcome of one agent run, whatever the agent.

    ``final_text`` is the agent's final assistant text only: tool results and the prompt never
    reach it, so markers are looked for nowhere else.
    """

    final_text: str = ""
    is_error: bool = False
    error_message: str | None = None
    exit_code: int | None = None
    duration_ms: int = 0
    tokens: TokenUsage = field(default_factory=TokenUsage)
    cost_usd: float | None = None
    session_id: str | None = None
    num_turns: int | None = None
    api_error_status: int | None = None
    permission_denials: tuple[PermissionDenial, ...] = ()
    rate_limit: RateLimitInfo | None = None
    stderr_tail: str = ""
    timed_out: bool = False
    interrupted: bool = False
    unparsed_lines: int = 0
    agent_version: str | None = None
    #: The main model of the run, and the tokens per model when the agent breaks them down.
    model: str | None = None
    model_tokens: tuple[ModelTokens, ...] = ()
    #: The run's tool calls, in order (bounded by the parser).
    tool_uses: tuple[ToolUse, ...] = ()
    #: The agent's error category on its last assistant message (Claude: ``rate_limit``,
    #: ``server_error``, ``authentication_failed``…).
    assistant_error: str | None = None
    #: Why the agent ended the run, in its own words (Claude: ``completed``, ``api_error``,
    #: ``budget_exhausted``, ``max_turns``…).
    terminal_reason: str | None = None
    #: The agent's output ended without its closing record (Claude: no ``result`` line).
    truncated: bool = False
    #: Output lines too long to parse (``agents/process``): kept whole in the transcript only.
    oversized_lines: int = 0
