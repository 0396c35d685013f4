"""`ralphctl run --mode hook --agent codex` with the REAL pinned Codex CLI (0.169.0) against
the scripted Responses API mock: one `codex exec` session kept going by the Stop hook that
ralphctl adds for the run (`-c` overrides with the hook's trust, `codex_hooks`).

Each Stop of the session is an iteration; a block continues the same turn with its reason;
the thread id Codex chose is adopted as the loop's session (its tracker moves under it), and
a session Codex ended itself is continued with `codex exec resume <that id>`. The module also
holds the trust facts to the CLI: the hash ralphctl computes is the one Codex trusts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ralphctl.agents.codex_hooks import session_stop_hook
from ralphctl.domain.costs import price_for
from ralphctl.domain.model import TokenUsage
from ralphctl.hook.paths import tracker_path
from ralphctl.hook.tracker import load
from ralphctl.store.repository import Store
from tests.agents.codex.harness import MODEL, RealCodex, real_codex_session
from tests.agents.pinned import run_ralphctl
from tests.mockapi import ApiError, Reply, Usage
from tests.mockapi.openai_responses import input_texts

pytestmark = [pytest.mark.real_cli, pytest.mark.timeout(120)]

TASK = "Write the notes."
DONE = "The notes are written.\n<promise>COMPLETE</promise>"


@pytest.fixture(scope="module")
def shared_codex(codex_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCodex]:
    with real_codex_session(codex_bin, tmp_path_factory.mktemp("codex-hook")) as session:
        yield session


@pytest.fixture
def codex(shared_codex: RealCodex, tmp_path: Path) -> RealCodex:
    """The module's CLI and mock, in this test's own project folder."""
    return shared_codex.in_project(tmp_path / "project")


def run_hook_mode(codex: RealCodex, *extra: str) -> subprocess.CompletedProcess[str]:
    database = codex.project.parent / "ralphctl.db"
    args = ("run", "--mode", "hook", "--agent", "codex", "--task", TASK, "--json", *extra)
    return run_ralphctl(codex.env, codex.project, database, *args, timeout=90)


def stored(codex: RealCodex, loop_id: str) -> tuple[Any, list[Any]]:
    with Store.open(str(codex.project.parent / "ralphctl.db")) as store:
        return store.get_loop(loop_id), store.iterations(loop_id)


def rollouts(codex: RealCodex) -> set[str]:
    """The thread ids Codex kept a rollout of (``rollout-<time>-<thread id>.jsonl``)."""
    files = (codex.codex_home / "sessions").glob("*/*/*/rollout-*.jsonl")
    return {path.stem[-36:] for path in files}


def told(codex: RealCodex, since: int) -> list[str]:
    """The user texts the model was sent since request ``since``, each once, in order."""
    requests = codex.server.main_requests[since:]
    return list(dict.fromkeys(t for request in requests for t in input_texts(request)))


def test_the_hook_keeps_one_codex_session_going_until_the_marker(codex):
    threads_before, served = rollouts(codex), len(codex.server.main_requests)
    codex.server.set_script(
        Reply("Working (1).", Usage(1000, 10)),
        Reply("Working (2).", Usage(1100, 20)),
        Reply(DONE, Usage(1200, 30)),
    )

    done = run_hook_mode(codex, "--max-iterations", "5")

    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["status"], summary["iterations"]) == ("completed", 3)
    loop, iterations = stored(codex, summary["loop_id"])
    assert [(it.n, it.status, it.output_summary) for it in iterations] == [
        (1, "ok", "Working (1)."),
        (2, "ok", "Working (2)."),
        (3, "ok", DONE.replace("\n", " ")),  # the summary is one line
    ]
    assert iterations[-1].completion_signal_found
    (thread,) = rollouts(codex) - threads_before  # one codex session, its id adopted
    assert loop.agent_session_id == thread
    assert {it.agent_session_id for it in iterations} == {thread}
    tracker = load(tracker_path(str(codex.project), thread))
    assert tracker is not None
    assert (tracker.fields["session_id"], tracker.fields["active"]) == (thread, False)
    assert tracker.fields["ended_reason"] == "completion"
    assert len(codex.server.main_requests) - served == 3
    blocks = [t for t in told(codex, served) if "iteration 2" in t or "iteration 3" in t]
    assert len(blocks) == 2  # each block's reason went back to the model
    # metered at each Stop from Codex's rollout, then settled on its closing total
    assert [(it.tokens_input, it.tokens_output) for it in iterations] == [
        (1000, 10),
        (1100, 20),
        (1200, 30),
    ]
    assert (loop.tokens_input, loop.tokens_output) == (3300, 60)


def test_a_loop_ends_at_max_iterations_with_exit_1(codex):
    codex.server.set_script(*[Reply(f"Still working ({n}).") for n in range(1, 4)])

    done = run_hook_mode(codex, "--max-iterations", "3")

    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["status"], summary["stop_reason"]) == ("stopped", "max_iterations")
    loop, iterations = stored(codex, summary["loop_id"])
    assert [it.output_summary for it in iterations] == [
        "Still working (1).",
        "Still working (2).",
        "Still working (3).",
    ]
    tracker = load(tracker_path(str(codex.project), str(loop.agent_session_id)))
    assert tracker is not None
    assert (tracker.fields["active"], tracker.fields["ended_reason"]) == (False, "max_iterations")


def test_the_cost_budget_ends_the_loop_at_the_stop_that_spends_it(codex):
    served = len(codex.server.main_requests)
    codex.server.set_script(
        Reply("Working (1).", Usage(100_000, 100)),
        Reply("Working (2).", Usage(100_000, 100)),
        Reply("Working (3).", Usage(100_000, 100)),
    )
    price = price_for(MODEL)
    assert price is not None
    one = price.cost(TokenUsage(100_000, 100))

    done = run_hook_mode(codex, "--max-iterations", "5", "--max-cost", f"{1.5 * one:.6f}")

    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["status"], summary["stop_reason"]) == ("stopped", "max_cost")
    assert summary["iterations"] == 2
    assert len(codex.server.main_requests) - served == 2  # no third request was made


def test_a_session_codex_ended_itself_is_resumed_under_the_adopted_id(codex):
    (codex.project / "ralphctl.toml").write_text('[loops.defaults]\nerror_backoff_cap = "0s"\n')
    threads_before, served = rollouts(codex), len(codex.server.main_requests)
    codex.server.set_script(
        Reply("Working (1)."), ApiError(400, "invalid_request_error", "bad"), Reply(DONE)
    )

    done = run_hook_mode(codex, "--max-iterations", "5")

    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["status"] == "completed"
    loop, iterations = stored(codex, summary["loop_id"])
    assert [it.status for it in iterations] == ["ok", "error", "ok"]
    (thread,) = rollouts(codex) - threads_before  # resumed: still one thread
    assert loop.agent_session_id == thread
    assert len(codex.server.main_requests) - served == 3


# --- the trust Codex asks of a hook ---------------------------------------------------------


def tracking_hook(codex: RealCodex) -> tuple[str, Path]:
    """A Stop hook command that appends its input to a file, and that file."""
    seen = codex.project / "stops.jsonl"
    script = codex.project / "hook.py"
    script.write_text(
        "import sys\n"
        f"with open({str(seen)!r}, 'a') as out:\n"
        "    out.write(sys.stdin.read().replace('\\n', ' ') + '\\n')\n"
    )
    return f"{sys.executable} {script}", seen


def test_the_computed_trust_lets_codex_run_the_hook_without_the_bypass_flag(codex):
    command, seen = tracking_hook(codex)
    codex.server.set_script(Reply("Hello."))

    run = codex.run("Say hello.", "--enable", "hooks", *session_stop_hook(command, 30))

    assert run.exit_code == 0, run.stderr
    (stop,) = [json.loads(line) for line in seen.read_text().splitlines()]
    assert (stop["hook_event_name"], stop["session_id"]) == ("Stop", run.thread_id)
    assert (stop["last_assistant_message"], stop["stop_hook_active"]) == ("Hello.", False)
    assert {"transcript_path", "turn_id", "model", "cwd"} <= stop.keys()


def test_a_hook_without_that_trust_does_not_run(codex):
    command, seen = tracking_hook(codex)
    codex.server.set_script(Reply("Hello."))
    hook, _state = session_stop_hook(command, 30)[:2], session_stop_hook(command, 30)[2:]

    run = codex.run("Say hello.", "--enable", "hooks", *hook)

    assert run.exit_code == 0, run.stderr
    assert not seen.exists()


def test_a_paused_loop_resumes_the_same_codex_thread(codex):
    (codex.project / ".ralph").mkdir()
    (codex.project / ".ralph" / "pause").touch()  # read at the first Stop
    threads_before, served = rollouts(codex), len(codex.server.main_requests)
    codex.server.set_script(Reply("Working (1)."), Reply(DONE))

    paused = run_hook_mode(codex, "--max-iterations", "5")

    summary = json.loads(paused.stdout)
    assert summary["status"] == "paused", paused.stderr
    database = codex.project.parent / "ralphctl.db"
    resumed = run_ralphctl(
        codex.env, codex.project, database, "resume", summary["loop_id"], "--json", timeout=90
    )

    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "completed"
    loop, iterations = stored(codex, summary["loop_id"])
    assert [it.output_summary for it in iterations] == [
        "Working (1).",
        DONE.replace("\n", " "),
    ]
    (thread,) = rollouts(codex) - threads_before  # the same thread, resumed
    assert loop.agent_session_id == thread
    assert len(codex.server.main_requests) - served == 2
