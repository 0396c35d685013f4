"""Codex hooks as the CLI reads them, and the trust it asks of them (CLI 0.169.0).

- A hook is a matcher group of an event, in a layer's ``hooks.json`` (``$CODEX_HOME`` or a
  project's ``.codex/``) or under ``hooks`` in a config layer, ``-c`` overrides included
  (the session-flags layer). ``Stop`` takes no matcher.
- An unmanaged hook runs only when trusted (or under ``--dangerously-bypass-hook-trust``):
  ``hooks.state."<key>".trusted_hash`` in the config equals the hook's current hash. The key
  is ``<source>:<event label>:<group index>:<handler index>``, the source being the file's
  absolute path (``/<session-flags>/config.toml`` for ``-c``); the hash is
  ``sha256:`` + the hex SHA-256 of the compact, key-sorted JSON of the normalised hook
  (``event_name``, then the group with this one handler, its default fields written out
  and its unset ones left out).

A real-CLI test holds these facts to the pinned CLI: a hook with this hash runs without the
bypass flag, one without it does not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

STOP_EVENT = "Stop"
STOP_LABEL = "stop"
#: The ``-c`` overrides' config layer, as Codex names it in hook keys.
SESSION_FLAGS_SOURCE = "/<session-flags>/config.toml"


def stop_group(command: str, timeout_s: int) -> dict[str, Any]:
    """One Stop hook's matcher group, as ``hooks.json`` writes it."""
    return {"hooks": [{"type": "command", "command": command, "timeout": timeout_s}]}


def hook_key(source: str, event_label: str = STOP_LABEL, group: int = 0, handler: int = 0) -> str:
    """The key of a hook's entry under ``hooks.state``."""
    return f"{source}:{event_label}:{group}:{handler}"


def trusted_hash(group: Mapping[str, Any], event_label: str = STOP_LABEL) -> str:
    """The hash Codex trusts a group's one command hook by."""
    (handler,) = group["hooks"]
    normalised = {
        "type": "command",
        "command": handler["command"],
        "timeout": max(1, int(handler.get("timeout", 600))),
        "async": bool(handler.get("async", False)),
    }
    if handler.get("statusMessage") is not None:
        normalised["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": event_label, "hooks": [normalised]}
    if group.get("matcher") is not None:
        identity["matcher"] = group["matcher"]
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def session_stop_hook(command: str, timeout_s: int) -> list[str]:
    """``-c`` overrides that add a trusted Stop hook for one run, nothing of the user's
    touched: the hook in the session-flags layer, and its trust."""
    group = stop_group(command, timeout_s)
    key = hook_key(SESSION_FLAGS_SOURCE)
    state = f"{{{_toml(key)} = {{trusted_hash = {_toml(trusted_hash(group))}}}}}"
    return ["-c", f"hooks.{STOP_EVENT}=[{_inline(group)}]", "-c", f"hooks.state={state}"]


def _inline(value: Any) -> str:
    """``value`` (dicts, lists, strings, ints, bools) as a TOML inline value."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml(k)} = {_inline(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_inline(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return _toml(str(value))


def _toml(text: str) -> str:
    """A TOML basic string: JSON's escapes are all valid in one."""
    return json.dumps(text, ensure_ascii=False)
