"""Help texts reach the user as written: TOML table names in brackets are not taken for
rich markup, and what they say about loops agrees with the docs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from ralphctl.cli.app import app

#: ``[server]``, ``[loops.defaults]``: what rich would swallow as a markup tag.
BRACKETED = re.compile(r"\[[a-z_.]+\]")


def commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command's path, the root's first (typer's groups have ``commands``)."""
    yield path
    for name, command in getattr(group, "commands", {}).items():
        yield from commands(command, (*path, name))


def written(command: Any) -> list[str]:
    """The bracketed names the source of ``command``'s help mentions, unescaped."""
    texts = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
    return [name for text in texts for name in BRACKETED.findall(text.replace("\\[", "["))]


ALL = list(commands(typer.main.get_command(app)))


def help_of(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("path", ALL, ids=[" ".join(p) or "ralphctl" for p in ALL])
def test_bracketed_toml_tables_survive_in_every_help(path: tuple[str, ...]) -> None:
    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    shown = help_of(path)
    for name in written(command):
        assert name in shown, f"{' '.join(path)} --help lost {name}"


def test_config_show_and_serve_name_their_tables() -> None:
    assert "[loops.defaults]" in help_of(("config", "show"))
    assert "[server]" in help_of(("serve",))


def test_pause_help_says_hook_loops_pause_too() -> None:
    assert "hook-mode loop pauses" in " ".join(help_of(("loops", "pause")).split())
