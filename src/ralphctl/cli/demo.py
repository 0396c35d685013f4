"""`ralphctl demo`: a complete offline loop in a temporary git repository."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import typer

from ralphctl.cli.common import console
from ralphctl.cli.foreground import plan_or_exit, run_here
from ralphctl.cli.loop_flags import QUIET
from ralphctl.cli.run import DB
from ralphctl.engine.starting import LoopRequest

TASK = """Build a tiny word-count library in this repository.

- `wordcount.py` with `count_words(text: str) -> int` that ignores punctuation.
- `test_wordcount.py` with tests for empty text, punctuation and several spaces.
- Keep `NOTES.md` up to date with what is done and what is left.
"""

_VERSION_ONE = "def count_words(text: str) -> int:\n    return len(text.split(' '))\n"
_VERSION_TWO = '''import re

_WORD = re.compile(r"[A-Za-z0-9']+")


def count_words(text: str) -> int:
    """Count the words of ``text``, ignoring punctuation and extra spaces."""
    return len(_WORD.findall(text))
'''
_TESTS = """from wordcount import count_words


def test_empty_text_has_no_words():
    assert count_words("") == 0


def test_punctuation_is_not_a_word():
    assert count_words("Hello, world!") == 2


def test_several_spaces_count_once():
    assert count_words("a  b   c") == 3
"""


def _script() -> dict[str, Any]:
    """Three iterations of a diligent agent: draft, test (finding a bug), fix and finish."""
    return {
        "steps": [
            {
                "text": "I read the task and wrote a first `count_words` in wordcount.py. "
                "Tests come next.",
                "edits": [
                    {"path": "wordcount.py", "content": _VERSION_ONE},
                    {"path": "NOTES.md", "content": "# Notes\n\n- [x] first count_words\n"},
                ],
                "cost_usd": 0.0123,
                "tokens": {"input": 1800, "output": 240},
                "sleep_s": 0.4,
            },
            {
                "text": "Added test_wordcount.py. Two tests fail: split(' ') counts empty "
                "strings and punctuation. Fixing that next iteration.",
                "edits": [
                    {"path": "test_wordcount.py", "content": _TESTS},
                    {"path": "NOTES.md", "append": "- [x] tests (2 failing)\n"},
                ],
                "cost_usd": 0.0161,
                "tokens": {"input": 2300, "output": 310},
                "sleep_s": 0.4,
            },
            {
                "text": "Rewrote count_words with a word regex; all three tests pass.\n\n"
                "<promise>COMPLETE</promise>",
                "edits": [
                    {"path": "wordcount.py", "content": _VERSION_TWO},
                    {"path": "NOTES.md", "append": "- [x] punctuation fixed, all tests pass\n"},
                ],
                "cost_usd": 0.0148,
                "tokens": {"input": 2600, "output": 280},
                "sleep_s": 0.4,
            },
        ]
    }


def demo_command(
    cooldown: str = typer.Option(
        "0.5s", "--cooldown", help="Pause from one agent's exit to the next one's start."
    ),
    directory: Path | None = typer.Option(
        None, "--dir", help="Create the demo repository here (default: a new temp dir)."
    ),
    db: str | None = DB,
    quiet: bool = QUIET,
) -> None:
    """Run a complete offline loop with the scripted agent in a temporary git repo."""
    root = _make_repo(directory)
    script = root.parent / f"{root.name}.script.json"
    script.write_text(json.dumps(_script(), indent=2))
    console.print(f"[bold]demo repository:[/] {root}")
    overrides = {
        "agent": "scripted",
        "script": str(script),
        "max_iterations": 10,
        "max_cost_usd": 1.0,
        "cooldown": cooldown,
        "checkpoint_interval": 2,
    }
    request = LoopRequest(TASK, root, overrides, name="demo: word-count library")
    plan = plan_or_exit(request)
    code = run_here(plan, db, quiet=quiet, json_out=False)
    log = _git(root, "log", "--oneline", "--decorate=no")
    console.print("[bold]git log of the demo repository:[/]")
    console.out(log.rstrip(), highlight=False)
    console.print(f"Explore: [bold]ralphctl history {plan.loop.id}[/] · [bold]ralphctl status[/]")
    raise typer.Exit(code)


def _make_repo(directory: Path | None) -> Path:
    root = Path(tempfile.mkdtemp(prefix="ralphctl-demo-", dir=directory))
    _git(root, "init", "-q")
    _git(root, "config", "user.name", "ralphctl demo")
    _git(root, "config", "user.email", "demo@ralphctl.invalid")
    (root / "TASK.md").write_text(TASK)
    _git(root, "add", "TASK.md")
    _git(root, "commit", "-q", "-m", "Task for the ralphctl demo")
    return root


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout
