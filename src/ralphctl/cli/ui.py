"""The terminal face of a running loop: a live status line on a TTY, plain lines otherwise."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

from ralphctl.domain.config import LoopConfig
from ralphctl.domain.events import EventType
from ralphctl.domain.money import format_usd
from ralphctl.domain.states import LoopStatus, Runner, why_not_resumable
from ralphctl.domain.steering import delivered_seqs
from ralphctl.store.records import EventRecord, LoopRecord

if TYPE_CHECKING:  # rich once there is something to show, events once an agent runs (start-up)
    from rich.console import Console
    from rich.live import Live
    from rich.table import Table
    from rich.text import Text

    from ralphctl.agents.events import AgentEvent

STATUS_STYLE = {
    LoopStatus.COMPLETED: "bold green",
    LoopStatus.RUNNING: "bold cyan",
    LoopStatus.PENDING: "cyan",
    LoopStatus.PAUSED: "yellow",
    LoopStatus.RATE_LIMITED: "yellow",
    LoopStatus.BLOCKED: "bold magenta",
    LoopStatus.STOPPED: "yellow",
    LoopStatus.FAILED: "bold red",
}


def format_duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_tokens(tokens: int) -> str:
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.1f}M"
    return f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)


def format_usage(used: str, limit: str | None) -> str:
    """``3/100``, ``$0.45/$300.00``: what was used of a budget; just ``used`` when unset."""
    return used if limit is None else f"{used}/{limit}"


def usd_budget(value: object) -> str | None:
    """A stored cost budget as money; None when it is unset (or not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return format_usd(value)


def count_budget(value: object) -> str | None:
    """A stored count budget (iterations, tokens) as text; None when it is unset."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return str(value) if isinstance(value, int) else f"{value:g}"


class TerminalObserver:
    """Shows a loop's progress; use as a context manager around the run.

    ``console`` is called for the console on the first thing to show: a new loop's agent is
    started before rich is imported (start-up budget), the live status line with its first
    line."""

    def __init__(
        self, console: Callable[[], Console], loop: LoopRecord, config: LoopConfig, *, quiet: bool
    ):
        self._make_console = console
        self._console: Console | None = None
        self.config = config
        self.quiet = quiet
        self.iteration = loop.iteration
        self.cost = loop.cost_usd
        self.tokens = loop.tokens_input + loop.tokens_output
        self.runtime_base = loop.runtime_s
        self.started = time.monotonic()
        self.last = "starting"
        self._live: Live | None = None
        self._partial = ""  # agent text after its last newline, printed once the line ends
        self._plain = False

    @property
    def console(self) -> Console:
        if self._console is None:
            self._console = console = self._make_console()
            # Plain output (a pipe, a file: no terminal, no colours) is written as is: rich
            # would only add its own work per line (bench/overhead.py counts every line).
            self._plain = (
                not console.is_terminal and console.color_system is None and not console.record
            )
            if console.is_terminal and not self.quiet:
                from rich.live import Live

                self._live = Live(self, console=console, refresh_per_second=4, transient=True)
                self._live.__enter__()
        return self._console

    def __enter__(self) -> TerminalObserver:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._end_text()
        if self._live is not None:
            self._live.__exit__(exc_type, exc, tb)
            self._live = None

    def __rich__(self) -> Text:
        """The live status line."""
        from rich.text import Text

        elapsed = self.runtime_base + time.monotonic() - self.started
        line = Text()
        line.append(f"⟳ iteration {self.iteration}/{self.config.max_iterations}", "bold cyan")
        line.append(f" · {format_duration(elapsed)}/{format_duration(self.config.max_runtime)}")
        line.append(
            f" · {format_usage(format_usd(self.cost), usd_budget(self.config.max_cost_usd))}"
        )
        budget = f"/{format_tokens(self.config.max_tokens)}" if self.config.max_tokens else ""
        line.append(f" · {format_tokens(self.tokens)}{budget} tokens")
        line.append(f" · {self.last}", "dim")
        return line

    def notice(self, message: str, style: str = "yellow") -> None:
        from rich.text import Text

        self._end_text()
        self.console.print(Text(message, style))

    # -- LoopObserver ---------------------------------------------------------------------

    def on_event(self, event: EventRecord) -> None:
        data = event.data
        kind = event.event_type
        if kind == EventType.ITERATION_STARTED:
            self._header(data["iteration"])
            if told := delivered_seqs(data):
                self._line(f"  {len(told)} message(s) from you go to the agent now", "cyan")
        elif kind == EventType.ITERATION_COMPLETED:
            self.cost += data.get("cost_usd") or 0.0
            self.tokens += data.get("tokens") or 0
            self.last = f"iteration {data['iteration']} {data['status']}"
            self._line(_iteration_line(data), "green" if data["status"] == "ok" else "red")
        elif kind == EventType.CHECKPOINT_CREATED:
            self._line(
                f"checkpoint {data['commit_sha'][:10]} (iteration {data['iteration']})", "blue"
            )
        elif kind == EventType.QUESTION:  # shown even when quiet: the loop may wait for you
            self._line(f"the agent asks: {data.get('question', '')}", "magenta", always=True)
        elif kind == EventType.WAITING and data.get("question"):
            hint = f'answer with: ralphctl tell {event.loop_id} "…"'
            self._line(f"  waiting until {data['until']} ({hint})", "magenta", always=True)
        elif kind in (EventType.ERROR, EventType.WARNING):  # shown even when quiet
            style = "red" if kind == EventType.ERROR else "yellow"
            self._line(f"{kind}: {data.get('message', '')}", style, always=True)

    def on_agent_event(self, iteration: int, event: AgentEvent) -> None:
        from ralphctl.agents import events  # with the agent's parser, after its spawn

        self._header(iteration)  # a new loop's first agent may speak before it is recorded
        if isinstance(event, events.TextChunk):
            self.last = "agent writing"
            if not self.quiet:
                text = events.printable(event.text)  # a model can write escape sequences too
                ending = "" if event.delta or text.endswith("\n") else "\n"  # a whole block
                *lines, self._partial = (self._partial + text + ending).split("\n")
                for line in lines:
                    self._out(line)
        elif isinstance(event, events.ToolCall):
            self.last = f"tool {event.name}"
            self._line(f"  → {event.name} {event.summary}".rstrip(), "dim")
        elif isinstance(event, events.SessionStarted):
            self.last = f"session {event.session_id[:8]}"
        elif isinstance(event, events.ApiRetry):
            self._line(
                f"  API retry {event.attempt}: {event.error or event.error_status}", "yellow"
            )
        elif isinstance(event, events.RateLimitSignal) and event.status != "allowed":
            self._line(f"  usage limit: {event.status}", "yellow")
        elif isinstance(event, events.PermissionDenied):
            self._line(f"  permission denied: {event.tool_name}", "yellow")
        elif isinstance(event, events.RawLine):  # printed outside the agent's stream: shown as is
            self._line(f"  {event.text}", "dim")

    def _header(self, iteration: int) -> None:
        if iteration != self.iteration:
            self.iteration = iteration
            self.last = "agent starting"
            self._line(f"── iteration {iteration}/{self.config.max_iterations} ──", "bold")

    def _line(self, message: str, style: str, *, always: bool = False) -> None:
        if self.quiet and not always:
            return
        self._end_text()
        self._out(message, style)

    def _end_text(self) -> None:
        """Print the agent's unfinished line (whole lines only: the live line redraws below)."""
        if self._partial:
            self._out(self._partial)
            self._partial = ""

    def _out(self, line: str, style: str | None = None) -> None:
        """One line, unwrapped and without markup (the terminal wraps)."""
        console = self.console  # made first: it decides ``_plain``
        if self._plain and "\t" not in line:  # rich expands tabs to its tab stops
            console.file.write(line + "\n")
            console.file.flush()
        else:  # ``out``, not ``print``: a sixth of the CPU per line
            console.out(line, style=style, highlight=False)


#: Iterations that end so are followed by an ``error`` event with their error, printed as its
#: own line (even when quiet): the iteration's line does not repeat it.
_ERROR_EVENT_STATUSES = ("error", "timeout")


def _iteration_line(data: dict[str, object]) -> str:
    seconds = float(data.get("duration_ms") or 0) / 1000  # type: ignore[arg-type]
    cost = data.get("cost_usd")
    parts = [f"iteration {data['iteration']} {data['status']} in {seconds:.1f}s"]
    if isinstance(cost, int | float):
        parts.append(format_usd(cost))
    if data.get("tokens"):
        parts.append(f"{format_tokens(int(data['tokens']))} tokens")  # type: ignore[call-overload]
    if data.get("completion_signal_found"):
        parts.append("completion signal found")
    if data.get("error") and data["status"] not in _ERROR_EVENT_STATUSES:
        parts.append(f"error: {data['error']}")
    return " · ".join(parts)


def summary_table(loop: LoopRecord) -> Table:
    """The final summary of a loop run."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    style = STATUS_STYLE.get(loop.status, "")
    reason = f" ({loop.stop_reason})" if loop.stop_reason else ""
    table.add_row("loop", loop.id)
    table.add_row("status", Text(f"{loop.status}{reason}", style))
    if loop.stop_detail:
        table.add_row("detail", escape(loop.stop_detail))
    max_iterations = count_budget(loop.config.get("max_iterations"))
    table.add_row("iterations", format_usage(str(loop.iteration), max_iterations))
    cost_budget = usd_budget(loop.config.get("max_cost_usd"))
    table.add_row("cost", format_usage(format_usd(loop.cost_usd), cost_budget))
    tokens = loop.tokens_input + loop.tokens_output
    table.add_row("tokens", f"{tokens} (in {loop.tokens_input}, out {loop.tokens_output})")
    table.add_row("runtime", format_duration(loop.runtime_s))
    table.add_row("workdir", Text(loop.workdir))  # a path is never markup
    if loop.status is not LoopStatus.COMPLETED:
        table.add_row("next", f"ralphctl history {loop.id} · {_again(loop)}")
    return table


def _again(loop: LoopRecord) -> str:
    """How to go on once this process's run of the loop ended: resume it, or start anew."""
    if why_not_resumable(loop.status, loop.mode, Runner.GONE) is None:
        return f"ralphctl resume {loop.id}"
    return "ralphctl run --mode hook …" if loop.mode == "hook" else "ralphctl run …"
