"""``ralphctl doctor`` says whether ``--sandbox`` can confine agents here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ralphctl.agents.sandbox_host import sandbox_problem
from ralphctl.engine.doctor import diagnose


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user config file (empty) and a fresh answer to "can a sandbox be made here?"."""
    path = tmp_path / "config.toml"
    path.write_text("")
    monkeypatch.setenv("RALPHCTL_CONFIG", str(path))
    sandbox_problem.cache_clear()
    yield path
    sandbox_problem.cache_clear()


def sandbox_check(workdir: Path) -> tuple[str, str]:
    (check,) = [
        c for c in diagnose(workdir, db=None, agent="scripted").checks if c.name == "sandbox"
    ]
    return check.status, check.detail


@pytest.mark.usefixtures("bwrap")
def test_where_bubblewrap_works_the_sandbox_is_ok(tmp_path: Path, config: Path) -> None:
    assert sandbox_check(tmp_path) == ("ok", "bubblewrap confines agents here (--sandbox)")


def test_without_bubblewrap_it_is_said_and_only_fails_a_config_that_asks_for_it(
    tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RALPHCTL_BWRAP_BIN", str(tmp_path / "no-bwrap-here"))
    status, detail = sandbox_check(tmp_path)
    assert status == "info"
    assert detail.startswith("--sandbox cannot run: bwrap is not installed")

    config.write_text("[loops.defaults]\nsandbox = true\n")
    sandbox_problem.cache_clear()
    diagnosis = diagnose(tmp_path, db=None, agent="scripted")
    assert sandbox_check(tmp_path)[0] == "fail"
    assert any(
        problem.startswith("sandbox: --sandbox cannot run") for problem in diagnosis.problems
    )
