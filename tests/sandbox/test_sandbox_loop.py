"""``ralphctl run --sandbox``: a whole loop whose agent tries to get out, from the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(90)

DONE = "All done.\n<promise>COMPLETE</promise>"


def start(
    tmp_path: Path, home: Path, *steps: dict[str, Any], flags: tuple[str, ...] = (), **env: str
) -> subprocess.Popen[str]:
    """``ralphctl run --sandbox`` in ``tmp_path/work`` with ``home`` as the home: the scripted
    agent playing ``steps`` (if any), and ``flags``."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    argv = [sys.executable, "-m", "ralphctl", "run", "Build it.", "--sandbox", "--json"]
    argv += ["--cooldown", "0", "--checkpoint-interval", "0", *flags]
    if steps:
        script = tmp_path / "script.json"
        script.write_text(json.dumps({"steps": list(steps)}))
        argv += ["--script", str(script)]
    return subprocess.Popen(
        argv,
        cwd=work,
        env={
            **os.environ,
            "HOME": str(home),
            "RALPHCTL_DB": str(tmp_path / "ralphctl.db"),
            "RALPHCTL_CONFIG": str(tmp_path / "no-user-config.toml"),
            **env,
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def ralphctl(tmp_path: Path, home: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ralphctl", *args],
        env={**os.environ, "HOME": str(home), "RALPHCTL_DB": str(tmp_path / "ralphctl.db")},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


@pytest.mark.usefixtures("bwrap")
def test_a_loop_records_the_refusals_and_goes_on_to_complete(tmp_path: Path, home: Path) -> None:
    refused = [
        "cat ~/.ssh/id_ed25519",
        "while [ ! -s runner.pid ]; do sleep 0.05; done; kill -TERM $(cat runner.pid)",
    ]
    vanishing = ["echo pwned >> ~/.bashrc"]  # written to the sandbox's own empty home
    escapes = [refused[0], *vanishing, refused[1]]
    first = {"edits": [{"path": "a.txt", "content": "a\n"}], "bash": escapes, "text": "Tried."}
    second = {"edits": [{"path": "b.txt", "content": "b\n"}], "text": DONE}

    loop = start(tmp_path, home, first, second)
    (tmp_path / "work" / "runner.pid").write_text(str(loop.pid))
    out, err = loop.communicate(timeout=60)

    assert loop.returncode == 0, err
    summary = json.loads(out)
    assert (summary["status"], summary["iterations"]) == ("completed", 2)
    assert (tmp_path / "work" / "a.txt").read_text() == "a\n"
    assert (tmp_path / "work" / "b.txt").read_text() == "b\n"
    assert not (home / ".bashrc").exists()
    logs = ralphctl(tmp_path, home, "logs", summary["loop_id"], "--iteration", "1")
    assert logs.count("✗ the tool failed") == len(refused)
    raw = ralphctl(tmp_path, home, "logs", summary["loop_id"], "--iteration", "1", "--raw")
    assert "PRIVATE KEY" not in raw
    assert "No such process" in raw


def test_without_bubblewrap_the_loop_does_not_start_and_says_why(
    tmp_path: Path, home: Path
) -> None:
    loop = start(
        tmp_path,
        home,
        {"edits": [{"path": "a.txt", "content": "a\n"}]},
        RALPHCTL_BWRAP_BIN=str(tmp_path / "no-bwrap-here"),
    )
    _, err = loop.communicate(timeout=60)

    assert loop.returncode == 3
    assert "--sandbox: bwrap is not installed" in err
    assert "apt-get install bubblewrap" in err
    assert not (tmp_path / "work" / "a.txt").exists()


def test_a_dry_run_shows_the_confined_command(tmp_path: Path, home: Path, bwrap: None) -> None:
    loop = start(tmp_path, home, {"text": DONE}, flags=("--dry-run", "--sandbox-net", "none"))
    out, err = loop.communicate(timeout=60)
    assert loop.returncode == 0, err
    assert "bwrap" in out
    assert "--unshare-net" in out


def test_sandbox_net_takes_allow_or_none(tmp_path: Path, home: Path) -> None:
    loop = start(tmp_path, home, {"text": DONE}, flags=("--sandbox-net", "some"))
    _, err = loop.communicate(timeout=60)
    assert loop.returncode == 2
    assert "sandbox_net (from flag): must be one of allow, none, not 'some'" in err


@pytest.mark.usefixtures("bwrap")
def test_an_agent_reading_its_prompt_from_a_file_finds_it_in_the_sandbox(
    tmp_path: Path, home: Path
) -> None:
    agent = "sh -c 'cat {prompt_file}; echo \"<promise>COMPLETE</promise>\"'"
    loop = start(tmp_path, home, flags=("--agent-command", agent))
    out, err = loop.communicate(timeout=60)

    assert loop.returncode == 0, err
    summary = json.loads(out)
    assert summary["status"] == "completed"
    assert "Build it." in ralphctl(tmp_path, home, "logs", summary["loop_id"])
