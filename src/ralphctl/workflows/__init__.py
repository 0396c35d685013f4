"""Workflows: reusable prompt templates with loop settings, installed by name.

``resolve(name)`` returns a validated ``Workflow``; ``Workflow.render_prompt(input)`` builds
the task and ``Workflow.loop`` holds the loop settings (tracker template resolved).
"""

from ralphctl.workflows.model import Workflow, WorkflowError
from ralphctl.workflows.registry import resolve

__all__ = ["Workflow", "WorkflowError", "resolve"]
