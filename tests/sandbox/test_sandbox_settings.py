"""The ``sandbox`` and ``sandbox_net`` settings, and what they change before any agent runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralphctl.agents.base import AgentCommand
from ralphctl.agents.registry import adapter_for
from ralphctl.cli.loop_flags import loop_settings
from ralphctl.domain.config import ConfigInvalid, LoopConfig
from ralphctl.engine.sandboxing import bypass_warning, loop_command


def test_loops_run_unconfined_with_the_network_by_default() -> None:
    config = LoopConfig()
    assert (config.sandbox, config.sandbox_net) == (False, "allow")


def test_the_settings_are_validated_like_the_others() -> None:
    with pytest.raises(ConfigInvalid, match="sandbox: must be true or false, not 'yes'"):
        LoopConfig(sandbox="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigInvalid, match="sandbox_net: must be one of allow, none, not 'off'"):
        LoopConfig(sandbox_net="off")


def test_the_flags_give_the_settings_and_a_stored_loop_keeps_them() -> None:
    values = loop_settings({"sandbox": True, "sandbox_net": "none"})
    assert values == {"sandbox": True, "sandbox_net": "none"}
    stored = LoopConfig(**values).to_json()
    assert (stored["sandbox"], stored["sandbox_net"]) == (True, "none")
    assert LoopConfig(**stored).sandbox is True


def test_an_unsandboxed_loop_runs_the_agents_command_as_it_is() -> None:
    command = AgentCommand(["claude", "-p"], b"prompt")
    assert loop_command(command, LoopConfig(), Path("/srv/app")) is command


def test_bypassing_permissions_outside_a_sandbox_is_warned_about() -> None:
    claude = adapter_for("claude")
    bypass = LoopConfig(permission_mode="bypassPermissions")
    assert bypass_warning(bypass, claude) == (
        "permission_mode bypassPermissions without --sandbox: the claude agent runs any "
        "command with your permissions, on all your files; add --sandbox (docs/safety.md)"
    )
    sandboxed = LoopConfig(permission_mode="bypassPermissions", sandbox=True)
    assert bypass_warning(sandboxed, claude) is None
    assert bypass_warning(LoopConfig(), claude) is None
