"""run_agent with a prompt file: written privately before the spawn, gone after the run."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import pytest

from ralphctl.agents.base import AgentCommand, AgentUnavailable
from ralphctl.agents.process import run_agent
from tests.agents.test_process import LineRecorder

pytestmark = pytest.mark.timeout(60)

#: Prints its stdin, then the prompt file's mode and text (the path is its first argument).
SHOW_PROMPT = """
    import os, stat, sys
    print("stdin:", repr(sys.stdin.read()))
    path = sys.argv[1]
    print("mode:", oct(stat.S_IMODE(os.stat(path).st_mode)))
    print("dir mode:", oct(stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode)))
    print("its parent:", oct(stat.S_IMODE(os.stat(os.path.dirname(os.path.dirname(path))).st_mode)))
    print("text:", open(path).read())
"""


def command(code: str, prompt_file: Path, *, prompt: str = "the prompt") -> AgentCommand:
    program = textwrap.dedent(code)
    argv = [sys.executable, "-c", program, str(prompt_file)]
    return AgentCommand(argv, prompt.encode(), prompt_file=prompt_file)


def run(command: AgentCommand, cwd: Path) -> LineRecorder:
    recorder = LineRecorder()
    asyncio.run(run_agent(command, recorder, cwd=cwd, timeout=20))
    return recorder


def printed(recorder: LineRecorder) -> list[str]:
    return [line.decode() for line in recorder.lines]


def test_the_prompt_is_in_a_private_file_and_stdin_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "private" / "prompts" / "iteration-1.md"

    recorder = run(command(SHOW_PROMPT, path), tmp_path)

    assert printed(recorder) == [
        "stdin: ''",
        "mode: 0o600",
        "dir mode: 0o700",
        "its parent: 0o700",
        "text: the prompt",
    ]


def test_the_file_is_deleted_when_the_agent_exits(tmp_path: Path) -> None:
    path = tmp_path / "prompts" / "p.md"

    run(command("import sys; sys.exit(3)", path), tmp_path)

    assert not path.exists()
    assert path.parent.is_dir()  # the directory stays for the next iteration


def test_the_file_is_deleted_after_a_timeout(tmp_path: Path) -> None:
    path = tmp_path / "prompts" / "p.md"
    slow = command("import time; time.sleep(60)", path)

    recorder = LineRecorder()
    asyncio.run(run_agent(slow, recorder, cwd=tmp_path, timeout=0.5, grace_s=0.5))

    assert recorder.outcome is not None
    assert recorder.outcome.timed_out
    assert not path.exists()


def test_the_file_is_deleted_when_the_caller_cancels_the_run(tmp_path: Path) -> None:
    path = tmp_path / "prompts" / "p.md"

    async def cancel_while_running() -> None:
        sleeper = command("import time; time.sleep(60)", path)
        task = asyncio.create_task(run_agent(sleeper, LineRecorder(), cwd=tmp_path, timeout=30))
        while not path.exists():
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_while_running())

    assert not path.exists()


def test_the_file_is_deleted_when_the_agent_cannot_start(tmp_path: Path) -> None:
    path = tmp_path / "prompts" / "p.md"
    missing = AgentCommand([str(tmp_path / "no-such-agent")], b"x", prompt_file=path)

    with pytest.raises(AgentUnavailable):
        run(missing, tmp_path)

    assert not path.exists()


def test_an_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "prompts" / "p.md"
    path.parent.mkdir(mode=0o700)
    path.write_text("someone else's")

    with pytest.raises(AgentUnavailable, match="prompt file"):
        run(command(SHOW_PROMPT, path), tmp_path)

    assert path.read_text() == "someone else's"


def test_a_directory_open_to_other_users_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)

    with pytest.raises(AgentUnavailable, match="open to other users"):
        run(command(SHOW_PROMPT, folder / "p.md"), tmp_path)

    assert list(folder.iterdir()) == []


def test_a_symlinked_directory_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)

    with pytest.raises(AgentUnavailable, match="not a directory of this user's"):
        run(command(SHOW_PROMPT, tmp_path / "link" / "p.md"), tmp_path)


def test_without_a_prompt_file_the_prompt_goes_to_stdin(tmp_path: Path) -> None:
    code = "import sys; print(sys.stdin.read())"
    plain = AgentCommand([sys.executable, "-c", code], b"on stdin")

    recorder = run(plain, tmp_path)

    assert printed(recorder) == ["on stdin"]
    assert list(tmp_path.iterdir()) == []  # no file was written
