"""Starting a loop of the command agent through the API."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from tests.server.conftest import FAST, wait_until

AGENT = (
    "import sys; sys.stdin.read(); print('usage: 1000 in'); print('<promise>COMPLETE</promise>')"
)


def command_body(workdir: Path, **fields: object) -> dict[str, object]:
    line = f"{shlex.quote(sys.executable)} -c {shlex.quote(AGENT)}"
    config = {**FAST, "agent_tokens_regex": r"usage: (?P<input>\d+) in", "model": "gpt-5-mini"}
    return {"task": "Do it.", "workdir": str(workdir), "agent_command": line, "config": config}


def test_an_agent_command_in_the_body_runs_the_command_agent(client, new_workdir):
    response = client.post("/api/loops", json=command_body(new_workdir()))

    assert response.status_code == 201, response.text
    loop = response.json()
    assert loop["agent"] == "command"
    done = wait_until(
        lambda: (
            (found := client.get(f"/api/loops/{loop['id']}").json())["status"] == "completed"
            and found
        )
    )
    assert done["tokens_input"] == 1000
    assert done["cost_usd"] == 1000 * 0.25 / 1_000_000


def test_an_agent_command_for_another_agent_is_a_422(client, new_workdir):
    body = command_body(new_workdir()) | {"agent": "claude"}

    response = client.post("/api/loops", json=body)

    assert response.status_code == 422
    detail = response.json()["detail"]
    assert "agent_command, agent_tokens_regex: not a setting of the claude agent" in detail
