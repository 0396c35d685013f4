"""What each agent declares it must write under ``--sandbox`` (``AgentSpec.sandbox_paths``)."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from ralphctl.agents.registry import all_specs, spec_for
from ralphctl.agents.spec import AgentSpec

#: Never an agent's to write: the user's keys and other credentials.
SECRETS = (".ssh", ".aws", ".gnupg", ".config/gcloud", ".kube", ".docker", ".git-credentials")


@pytest.mark.parametrize("spec", all_specs(), ids=lambda spec: spec.name)
def test_an_agent_declares_only_paths_of_its_own_below_the_home(spec: AgentSpec) -> None:
    for entry in spec.sandbox_paths:
        path = PurePosixPath(entry.partition("/")[2] if entry.startswith("$") else entry)
        assert not path.is_absolute(), entry
        assert ".." not in path.parts, entry
        assert entry.startswith("$") or path.parts, entry  # never the home itself
        assert not any(path.is_relative_to(secret) for secret in SECRETS), entry


def test_claude_keeps_its_config_dir_and_state_file() -> None:
    assert spec_for("claude").sandbox_paths == (".claude/", ".claude.json", "$CLAUDE_CONFIG_DIR/")
