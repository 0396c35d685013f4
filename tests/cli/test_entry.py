"""``ralphctl run`` and ``ralphctl resume`` start from an app of their own (start-up budget):
what they print and how they exit is what the whole app would, and no other command's module
is imported on the way, nor what the runner needs only once an agent has run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ralphctl.agents.registry import all_specs
from ralphctl.agents.spec import AgentSpec
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
        "engine.control",
        "engine.leftovers",
        "engine.unrecorded",
    ):
        assert f"'ralphctl.{later}'" not in imported


#: Not needed to start a new loop's first agent: the terminal output (rich: tens of ms to
#: import) begins with the agent's first event, a config file's reader with a file, the rest
#: once the agent has run.
NOT_BEFORE_THE_FIRST_SPAWN = (
    "rich",
    "tomllib",
    "ralphctl.agents.events",
    "ralphctl.domain.breaker",
    "ralphctl.engine.checkpoint",
    "ralphctl.domain.costs",
)


def imported_at_the_first_spawn(argv: list[str], env: dict[str, str]) -> tuple[str, int, str]:
    """Which of NOT_BEFORE_THE_FIRST_SPAWN ``argv`` (a ``ralphctl`` command line) had imported
    when it spawned its first agent; its exit status and standard output."""
    probe = (
        "import sys\n"
        "from ralphctl.agents import process\n"
        "spawn = process._spawn\n"
        "async def spawning(*args, **kwargs):\n"
        f"    early = [name for name in {NOT_BEFORE_THE_FIRST_SPAWN!r} if name in sys.modules]\n"
        "    print('imported at the first spawn:', early, file=sys.stderr)\n"
        "    process._spawn = spawn\n"
        "    return await spawn(*args, **kwargs)\n"
        "process._spawn = spawning\n"
        f"sys.argv = {argv!r}\n"
        "from ralphctl.cli.app import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=False
    )
    found = re.search(r"imported at the first spawn: (.*)", done.stderr)
    assert found is not None, done.stderr
    return found.group(1), done.returncode, done.stdout


def no_config(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in ENV.items() if k != "RALPHCTL_CONFIG"}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "no-config")
    return env


def test_run_starts_its_first_agent_before_importing_what_it_needs_later(tmp_path) -> None:
    script = tmp_path / "script.json"
    script.write_text('{"steps": [{"text": "done"}]}')
    argv = ["ralphctl", "run", "--task", "Do it.", "--agent", "scripted", "--script", str(script)]
    argv += ["--max-iterations", "1", "--workdir", str(tmp_path), "--db", str(tmp_path / "x.db")]

    early, status, output = imported_at_the_first_spawn(argv, no_config(tmp_path))

    assert early == "[]"
    assert status == 1  # the iteration budget ended it, its summary shown by rich
    assert "max_iterations" in output


@pytest.mark.parametrize(
    "spec", [spec for spec in all_specs() if spec.bin_env], ids=lambda s: s.name
)
def test_every_adapter_spawns_its_agent_before_its_parser_is_imported(
    spec: AgentSpec, tmp_path: Path
) -> None:
    agent = tmp_path / "agent"
    agent.write_text("#!/bin/sh\nexit 0\n")
    agent.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    env = no_config(tmp_path) | {spec.bin_env or "": str(agent), "HOME": str(tmp_path)}
    argv = ["ralphctl", "run", "--task", "Do it.", "--agent", spec.name, "--max-iterations", "1"]
    argv += ["--workdir", str(work), "--db", str(tmp_path / "x.db")]

    early, _, _ = imported_at_the_first_spawn(argv, env)

    assert early == "[]"
