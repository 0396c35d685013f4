"""What the agent did in the current iteration of a hook-mode session, as its stream shows it
live: the tools it called (each marked by the agent's adapter as editing files or not) and
the tools it was denied. A fresh loop reads these from its run's result; one ``claude``
process of a hook-mode session spans many iterations, so they are gathered per iteration
here, from the live events, and taken when the iteration is recorded."""

from __future__ import annotations

from dataclasses import dataclass

from ralphctl.agents.events import AgentEvent, PermissionDenied, ToolCall
from ralphctl.domain.model import IterationResult, PermissionDenial, ToolUse

#: At most this many of each are kept per iteration, as the adapters' parsers keep per run.
MAX_KEPT = 200


@dataclass(frozen=True, slots=True)
class Activity:
    """One iteration's tool calls and permission denials, in stream order."""

    tool_uses: tuple[ToolUse, ...] = ()
    denials: tuple[PermissionDenial, ...] = ()

    def result(self, final_text: str) -> IterationResult:
        """The iteration as the analyzer reads a fresh loop's run: its final text and this."""
        return IterationResult(
            final_text=final_text, tool_uses=self.tool_uses, permission_denials=self.denials
        )


class ActivityLog:
    """Gathers the live tool calls and denials of the iteration under way."""

    def __init__(self) -> None:
        self._tool_uses: list[ToolUse] = []
        self._denials: list[PermissionDenial] = []

    def on_agent_event(self, event: AgentEvent) -> None:
        if isinstance(event, ToolCall) and len(self._tool_uses) < MAX_KEPT:
            call = ToolUse(event.name, event.summary, event.edits_files, event.tool_use_id)
            self._tool_uses.append(call)
        elif isinstance(event, PermissionDenied) and len(self._denials) < MAX_KEPT:
            denial = PermissionDenial(event.tool_name, event.tool_use_id, event.message)
            self._denials.append(denial)

    def current(self) -> Activity:
        """The iteration's activity so far (it goes on being gathered)."""
        return Activity(tuple(self._tool_uses), tuple(self._denials))

    def take(self) -> Activity:
        """The iteration's activity; the next iteration starts with none."""
        taken = self.current()
        self._tool_uses, self._denials = [], []
        return taken
