"""The recorded cassettes still match what the pinned Gemini CLI prints for each scenario.

Re-record with ``.venv/bin/python -m tests.agents.gemini.record_cassettes`` after a CLI bump.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.agents.gemini.harness import RealGemini
from tests.agents.gemini.scenarios import SCENARIOS
from tests.agents.gemini.streams import cassette_lines, sidecar

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(120)]


def shape(event: dict[str, Any]) -> tuple[object, ...]:
    """What a line is, without its ids, times and texts."""
    error = event.get("error")
    return (
        event.get("type"),
        event.get("role"),
        event.get("status"),
        event.get("tool_name"),
        error.get("type") if isinstance(error, dict) else None,
    )


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_cassette_still_matches_the_pinned_cli(name: str, gemini: RealGemini) -> None:
    run = SCENARIOS[name].play(gemini)
    recorded = [json.loads(raw) for raw in cassette_lines(name)]

    assert run.exit_code == sidecar(name)["exit_code"], run.stderr
    assert [shape(e) for e in run.events] == [shape(e) for e in recorded]
