"""Agents by name."""

from __future__ import annotations

import pytest

from ralphctl.agents.claude import ClaudeAdapter
from ralphctl.agents.registry import adapter_for, known_agents
from ralphctl.agents.scripted import ScriptedAdapter


def test_the_known_agents_are_listed_by_name() -> None:
    names = known_agents()

    assert {"claude", "command", "scripted"} <= set(names)
    assert names == sorted(names)


def test_claude_by_name() -> None:
    assert isinstance(adapter_for("claude"), ClaudeAdapter)


def test_scripted_by_name_with_its_script() -> None:
    adapter = adapter_for("scripted", options={"script": "demo.json"})

    assert isinstance(adapter, ScriptedAdapter)
    assert adapter.script.name == "demo.json"


def test_an_unknown_agent_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown agent 'codexx'; known agents: .*claude, "):
        adapter_for("codexx")


def test_the_scripted_agent_needs_a_script() -> None:
    with pytest.raises(ValueError, match="option script=PATH"):
        adapter_for("scripted")


def test_an_unknown_option_is_refused() -> None:
    with pytest.raises(ValueError, match=r"does not take option\(s\) scirpt \(it takes: script\)"):
        adapter_for("scripted", options={"scirpt": "demo.json"})
