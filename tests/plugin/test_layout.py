"""What the plugin consists of: absolute interpreter paths, quoted, and nothing else to need."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

import ralphctl.hook
from ralphctl.plugin.layout import (
    HOOK_TIMEOUT_S,
    Interpreter,
    command_files,
    plugin_tree,
    render,
    stop_hook,
)
from tests.plugin.conftest import PYTHON


def frontmatter(text: str) -> dict[str, str]:
    head = text.split("---\n")[1]
    return dict(line.split(": ", 1) for line in head.splitlines())


def bang_block(text: str) -> str:
    match = re.search(r"```!\n(.*?)\n```", text, re.DOTALL)
    assert match, text
    return match.group(1)


def test_the_stop_hook_runs_the_hook_file_with_the_absolute_interpreter_isolated():
    group = stop_hook(PYTHON)
    [handler] = group["hooks"]
    hook_file = str(Path(ralphctl.hook.__file__).with_name("__main__.py"))
    assert handler == {
        "type": "command",
        "command": f"'/opt/my tools/venv/bin/python3' -I -S {shlex.quote(hook_file)} stop",
        "timeout": HOOK_TIMEOUT_S,
    }
    assert shlex.split(handler["command"]) == [PYTHON.python, "-I", "-S", hook_file, "stop"]


def test_a_relative_interpreter_is_refused():
    with pytest.raises(ValueError, match="must be absolute"):
        Interpreter("python3")


def test_the_plugin_is_a_local_marketplace_with_one_plugin():
    tree = plugin_tree(PYTHON, "1.2.3")
    assert sorted(tree) == [
        ".claude-plugin/marketplace.json",
        "ralphctl/.claude-plugin/plugin.json",
        "ralphctl/commands/cancel-ralph.md",
        "ralphctl/commands/ralph-loop.md",
        "ralphctl/commands/ralph-status.md",
        "ralphctl/hooks/hooks.json",
    ]
    marketplace = json.loads(tree[".claude-plugin/marketplace.json"])
    assert marketplace["name"] == "ralphctl"
    [entry] = marketplace["plugins"]
    assert (entry["name"], entry["source"], entry["version"]) == ("ralphctl", "./ralphctl", "1.2.3")
    assert json.loads(tree["ralphctl/.claude-plugin/plugin.json"])["name"] == "ralphctl"
    hooks = json.loads(tree["ralphctl/hooks/hooks.json"])
    assert hooks == {"hooks": {"Stop": [stop_hook(PYTHON)]}}


def test_ralph_loop_passes_the_raw_arguments_through_a_quoted_heredoc():
    text = command_files(PYTHON)["ralph-loop.md"]
    assert bang_block(text) == (
        "'/opt/my tools/venv/bin/python3' -P -m ralphctl.plugin.arm <<'RALPHCTL_ARGUMENTS_END'\n"
        "$ARGUMENTS\n"
        "RALPHCTL_ARGUMENTS_END"
    )
    head = frontmatter(text)
    assert json.loads(head["allowed-tools"]) == [
        "Bash('/opt/my tools/venv/bin/python3' -P -m ralphctl.plugin.arm:*)"
    ]
    assert head["argument-hint"] == "PROMPT [--max-iterations N] [--completion-promise TEXT]"
    assert head["disable-model-invocation"] == "true"


def test_ralph_loop_tells_the_model_when_it_may_print_the_completion_line():
    text = command_files(PYTHON)["ralph-loop.md"]
    assert "ONLY when its statement is completely\nand unequivocally true" in text
    assert "Never output it to leave the loop" in text


@pytest.mark.parametrize(
    ("name", "action"), [("cancel-ralph", "cancel"), ("ralph-status", "status")]
)
def test_cancel_and_status_run_the_hook_and_relay_its_answer(name, action):
    text = command_files(PYTHON)[f"{name}.md"]
    command = f"'/opt/my tools/venv/bin/python3' -P -m ralphctl.hook {action}"
    assert bang_block(text) == command
    assert json.loads(frontmatter(text)["allowed-tools"]) == [f"Bash({command}:*)"]
    assert "exactly as it was printed" in text


def test_no_placeholder_is_left_in_any_file():
    for text in plugin_tree(PYTHON, "0").values():
        assert "{{" not in text


def test_render_refuses_to_leave_a_placeholder_unfilled():
    assert render("a {{x}} b", {"x": "1"}) == "a 1 b"
    with pytest.raises(ValueError, match="unfilled placeholder"):
        render("a {{y}}", {"x": "1"})
