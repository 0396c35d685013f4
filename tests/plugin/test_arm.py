"""/ralph-loop's arguments, from Claude Code's raw $ARGUMENTS text to `ralphctl.hook arm`."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

import ralphctl.hook.__main__ as hook_main
from ralphctl.plugin import arm
from ralphctl.plugin.arm import split_arguments


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (
            'Write the files --max-iterations=5 --completion-promise "ALL DONE"\n',
            ["Write", "the", "files", "--max-iterations=5", "--completion-promise", "ALL DONE"],
        ),
        (
            "Fix it --max-iterations 3 --completion-promise 'ALL GREEN'",
            ["Fix", "it", "--max-iterations", "3", "--completion-promise", "ALL GREEN"],
        ),
        ('--completion-promise="ALL DONE" go', ["--completion-promise=ALL DONE", "go"]),
        (
            "Fix the user's and the admin's bug",
            ["Fix", "the", "user's", "and", "the", "admin's", "bug"],
        ),
        (
            '"Fix the user\'s bug" --max-iterations 2',
            ["Fix the user's bug", "--max-iterations", "2"],
        ),
        ('Say "hi', ["Say", '"hi']),
        ("Match \\d+ in C:\\temp", ["Match", "\\d+", "in", "C:\\temp"]),
        ("Run $(rm -rf /) `id` ; echo", ["Run", "$(rm", "-rf", "/)", "`id`", ";", "echo"]),
        ("line one\nline two\n", ["line", "one", "line", "two"]),
        ('"" x', ["", "x"]),
        ("   \n", []),
    ],
)
def test_words_follow_the_shell_where_prompts_need_it(raw, words):
    assert split_arguments(raw) == words


def test_main_runs_the_hooks_arm_with_the_words_and_returns_its_status(monkeypatch):
    calls = []

    def fake_hook(argv):
        calls.append(argv)
        return 3

    monkeypatch.setattr(hook_main, "main", fake_hook)
    monkeypatch.setattr(sys, "stdin", io.StringIO('Go --completion-promise "ALL DONE"\n'))
    assert arm.main() == 3
    assert calls == [["arm", "Go", "--completion-promise", "ALL DONE"]]


def test_the_slash_command_path_imports_no_heavy_library(tmp_path):
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-P", "-m", "ralphctl.plugin.arm"],
        input="--help",
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "usage: ralphctl-hook arm" in done.stdout
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()}
    assert not {"pydantic", "typer", "rich", "sqlalchemy"} & imported


def test_gemini_cli_passes_the_raw_text_as_one_word_after_text(monkeypatch):
    calls = []

    def fake_hook(argv):
        calls.append(argv)
        return 0

    monkeypatch.setattr(hook_main, "main", fake_hook)
    monkeypatch.setattr(sys, "stdin", io.StringIO("never read"))

    assert arm.main(["--text", "Fix the user's bug --completion-promise 'ALL DONE'"]) == 0
    assert arm.main(["--text"]) == 0  # `/ralph-loop` with nothing after it

    assert calls == [
        ["arm", "Fix", "the", "user's", "bug", "--completion-promise", "ALL DONE"],
        ["arm"],
    ]
