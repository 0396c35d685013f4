"""CLI modules share only public names: no command reaches into another's private helpers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CLI = Path(__file__).parents[2] / "src" / "ralphctl" / "cli"


def private_uses(source: str) -> list[str]:
    """``from ralphctl.cli.x import _y`` and ``x._y`` where ``x`` is an imported CLI module."""
    tree = ast.parse(source)
    cli_modules: set[str] = set()
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ralphctl.cli"):
            for alias in node.names:
                if node.module == "ralphctl.cli":
                    cli_modules.add(alias.asname or alias.name)
                elif alias.name.startswith("_"):
                    found.append(f"{node.module}.{alias.name}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in cli_modules
            and node.attr.startswith("_")
        ):
            found.append(f"{node.value.id}.{node.attr}")
    return found


@pytest.mark.parametrize("module", sorted(CLI.glob("*.py")), ids=lambda path: path.name)
def test_a_command_module_uses_no_private_name_of_another(module: Path) -> None:
    assert private_uses(module.read_text()) == []


def test_a_private_use_is_seen() -> None:
    source = "from ralphctl.cli import run\nfrom ralphctl.cli.run import _x\nrun._adapter()\n"
    assert private_uses(source) == ["ralphctl.cli.run._x", "run._adapter"]
