"""Stop-hook decision latency, as a whole process, against the bare Python start-up.

Cases (each a real process fed one Stop event on stdin, as each agent CLI runs it):

    no loop  : the session has no tracker (the hook answers on every stop of every session)
    blocks   : an active loop, the agent is not done: increment, write, print the block
    completes: an active loop, the agent printed its promise: deactivate, print, allow

Each case runs under four launchers — ``python -m ralphctl.hook stop`` (also with ``-P``),
the ``ralphctl-hook`` console script, and ``python -I -S …/ralphctl/hook/__main__.py stop`` —
then for Codex, Gemini CLI, Copilot CLI and Cursor with their own Stop input and environment
under the launcher their installers write (``python -I -S …/__main__.py stop --format X``;
Copilot and Cursor send no final text, so their hook reads it from the transcript),
side by side with ``python -c pass`` and ``python -I -S -c pass`` (the same interpreter) and
two reference rows that only import what an active loop needs (``_json`` and ``fcntl``; then
the brain, ``domain.markers`` and ``domain.stoprules``), all interleaved round-robin in one run
so that machine noise hits every row alike. The history write is off
(``RALPHCTL_HOOK_STORE=off``) in those rows; one more row, measured apart with a pause after
each run (the detached writer imports SQLAlchemy and would load the CPU for the next run),
shows what forking that writer adds to the blocking case. Budgets (printed, never
asserted): <= 35 ms median for an active loop, <= 20 ms with no loop. The last column is
the median CPU time (user + system) of the process, which hardly moves when other work
shares the cores: on a loaded machine, compare rows by it.

    .venv/bin/python bench/hook_latency.py [RUNS]
"""

from __future__ import annotations

import json
import os
import resource
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
AGENTS = ("codex", "gemini", "copilot", "cursor", "opencode")
#: The history of a Copilot session before the stop: a few hundred events.
COPILOT_EVENTS = 400


def event(agent: str, project: Path, session: str, text: str, transcript: str) -> bytes:
    """One Stop input as ``agent`` sends it after one of our blocks (field names of the
    pinned CLIs, see tests/hook/agent_inputs.py)."""
    cwd = str(project)
    if agent in ("claude", "codex"):
        data: dict[str, object] = {
            "session_id": session,
            "transcript_path": transcript,
            "cwd": cwd,
            "permission_mode": "acceptEdits",
            "hook_event_name": "Stop",
            "stop_hook_active": True,
            "last_assistant_message": text,
        }
        if agent == "codex":
            data |= {"turn_id": "turn-2", "model": "gpt-5.2-codex"}
    elif agent == "gemini":
        data = {
            "session_id": session,
            "transcript_path": transcript,
            "cwd": cwd,
            "hook_event_name": "AfterAgent",
            "timestamp": "2026-11-23T22:23:16.431Z",
            "prompt": "bench",
            "prompt_response": text,
            "stop_hook_active": True,
        }
    elif agent == "copilot":
        data = {
            "sessionId": session,
            "timestamp": 1795472596499,
            "cwd": cwd,
            "transcriptPath": transcript,
            "stopReason": "end_turn",
            "stop_hook_active": True,
        }
    elif agent == "opencode":  # as ralphctl's OpenCode plugin sends it at session.idle
        data = {
            "hook_event_name": "session.idle",
            "session_id": session,
            "cwd": cwd,
            "last_assistant_message": text,
            "status": "completed",
            "stop_hook_active": True,
        }
    else:
        data = {
            "conversation_id": session,
            "generation_id": "gen-1",
            "hook_event_name": "stop",
            "workspace_roots": [cwd],
            "transcript_path": transcript,
            "status": "completed",
            "loop_count": 1,
        }
    return json.dumps(data).encode()


def write_transcript(agent: str, path: Path, text: str) -> str:
    """The transcript the hook reads the final text from (Copilot, Cursor); else none."""
    if agent == "copilot":
        filler = {"type": "tool.execution_complete", "data": {"result": {"content": "x" * 200}}}
        last = {"type": "assistant.message", "data": {"messageId": "m", "content": text}}
        lines = [filler] * COPILOT_EVENTS + [last]
    elif agent == "cursor":
        lines = [{"role": "assistant", "message": {"content": [{"type": "text", "text": text}]}}]
    else:
        return "/nonexistent.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def agent_env(agent: str, project: Path, session: str) -> dict[str, str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if k != "PYTHONDONTWRITEBYTECODE" and not k.startswith(("CLAUDE", "GEMINI", "CURSOR"))
    }
    own = {
        "claude": {"CLAUDE_PROJECT_DIR": str(project), "CLAUDE_CODE_SESSION_ID": session},
        "gemini": {"GEMINI_PROJECT_DIR": str(project)},
        "cursor": {"CURSOR_PROJECT_DIR": str(project)},
    }
    return base | own.get(agent, {}) | {"RALPHCTL_HOOK_STORE": "off"}


