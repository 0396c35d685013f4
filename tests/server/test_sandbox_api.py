"""``sandbox`` in a POST /api/loops body: the loop runs confined, or is refused saying why."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ralphctl.agents.sandbox_host import sandbox_problem
from tests.server.conftest import DONE, loop_body, wait_until

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def fresh_probe() -> Iterator[None]:
    """Asks again whether a sandbox can be made (the answer is cached per process)."""
    sandbox_problem.cache_clear()
    yield
    sandbox_problem.cache_clear()


@pytest.mark.usefixtures("fresh_probe")
def test_a_sandbox_that_cannot_be_made_is_a_422_naming_why(
    client, new_workdir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RALPHCTL_BWRAP_BIN", str(tmp_path / "no-bwrap-here"))
    body = loop_body(new_workdir(), DONE)
    body["config"] |= {"sandbox": True}

    response = client.post("/api/loops", json=body)

    assert response.status_code == 422
    assert "--sandbox: bwrap is not installed" in response.json()["detail"]


@pytest.mark.usefixtures("fresh_probe")
def test_a_sandboxed_loop_started_through_the_api_keeps_its_setting(client, new_workdir) -> None:
    if problem := sandbox_problem(network=False):
        pytest.skip(problem)
    workdir = new_workdir()
    body = loop_body(workdir, {**DONE, "edits": [{"path": "a.txt", "content": "a\n"}]})
    body["config"] |= {"sandbox": True, "sandbox_net": "none"}

    response = client.post("/api/loops", json=body)

    assert response.status_code == 201, response.text
    loop = response.json()
    assert (loop["config"]["sandbox"], loop["config"]["sandbox_net"]) == (True, "none")
    route = f"/api/loops/{loop['id']}"
    wait_until(lambda: client.get(route).json()["status"] == "completed", "the loop to complete")
    assert (workdir / "a.txt").read_text() == "a\n"
