"""Stop-hook decision latency, as a whole process, against the bare Python start-up.

Cases (each a real process fed one Stop event on stdin, as Claude Code runs it):

    no loop  : the session has no tracker (the hook answers on every stop of every session)
    blocks   : an active loop, the agent is not done: increment, write, print the block
    completes: an active loop, the agent printed its promise: deactivate, print, allow

Each case runs under four launchers — ``python -m ralphctl.hook stop`` (also with ``-P``),
the ``ralphctl-hook`` console script, and ``python -I -S …/ralphctl/hook/__main__.py stop`` —
side by side with ``python -c pass`` and ``python -I -S -c pass`` (the same interpreter) and
two reference rows that only import what an active loop needs (``_json`` and ``fcntl``; then
the brain, ``domain.markers`` and ``domain.stoprules``), all interleaved round-robin in one run
so that machine noise hits every row alike. The history write is off
(``RALPHCTL_HOOK_STORE=off``) in those rows; one more row, measured apart with a pause after
each run (the detached writer imports SQLAlchemy and would load the CPU for the next run),
shows what forking that writer adds to the blocking case. Budgets (printed, never
asserted): <= 35 ms median for an active loop, <= 20 ms with no loop.

    .venv/bin/python bench/hook_latency.py [RUNS]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ralphctl.hook
from ralphctl.hook.arming import arm

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
PYTHON = sys.executable
HOOK_FILE = str(Path(ralphctl.hook.__file__).with_name("__main__.py"))
SCRIPT = str(Path(PYTHON).with_name("ralphctl-hook"))
LAUNCHERS = {
    "python -m": [PYTHON, "-m", "ralphctl.hook", "stop"],
    "python -P -m": [PYTHON, "-P", "-m", "ralphctl.hook", "stop"],
    "console script": [SCRIPT, "stop"],
    "python -I -S file": [PYTHON, "-I", "-S", HOOK_FILE, "stop"],
}
PACKAGE_ROOT = str(Path(ralphctl.hook.__file__).parents[2])
IMPORT = f"import sys; sys.path.insert(0, {PACKAGE_ROOT!r}); import _json, fcntl"
FLOORS = {
    "python -c pass": [PYTHON, "-c", "pass"],
    "python -I -S -c pass": [PYTHON, "-I", "-S", "-c", "pass"],
    # What an active loop must import before deciding anything: the stdlib, then the brain.
    "ref: -I -S import _json, fcntl": [PYTHON, "-I", "-S", "-c", IMPORT],
    "ref: + domain markers, stoprules": [
        PYTHON,
        "-I",
        "-S",
        "-c",
        IMPORT + "; import ralphctl.domain.markers, ralphctl.domain.stoprules",
    ],
}
BUDGET_MS = {"no loop": 20.0, "blocks": 35.0, "completes": 35.0}


def event(session: str, text: str) -> bytes:
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": "/nonexistent.jsonl",
            "cwd": "/",
            "permission_mode": "acceptEdits",
            "hook_event_name": "Stop",
            "stop_hook_active": True,
            "last_assistant_message": text,
        }
    ).encode()


class Case:
    """One scenario: its stdin, its environment, and how to reset its tracker."""

    def __init__(self, project: Path, name: str, session: str, text: str, armed: bool) -> None:
        self.name = name
        self.stdin = event(session, text)
        self.env = {
            **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
            "CLAUDE_PROJECT_DIR": str(project),
            "CLAUDE_CODE_SESSION_ID": session,
            "RALPHCTL_HOOK_STORE": "off",
        }
        self.tracker: Path | None = None
        self.original = ""
        if armed:
            done = arm(str(project), "bench", session_id=session, max_iterations=10**9)
            self.tracker = Path(done.path)
            self.original = self.tracker.read_text()

    def reset(self) -> None:
        """A completed loop is inactive: put the armed tracker back (outside the timing)."""
        if self.tracker is not None and self.name == "completes":
            self.tracker.write_text(self.original)


def timed(command: list[str], stdin: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, input=stdin, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0 or done.stderr:
        raise SystemExit(f"{command} failed: {done.returncode} {done.stderr!r}")
    return elapsed * 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        project = Path(root)
        cases = [
            Case(project, "no loop", "session-none", "Done.", armed=False),
            Case(project, "blocks", "session-block", "Still working on it.", armed=True),
            Case(
                project,
                "completes",
                "session-done",
                "All done.\n<promise>COMPLETE</promise>",
                armed=True,
            ),
        ]
        floor_env = cases[0].env
        samples: dict[str, list[float]] = {}
        rows: list[tuple[str, list[str], bytes, dict[str, str], Case | None]] = [
            (name, command, b"", floor_env, None) for name, command in FLOORS.items()
        ]
        rows += [
            (f"{case.name:9s} · {launcher}", command, case.stdin, case.env, case)
            for case in cases
            for launcher, command in LAUNCHERS.items()
        ]
        for _ in range(3):  # warm-up: bytecode caches, page cache
            for _name, command, stdin, env, case in rows:
                if case is not None:
                    case.reset()
                timed(command, stdin, env)
        for _ in range(RUNS):
            for name, command, stdin, env, case in rows:
                if case is not None:
                    case.reset()
                samples.setdefault(name, []).append(timed(command, stdin, env))
        blocking = cases[1]
        history = blocking.env | {"RALPHCTL_HOOK_STORE": "detached", "RALPHCTL_DB": f"{root}/h.db"}
        name = "blocks    · python -I -S file · history"
        for _ in range(max(5, RUNS // 3)):
            samples.setdefault(name, []).append(
                timed(LAUNCHERS["python -I -S file"], blocking.stdin, history)
            )
            time.sleep(1.0)  # let the detached writer finish before the next run
        _report(samples)


def _report(samples: dict[str, list[float]]) -> None:
    floor = statistics.median(samples["python -c pass"])
    isolated = statistics.median(samples["python -I -S -c pass"])
    print(f"{RUNS} runs each, interleaved; Python {sys.version.split()[0]} ({PYTHON})")
    print(f"{'case':40s} {'median':>8s} {'p90':>8s} {'vs -c pass':>11s} {'budget':>7s}")
    for name, values in samples.items():
        median = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        budget = next((b for case, b in BUDGET_MS.items() if name.startswith(case)), None)
        verdict = "" if budget is None else ("ok" if median <= budget else "OVER")
        print(
            f"{name:40s} {median:7.1f}ms {p90:7.1f}ms {median / floor:10.2f}x "
            f"{'' if budget is None else f'{budget:.0f}ms':>6s} {verdict}"
        )
    print(f"floor: python -c pass {floor:.1f} ms, python -I -S -c pass {isolated:.1f} ms")


if __name__ == "__main__":
    main()
