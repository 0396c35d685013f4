"""``ralphctl run`` and ``ralphctl resume`` start from an app of their own (start-up budget):
what they print and how they exit is what the whole app would, and no other command's module
is imported on the way, nor what the runner needs only once an agent has run."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from ralphctl.cli.app import app

ENV = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}


def entry(*args: str) -> subprocess.CompletedProcess[str]:
    """The console script's entry point, as a user's shell runs it."""
    return subprocess.run(
        [sys.executable, "-m", "ralphctl", *args],
        capture_output=True,
        text=True,
        env=ENV,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize(
    "args",
    [
        ("run", "--help"),
        ("resume", "--help"),
        ("run", "--no-such-flag"),
        ("resume",),
    ],
)
def test_run_and_resume_answer_as_the_whole_app_does(args: tuple[str, ...]) -> None:
    alone = entry(*args)
    whole = CliRunner().invoke(app, list(args), env={"COLUMNS": "120", "NO_COLOR": "1"})

    assert alone.returncode == whole.exit_code
    assert alone.stdout + alone.stderr == whole.output


def imported_by(code: str) -> str:
    """The ralphctl modules loaded once ``code`` has run in a new interpreter."""
    probe = f"{code}\nprint(sorted(m for m in sys.modules if m.startswith('ralphctl.')))"
    done = subprocess.run(
        [sys.executable, "-c", f"import sys\n{probe}"],
        capture_output=True,
        text=True,
        env=ENV,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def test_run_imports_no_other_commands_module() -> None:
    imported = imported_by(
        "sys.argv = ['ralphctl', 'run', '--help']\n"
        "from ralphctl.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )

    for other in ("serve", "loops", "doctor", "plugin", "workflow", "agents", "rollback"):
        assert f"'ralphctl.cli.{other}'" not in imported
    assert "'ralphctl.cli.run'" in imported


def test_run_leaves_what_only_a_finished_iteration_needs_until_one_has_run() -> None:
    imported = imported_by("import ralphctl.cli.foreground, ralphctl.engine.runner")

    for later in (
        "engine.assess",
        "engine.record",
        "engine.gates",
        "engine.fresh_tracker",
        "domain.analyzer",
        "domain.usage_limits",
    ):
        assert f"'ralphctl.{later}'" not in imported
