"""``workflow.json``: a named prompt template plus the settings of the loop that runs it.

Validation only; reading files is ``ralphctl.workflows.loader``'s job. Unknown keys are errors
(a misspelt ``maxIteration`` must not silently fall back to the default).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from ralphctl.domain import defaults
from ralphctl.domain.markers import Marker, detect_in_tracker, parse_marker

NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
INPUT_PLACEHOLDER = "{input}"
DEFAULT_TRACKER_TEMPLATE = "# Loop Progress\n\n_In progress_"


class WorkflowError(ValueError):
    """An invalid workflow, name or registry operation; the message says what and where."""


def check_name(name: str) -> str:
    """Return ``name`` if it is safe as a folder name in the registry, else raise."""
    if NAME_PATTERN.fullmatch(name) and ".." not in name:
        return name
    raise WorkflowError(
        f"invalid workflow name {name!r}: use 1 to 64 characters out of a-z 0-9 . _ -,"
        " starting with a letter or a digit, without '..'"
    )


class _Strict(BaseModel):
    """JSON keys are camelCase; values are never coerced ("5" is not an integer)."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True, alias_generator=to_camel, validate_default=True
    )


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


Text = Annotated[str, AfterValidator(_not_blank)]


class LoopSpec(_Strict):
    """How the workflow loops; ``tracker_template`` holds the resolved markdown."""

    enabled: bool = True
    completion_marker: str = defaults.COMPLETION_SIGNAL
    max_iterations: int = Field(defaults.MAX_ITERATIONS, ge=1)
    continue_message: Text = defaults.CONTINUE_MESSAGE
    tracker_template: Text = DEFAULT_TRACKER_TEMPLATE

    @field_validator("completion_marker")
    @classmethod
    def _marker_parses(cls, value: str) -> str:
        parse_marker(value)
        return value

    @model_validator(mode="after")
    def _template_does_not_end_the_loop(self) -> LoopSpec:
        if detect_in_tracker(self.tracker_template, self.marker).evidence is not None:
            raise ValueError(
                "the last line of trackerTemplate declares completion (or BLOCKED),"
                " so the loop would end at once; end the template with something else"
            )
        return self

    @property
    def marker(self) -> Marker:
        return parse_marker(self.completion_marker)


class Workflow(_Strict):
    """A validated workflow. ``render_prompt`` turns the user's input into the task."""

    name: str
    description: str = ""
    plugins: list[str] = Field(default_factory=list)
    prompt_template: str
    loop: LoopSpec = Field(default_factory=LoopSpec)

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        try:
            return check_name(value)
        except WorkflowError as exc:
            raise ValueError(str(exc).removeprefix("invalid workflow name ")) from None

    @field_validator("plugins")
    @classmethod
    def _plugin_names(cls, value: list[str]) -> list[str]:
        if any(not name.strip() for name in value):
            raise ValueError("plugin names must not be empty")
        if len(set(value)) != len(value):
            raise ValueError("plugin names must be unique")
        return value

    @field_validator("prompt_template")
    @classmethod
    def _has_input(cls, value: str) -> str:
        if INPUT_PLACEHOLDER not in value:
            raise ValueError(f"must contain {INPUT_PLACEHOLDER}, where the user's input goes")
        return value

    def render_prompt(self, text: str) -> str:
        """The template with its first ``{input}`` replaced; everything else stays literal."""
        return self.prompt_template.replace(INPUT_PLACEHOLDER, text, 1)

    def loop_settings(self) -> dict[str, Any]:
        """The settings (``LoopConfig`` fields) of the loop that runs this workflow, in either
        mode: its marker and bound, its tracker template and continue message (a loop, not a
        single run), and its plugins."""
        loop = self.loop
        settings: dict[str, Any] = {
            "completion_signal": loop.completion_marker,
            "max_iterations": loop.max_iterations if loop.enabled else 1,
        }
        if loop.enabled:
            settings |= {
                "tracker_template": loop.tracker_template,
                "continue_message": loop.continue_message,
            }
        if self.plugins:
            settings["plugins"] = list(self.plugins)
        return settings

    def to_json(self) -> dict[str, Any]:
        """The workflow as ``workflow.json`` keys, with the tracker template resolved."""
        return self.model_dump(mode="json", by_alias=True)


def tracker_file_reference(data: object) -> str | None:
    """The ``loop.trackerTemplate`` value when it names a file: one line ending in ``.md``."""
    loop = data.get("loop") if isinstance(data, Mapping) else None
    value = loop.get("trackerTemplate") if isinstance(loop, Mapping) else None
    if isinstance(value, str) and "\n" not in value and value.strip().lower().endswith(".md"):
        return value.strip()
    return None


def parse_workflow(data: object, origin: str, read_template: Callable[[str], str]) -> Workflow:
    """Validate decoded ``workflow.json`` data; ``read_template`` loads a tracker file by its
    reference. Raises WorkflowError naming ``origin`` and every bad field."""
    if not isinstance(data, Mapping):
        raise WorkflowError(f"{origin}: a workflow must be a JSON object")
    reference = tracker_file_reference(data)
    if reference is not None:
        template = read_template(reference)
        data = {**data, "loop": {**data["loop"], "trackerTemplate": template}}
    try:
        return Workflow.model_validate(data)
    except ValidationError as exc:
        raise WorkflowError(_explain(exc, origin)) from None


#: pydantic's wording for wrong types, in JSON's terms.
_TYPE_MESSAGES = {
    "model_type": "must be a JSON object",
    "list_type": "must be a JSON array",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "bool_type": "must be true or false",
}
_KNOWN_KEYS = {
    (): [to_camel(key) for key in Workflow.model_fields],
    ("loop",): [to_camel(key) for key in LoopSpec.model_fields],
}


def _explain(exc: ValidationError, origin: str) -> str:
    lines = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "workflow"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            known = _KNOWN_KEYS.get(tuple(str(p) for p in error["loc"][:-1]), [])
            message = f"unknown key; known keys: {', '.join(known)}"
        elif error["type"] == "missing":
            message = "required"
        elif error["type"] in _TYPE_MESSAGES:
            message = _TYPE_MESSAGES[error["type"]]
        lines.append(f"{where}: {message}")
    return f"{origin}: invalid workflow:\n  " + "\n  ".join(lines)
