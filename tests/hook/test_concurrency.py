"""Stop events in quick succession: 50 hook processes at once on one tracker count exactly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ralphctl.hook.arming import arm
from tests.hook.helpers import HOOK_FILE, SESSION, fields_of, hook_env, stop_event

PROCESSES = 50


def test_fifty_concurrent_stops_each_get_their_own_iteration(tmp_path):
    armed = Path(arm(str(tmp_path), "Count", session_id=SESSION, max_iterations=1000).path)
    env = hook_env(tmp_path)
    running = [
        subprocess.Popen(
            [sys.executable, "-I", "-S", str(HOOK_FILE), "stop"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        for _ in range(PROCESSES)
    ]
    for process in running:
        assert process.stdin is not None
        process.stdin.write(stop_event(stop_hook_active=True))
        process.stdin.close()
    outputs = []
    for process in running:
        assert process.stdout is not None
        assert process.stderr is not None
        stdout, stderr = process.stdout.read(), process.stderr.read()
        assert process.wait(timeout=120) == 0
        assert stderr == b"", stderr
        outputs.append(stdout.decode())
    fields = fields_of(armed)
    assert fields["iteration"] == 1 + PROCESSES
    assert fields["stop_hook_active_count"] == PROCESSES
    seen = sorted(int(out.split('"Ralph iteration ')[1].split("/")[0]) for out in outputs)
    assert seen == list(range(2, PROCESSES + 2))
