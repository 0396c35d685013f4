"""What ``--dry-run`` shows of a planned loop: its first agent command, and in fresh mode the
prompt of its first iteration (placeholders stand for what is only made when it runs)."""

from __future__ import annotations

from pathlib import Path

from ralphctl.agents.base import AgentCommand
from ralphctl.domain.conditions import remaining
from ralphctl.domain.stoprules import Totals
from ralphctl.engine.fresh_tracker import FreshTracker
from ralphctl.engine.prompt import PromptContext, build_prompt
from ralphctl.engine.request import agent_request, prompt_path
from ralphctl.engine.sandboxing import loop_command
from ralphctl.engine.starting import LoopPlan


def first_command(plan: LoopPlan) -> tuple[AgentCommand, str | None]:
    """The command of the plan's first run and (fresh mode) its prompt; ValueError if the
    adapter refuses the settings (e.g. an agent argument it does not allow), SandboxUnavailable
    if the loop asks for a sandbox none can be made here."""
    config, root = plan.config, Path(plan.loop.workdir)
    if plan.loop.mode == "hook":
        from ralphctl.engine.hookmode.setup import preview

        return preview(plan.adapter, config, root), None
    prompt = build_prompt(
        PromptContext(
            task=plan.loop.task,
            iteration=1,
            max_iterations=config.max_iterations,
            remaining=remaining(Totals(), config.budgets),
            marker=config.marker,
            tracker=FreshTracker(root, plan.loop.id).relative if config.tracker_template else None,
        )
    )
    request = agent_request(
        config,
        prompt=prompt,
        workdir=root,
        iteration=1,
        session_id="<new uuid per iteration>",
        remaining_cost_usd=config.max_cost_usd,
        prompt_path=prompt_path(plan.loop.id, 1, "<session id>"),
    )
    return loop_command(plan.adapter.build_command(request), config, root), prompt
