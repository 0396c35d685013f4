"""``ralphctl run`` delivers while it runs, and gives what is due a bounded flush at its end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.notify.receiver import receiver

DONE = "done\n<promise>COMPLETE</promise>"


def ralphctl(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "RALPHCTL_CONFIG": str(tmp_path / "no-user-config.toml")}
    command = [str(Path(sys.executable).with_name("ralphctl")), *args]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    return done, time.perf_counter() - started


def test_a_run_delivers_its_completion_before_it_exits(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"text": DONE}]}))
    with receiver(200) as hook_server:
        (work / "ralphctl.toml").write_text(
            f'[[notify.webhooks]]\nurl = "{hook_server.url}"\nevents = ["completed"]\n'
        )
        done, took = ralphctl(
            tmp_path,
            "run",
            "--agent",
            "scripted",
            "--script",
            str(script),
            "-C",
            str(work),
            "--db",
            str(tmp_path / "db.sqlite"),
            "Say done.",
        )

    assert done.returncode == 0, done.stderr
    (accepted,) = hook_server.accepted
    assert json.loads(accepted.body)["event"] == "completed"
    assert took < 15


def test_a_receiver_that_never_answers_holds_a_run_at_most_the_flush(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"text": DONE}]}))
    db = str(tmp_path / "db.sqlite")
    args = ["--agent", "scripted", "--script", str(script), "-C", str(work), "--db", db]
    plain, alone = ralphctl(tmp_path, "run", *args, "Say done.")
    with receiver(30.0) as hook_server:
        (work / "ralphctl.toml").write_text(
            f'[[notify.webhooks]]\nurl = "{hook_server.url}"\nevents = ["completed"]\n'
        )
        held, watched = ralphctl(tmp_path, "run", *args, "Say done.")
        listed, _ = ralphctl(tmp_path, "notify", "ls", "--json", "--db", db)

    assert plain.returncode == held.returncode == 0
    print(f"\nrun alone {alone:.2f}s, with a receiver that never answers {watched:.2f}s")
    assert watched < alone + 2.0 + 1.5  # the flush (2 s) and some slack for a busy machine
    # left in the outbox for the next run or serve (the first run's completion too: its
    # events were never notified, and its work dir has a channel now)
    assert {n["status"] for n in json.loads(listed.stdout)} == {"pending"}