class Case:
    """One scenario of one agent: its stdin, its environment, how to reset its tracker."""

    def __init__(
        self, project: Path, name: str, session: str, text: str, armed: bool, agent: str = "claude"
    ) -> None:
        self.name = name
        self.agent = agent
        session = f"{agent}-{session}"
        transcript = write_transcript(agent, project / f"{session}.jsonl", text)
        self.stdin = event(agent, project, session, text, transcript)
        self.env = agent_env(agent, project, session)
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


def timed(command: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, float]:
    """The wall time and the CPU time (user + system) of one run, in ms. CPU time hardly
    moves with the machine's load: it compares rows when other work shares the cores."""
    before = _cpu_of_children()
    start = time.perf_counter()
    done = subprocess.run(command, input=stdin, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0 or done.stderr:
        raise SystemExit(f"{command} failed: {done.returncode} {done.stderr!r}")
    return elapsed * 1000, (_cpu_of_children() - before) * 1000


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        project = Path(root)
        cases = [
            case
            for agent in ("claude", *AGENTS)
            for case in (
                Case(project, "no loop", "session-none", "Done.", False, agent),
                Case(project, "blocks", "session-block", "Still working on it.", True, agent),
                Case(
                    project,
                    "completes",
                    "session-done",
                    "All done.\n<promise>COMPLETE</promise>",
                    True,
                    agent,
                ),
            )
        ]
        floor_env = cases[0].env
        samples: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}
        rows: list[tuple[str, list[str], bytes, dict[str, str], Case | None]] = [
            (name, command, b"", floor_env, None) for name, command in FLOORS.items()
        ]
        rows += [
            (f"{case.name:9s} · {launcher}", command, case.stdin, case.env, case)
            for case in cases
            if case.agent == "claude"
            for launcher, command in LAUNCHERS.items()
        ]
        rows += [
            (
                f"{case.name:9s} · {case.agent} -I -S file",
                [*LAUNCHERS["python -I -S file"], "--format", case.agent],
                case.stdin,
                case.env,
                case,
            )
            for case in cases
            if case.agent != "claude"
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
                wall, used = timed(command, stdin, env)
                samples.setdefault(name, []).append(wall)
                cpu.setdefault(name, []).append(used)
        blocking = cases[1]
        history = blocking.env | {"RALPHCTL_HOOK_STORE": "detached", "RALPHCTL_DB": f"{root}/h.db"}
        name = "blocks    · python -I -S file · history"
        for _ in range(max(5, RUNS // 3)):
            wall, _ = timed(LAUNCHERS["python -I -S file"], blocking.stdin, history)
            samples.setdefault(name, []).append(wall)
            time.sleep(1.0)  # let the detached writer finish before the next run
        _report(samples, cpu)


def _report(samples: dict[str, list[float]], cpu: dict[str, list[float]]) -> None:
    floor = statistics.median(samples["python -c pass"])
    isolated = statistics.median(samples["python -I -S -c pass"])
    print(f"{RUNS} runs each, interleaved; Python {sys.version.split()[0]} ({PYTHON})")
    print(f"{'case':40s} {'median':>8s} {'p90':>8s} {'vs -c pass':>11s} {'budget':>7s} {'cpu':>8s}")
    for name, values in samples.items():
        median = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        budget = next((b for case, b in BUDGET_MS.items() if name.startswith(case)), None)
        verdict = "" if budget is None else ("ok" if median <= budget else "OVER")
        used = f"{statistics.median(cpu[name]):6.1f}ms" if name in cpu else ""
        print(
            f"{name:40s} {median:7.1f}ms {p90:7.1f}ms {median / floor:10.2f}x "
            f"{'' if budget is None else f'{budget:.0f}ms':>6s} {verdict:4s} {used:>8s}"
        )
    print(f"floor: python -c pass {floor:.1f} ms, python -I -S -c pass {isolated:.1f} ms")


if __name__ == "__main__":
    main()
