"""Gemini CLI's hook settings: ralphctl's ``AfterAgent`` hook, as a run adds it and as
``ralphctl plugin install --agent gemini`` writes it (CLI 0.61.0, checked against it).

- Hooks live in ``settings.json`` (``hooks.<Event>``: a list of groups ``{"hooks": [{"type":
  "command", "command", "name", "timeout" (milliseconds), "env"}]}``); the CLI concatenates
  the groups of every settings layer, so the same hook installed twice runs twice.
- They run only in a trusted folder (``--skip-trust`` trusts the run's); no flag enables
  them (``hooksConfig.enabled`` defaults to true). ``hooksConfig.disabled`` lists hook names
  that do not run, from every layer: a run's own hook turns the installed one off by name.
- The hook's environment is the CLI's, redacted under strict sanitisation (``GITHUB_SHA``
  set): the variables the hook needs are passed in the hook's ``env``, from the CLI's own
  environment (``${NAME:-}``, expanded when the settings load).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

#: The hook ``ralphctl plugin install --agent gemini`` writes.
INSTALLED_HOOK_NAME = "ralphctl"
#: The hook a run of ``ralphctl run --mode hook --agent gemini`` adds for itself.
RUN_HOOK_NAME = "ralphctl-loop"
EVENT = "AfterAgent"
FORMAT_ARGS = ("--format", "gemini")
#: What the hook of a hook-mode run must see (``ralphctl.hook.handler``), passed explicitly.
HOOK_ENV = ("RALPHCTL_HOOK_SOCKET",)


def hook_group(name: str, command: str, timeout_s: int) -> dict[str, Any]:
    """One ``hooks.AfterAgent`` group running ``command`` (the hook with ``FORMAT_ARGS``)."""
    hook = {
        "type": "command",
        "name": name,
        "command": command,
        "timeout": timeout_s * 1000,
        "env": {variable: f"${{{variable}:-}}" for variable in HOOK_ENV},
    }
    return {"hooks": [hook]}


def with_run_hook(settings: Mapping[str, Any], group: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` (a user's, unchanged) plus a run's hook group, hooks on, and the
    installed hook off (it would count every stop a second time)."""
    merged = copy.deepcopy(dict(settings))
    hooks = merged.get("hooks")
    hooks = hooks if isinstance(hooks, dict) else {}
    groups = hooks.get(EVENT)
    hooks[EVENT] = [*(groups if isinstance(groups, list) else []), dict(group)]
    merged["hooks"] = hooks
    config = merged.get("hooksConfig")
    config = config if isinstance(config, dict) else {}
    disabled = config.get("disabled")
    names = (
        [name for name in disabled if name != RUN_HOOK_NAME] if isinstance(disabled, list) else []
    )
    config["disabled"] = list(dict.fromkeys([*names, INSTALLED_HOOK_NAME]))
    config["enabled"] = True
    merged["hooksConfig"] = config
    return merged
