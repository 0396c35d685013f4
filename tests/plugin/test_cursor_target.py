"""`ralphctl plugin install --agent cursor`: the stop hook in Cursor's hooks.json and the
custom commands, at user and project scope; uninstall restores everything as it was. The
installed command line is run on Cursor's recorded stop inputs (no Cursor runs here)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from ralphctl.cli.plugin import app
from ralphctl.hook.arming import arm
from ralphctl.plugin.installer import install, uninstall
from ralphctl.plugin.layout import Interpreter
from ralphctl.plugin.scopes import Plan, Scope
from ralphctl.plugin.targets import target
from ralphctl.plugin.targets.cursor import LOOP_LIMIT
from tests.hook.agent_inputs import agent_env, agent_stop, cursor_transcript
from tests.hook.helpers import SESSION, body_of, fields_of, session_tracker
from tests.plugin.conftest import PYTHON, Homes, snapshot

DONE = "<promise>COMPLETE</promise>"
USER_HOOKS: dict[str, Any] = {
    "version": 1,
    "hooks": {
        "afterFileEdit": [{"command": "./format.sh"}],
        "stop": [{"command": "./notify.sh", "timeout": 5}],
    },
}
runner = CliRunner()


def cursor_plan(scope: Scope, homes: Homes, python: Interpreter = PYTHON) -> Plan:
    return target("cursor").plan(scope, homes.project, python, "1.2.3")


def test_the_user_scope_lives_in_the_home_cursor_folder_and_runs_the_hook_in_cursor_form(homes):
    plan = cursor_plan(Scope.USER, homes)

    folder = homes.root / "home" / ".cursor"
    assert plan.agent == "cursor"
    assert plan.manifest == folder / "ralphctl-install.json"
    assert sorted(plan.files) == [
        folder / "commands" / name
        for name in ("cancel-ralph.md", "ralph-loop.md", "ralph-status.md")
    ]
    ((hooks_file, (version, hook)),) = plan.settings.items()
    assert hooks_file == folder / "hooks.json"
    assert (version.path, version.value, version.append) == (("version",), 1, False)
    assert (hook.path, hook.append) == (("hooks", "stop"), True)
    assert hook.value == {
        "command": PYTHON.hook("stop", "--format", "cursor", "--loop-limit", str(LOOP_LIMIT)),
        "timeout": 30,
        "loop_limit": LOOP_LIMIT,
    }
    assert plan.commands == ("/ralph-loop", "/cancel-ralph", "/ralph-status")


def test_the_project_scope_lives_in_the_projects_cursor_folder(homes):
    plan = cursor_plan(Scope.PROJECT, homes)

    folder = homes.project / ".cursor"
    assert plan.manifest == folder / "ralphctl-install.local.json"
    assert set(plan.settings) == {folder / "hooks.json"}
    assert all(path.parent == folder / "commands" for path in plan.files)


def test_the_commands_ask_the_agent_to_run_ralphctl_with_the_users_text_in_a_heredoc(homes):
    files = {path.name: text for path, text in cursor_plan(Scope.USER, homes).files.items()}

    loop = files["ralph-loop.md"]
    assert f"{PYTHON.module('ralphctl.plugin.arm')} <<'RALPHCTL_ARGUMENTS_END'\n" in loop
    assert "completion line" in loop
    assert PYTHON.module("ralphctl.hook", "cancel") in files["cancel-ralph.md"]
    assert PYTHON.module("ralphctl.hook", "status") in files["ralph-status.md"]


def test_install_keeps_the_users_hooks_and_uninstall_restores_them_exactly(homes):
    folder = homes.root / "home" / ".cursor"
    folder.mkdir(parents=True)
    (folder / "hooks.json").write_text(json.dumps(USER_HOOKS, indent=2) + "\n")
    before = snapshot(homes.root)
    plan = cursor_plan(Scope.USER, homes)

    install(plan)

    hooks = json.loads((folder / "hooks.json").read_text())
    assert hooks["version"] == 1
    assert hooks["hooks"]["afterFileEdit"] == USER_HOOKS["hooks"]["afterFileEdit"]
    theirs, ours = hooks["hooks"]["stop"]
    assert theirs == USER_HOOKS["hooks"]["stop"][0]
    assert ours["loop_limit"] == LOOP_LIMIT
    assert all(path.is_file() for path in plan.files)

    uninstall(plan)
    assert snapshot(homes.root) == before


def test_a_fresh_project_is_left_as_it_was(homes):
    before = snapshot(homes.root)
    plan = cursor_plan(Scope.PROJECT, homes)
    install(plan)
    hooks = json.loads((homes.project / ".cursor" / "hooks.json").read_text())
    assert (hooks["version"], len(hooks["hooks"]["stop"])) == (1, 1)
    uninstall(plan)
    assert snapshot(homes.root) == before


def test_installing_again_adds_the_hook_once(homes):
    plan = cursor_plan(Scope.PROJECT, homes)
    install(plan)
    install(plan)
    hooks = json.loads((homes.project / ".cursor" / "hooks.json").read_text())
    assert len(hooks["hooks"]["stop"]) == 1


def test_the_cli_installs_reports_and_uninstalls_cursor(homes):
    def plugin(*args: str) -> tuple[int, str]:
        result = runner.invoke(app, list(args), env={"COLUMNS": "300"})
        return result.exit_code, " ".join(result.output.split())

    before = snapshot(homes.root)
    code, out = plugin("install", "--agent", "cursor", "--scope", "project")
    assert code == 0, out
    assert "Installed ralphctl's Cursor integration (project scope)" in out
    assert "/ralph-loop, /cancel-ralph, /ralph-status" in out

    code, out = plugin("install", "--agent", "cursor")
    assert code == 2
    assert "ralphctl plugin uninstall --agent cursor --scope project" in out

    result = runner.invoke(app, ["status", "--json", "--agent", "cursor"])
    user, project = json.loads(result.output)
    assert (user["agent"], user["installed"]) == ("cursor", False)
    assert (project["scope"], project["installed"], project["problems"]) == ("project", True, [])
    assert project["interpreter"] == sys.executable

    assert plugin("uninstall", "--agent", "cursor", "--scope", "project")[0] == 0
    assert snapshot(homes.root) == before


# -- the installed hook on Cursor's recorded stop inputs ------------------------------------


def installed_command(homes: Homes) -> str:
    """Install at project scope for this Python; the stop command hooks.json now holds."""
    install(cursor_plan(Scope.PROJECT, homes, Interpreter(sys.executable)))
    hooks = json.loads((homes.project / ".cursor" / "hooks.json").read_text())
    (hook,) = hooks["hooks"]["stop"]
    return str(hook["command"])


def cursor_stop(command: str, project: Path, **event: Any) -> dict[str, Any] | None:
    """Run ``command`` as Cursor does (a shell, from the project root) on a recorded stop."""
    done = subprocess.run(
        ["sh", "-c", command],
        input=agent_stop("cursor", project, **event),
        env=agent_env("cursor", project),
        cwd=project,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    return json.loads(out) if out.strip() else None


def test_the_installed_hook_follows_up_until_the_promise(homes):
    command = installed_command(homes)
    tracker = Path(
        arm(str(homes.project), "Fix the bug", max_iterations=3, session_id=SESSION).path
    )

    first = cursor_stop(command, homes.project)
    assert first is not None
    assert set(first) == {"followup_message"}
    assert "Ralph iteration 2/3" in first["followup_message"]

    transcript = cursor_transcript(homes.root / "t.jsonl", f"Done.\n{DONE}")
    assert cursor_stop(command, homes.project, transcript=transcript, loop_count=1) is None
    assert (fields_of(tracker)["active"], fields_of(tracker)["ended_reason"]) == (
        False,
        "completion",
    )


def test_the_installed_hook_sends_nothing_after_an_aborted_or_failed_turn(homes):
    command = installed_command(homes)
    tracker = Path(
        arm(str(homes.project), "Fix the bug", max_iterations=3, session_id=SESSION).path
    )

    for status in ("aborted", "error"):
        assert cursor_stop(command, homes.project, status=status) is None
    assert (fields_of(tracker)["active"], fields_of(tracker)["iteration"]) == (True, 1)


def test_the_installed_hook_knows_the_loop_limit_it_wrote(homes):
    command = installed_command(homes)
    tracker = Path(
        arm(
            str(homes.project),
            "Fix it",
            max_iterations=None,
            max_runtime_s=3600,
            session_id=SESSION,
        ).path
    )

    assert cursor_stop(command, homes.project, loop_count=LOOP_LIMIT - 1) is not None
    assert cursor_stop(command, homes.project, loop_count=LOOP_LIMIT) is None  # Cursor's cap
    assert fields_of(tracker)["active"] is False


def test_the_loop_command_arms_a_loop_the_next_cursor_stop_claims(homes):
    command = installed_command(homes)
    loop = (homes.project / ".cursor" / "commands" / "ralph-loop.md").read_text()
    (block,) = re.findall(r"```sh\n(.*?)```", loop, flags=re.DOTALL)
    typed = "Fix the user's bug --max-iterations 4 --completion-promise 'ALL DONE'"
    armed = subprocess.run(
        ["sh", "-c", block.replace("\nARGUMENTS\n", f"\n{typed}\n")],
        env=agent_env("cursor", homes.project),
        cwd=homes.project,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert armed.returncode == 0, armed.stderr

    printed = cursor_stop(command, homes.project)
    assert printed is not None
    assert "Ralph iteration 2/4" in printed["followup_message"]
    tracker = session_tracker(homes.project)
    assert fields_of(tracker)["completion_marker"] == "<promise>ALL DONE</promise>"
    assert "Fix the user's bug" in body_of(tracker)
