"""A store holding a loop in every shape the store can hold, for the read-command tests.

Each shape is written the way its writer writes it: the runner's records for fresh loops,
hook-mode setup's for loops ralphctl launches in one Claude Code session, and the Stop hook
itself (armed as ``/ralph-loop`` arms, history written by the hook) for plugin loops.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ralphctl.domain.config import LoopConfig
from ralphctl.domain.states import LoopStatus, StopReason
from ralphctl.engine.loops import new_loop
from ralphctl.fleet.fleetloops import FleetLoop, store_fleet_loop
from ralphctl.fleet.leases import acquire, release
from ralphctl.hook.arming import arm
from ralphctl.store.records import IterationRecord, LoopRecord
from ralphctl.store.repository import Store
from tests.hook.helpers import hook_env, run_hook, stop_event

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HOST = socket.gethostname()
#: A float's binary noise in printed JSON, as in 0.30000000000000004: costs must not show it.
FLOAT_NOISE = re.compile(r"\d\.\d*?(?:0{7,}|9{7,})[1-9]")
#: Budgets a store may hold unset: written by an older ralphctl, or by a plugin loop.
UNSET_BUDGETS = {"max_cost_usd": None, "max_tokens": None, "max_runtime": None}


@dataclass(frozen=True)
class Shape:
    """One way a stored loop can look, and whether ``ralphctl resume`` can continue it."""

    name: str
    resumable: bool
    make: Callable[[Store, str, Path], str]  # (store, its URL, a fresh work dir) -> loop id


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def fresh(workdir: Path, *, budgets: dict[str, Any] | None = None, **changes: Any) -> LoopRecord:
    """A loop as ``new_loop`` creates it, with ``changes``; ``budgets`` overrides entries of its
    stored config."""
    loop = new_loop("Make the tests pass.", workdir, LoopConfig(agent="scripted"))
    config = changes.pop("config", loop.config) | (budgets or {})
    return replace(loop, config=config, created_at=T0, **changes)


def with_iterations(
    store: Store, loop: LoopRecord, count: int, *, running: bool = False, stored: bool = False
) -> str:
    """Record ``count`` finished iterations (costs with float noise), and a running one;
    ``stored``: the loop exists (as its creator stored it) and is saved as ``loop``."""
    if stored:
        store.save_loop(loop)
    else:
        store.create_loop(loop)
    for n in range(1, count + 1):
        began = IterationRecord(loop.id, n, T0 + timedelta(minutes=n))
        store.begin_iteration(began)
        done = replace(
            began,
            status="ok" if n % 2 else "error",
            completed_at=began.started_at + timedelta(seconds=30),
            duration_ms=30_000,
            tokens_input=1000,
            tokens_output=200,
            cost_usd=0.1 + 0.2 if n % 2 else None,  # with float noise: 0.30000000000000004
            cost_source="reported" if n % 2 else None,
            error_message=None if n % 2 else "exit 1: [red]not markup[/red]",
            output_summary=f"iteration {n} edited [loops.defaults]",
            completion_signal_found=n == 3,
            gate_results=[{"command": "make test", "passed": n != 3}] if n == 3 else None,
        )
        loop = replace(
            loop,
            iteration=n,
            cost_usd=loop.cost_usd + (done.cost_usd or 0.0),
            tokens_input=loop.tokens_input + 1000,
            tokens_output=loop.tokens_output + 200,
            runtime_s=30.0 * n,
        )
        store.complete_iteration(done, loop, [("iteration_completed", {"iteration": n})])
    if running:
        store.begin_iteration(IterationRecord(loop.id, count + 1, T0 + timedelta(hours=1)))
    if count:
        store.add_checkpoint(loop.id, 1, "c0ffee" * 6 + "beef", {"cost_usd": 0.1 + 0.2})
        store.add_error(loop.id, count, "agent_exit", "exit 1", {"stderr_tail": "boom"})
    store.append_event(
        loop.id, "warning", {"message": "[server] not markup", "cost_usd": 0.1 + 0.2}
    )
    return loop.id


def stored(**changes: Any) -> Callable[[Store, str, Path], str]:
    """A fresh-mode loop as the runner stores it, with ``changes``."""
    count = changes.pop("iterations", 3)
    running = changes.pop("running_iteration", False)

    def make(store: Store, _url: str, workdir: Path) -> str:
        return with_iterations(store, fresh(workdir, **changes), count, running=running)

    return make


def asking(**changes: Any) -> Callable[[Store, str, Path], str]:
    """A fresh loop whose runner waits for an answer to its agent's question
    (``on_question = wait``): paused with the question, one message delivered, one pending."""
    question = "Should I use PostgreSQL or [b]SQLite[/b]?"

    def make(store: Store, _url: str, workdir: Path) -> str:
        detail = f"waiting until 2026-03-01 13:00 UTC for an answer: {question}"
        loop = fresh(workdir, status=LoopStatus.PAUSED, stop_detail=detail, **alive(), **changes)
        loop_id = with_iterations(store, loop, 2)
        told = store.append_event(
            loop_id, "message", {"text": "Use [red]tabs[/red].", "sender": "ana"}
        )
        store.append_event(loop_id, "iteration_started", {"iteration": 2, "messages": [told.seq]})
        store.append_event(loop_id, "question", {"iteration": 2, "question": question})
        store.append_event(loop_id, "message", {"text": "Never mind.", "sender": "ana"})
        return loop_id

    return make


def managed_hook(**changes: Any) -> Callable[[Store, str, Path], str]:
    """A hook-mode loop that ralphctl launched (``run --mode hook``, the manager); once it
    began, its runner recorded its host."""
    if "status" in changes:
        changes.setdefault("runner_host", HOST)

    def make(store: Store, _url: str, workdir: Path) -> str:
        session = "5e55a1d0-0000-4000-8000-0000000000aa"
        loop = fresh(workdir, mode="hook", agent="claude", agent_session_id=session, **changes)
        return with_iterations(store, loop, 2)

    return make


def plugin_hook(*stops: str, **arming: Any) -> Callable[[Store, str, Path], str]:
    """A loop armed by the plugin's ``/ralph-loop`` in the user's own session, its history
    written by the Stop hook (budgets unset, no runner pid); one Stop per text in ``stops``."""

    def make(_store: Store, url: str, workdir: Path) -> str:
        session = "5e55a1d0-0000-4000-8000-00000000c0de"
        armed = arm(str(workdir), "Fix [loops.defaults] parsing.", session_id=session, **arming)
        env = hook_env(workdir, session, RALPHCTL_HOOK_STORE="inline", RALPHCTL_DB=url)
        for text in stops:
            done = run_hook(stop_event(session, text), env)
            assert done.returncode == 0, done.stderr
        return loop_id_of(armed.path)

    return make


def loop_id_of(tracker: str) -> str:
    from ralphctl.hook.tracker import load

    loaded = load(tracker)
    assert loaded is not None
    return str(loaded.fields["loop_id"])


def alive() -> dict[str, Any]:
    """A runner that is alive: this test process's parent, on this host."""
    return {"runner_pid": os.getppid(), "runner_host": HOST}


def gone() -> dict[str, Any]:
    return {"runner_pid": dead_pid(), "runner_host": HOST}


def ended(status: LoopStatus, reason: StopReason) -> dict[str, Any]:
    return {"status": status, "stop_reason": reason, "stop_detail": f"{reason} [red]x[/]"}


#: A loop of the command agent: its command line, usage patterns and isolation stored.
COMMAND_AGENT = LoopConfig(
    agent="command",
    agent_command="my-agent --prompt-file {prompt_file}",
    agent_tokens_regex=r"tokens: (?P<input>\d+) in, (?P<output>\d+) out",
    agent_cost_regex=r"cost: \$(?P<cost>[0-9.]+)",
    isolate_agent_config=True,
).to_json()

RUNNING = LoopStatus.RUNNING
SHAPES = [
    Shape("fresh pending, no iterations", True, stored(iterations=0)),
    Shape("fresh running", False, stored(status=RUNNING, running_iteration=True, **alive())),
    Shape(
        "fresh running on another host",
        False,
        stored(status=RUNNING, runner_pid=1, runner_host="elsewhere"),
    ),
    Shape("fresh crashed", True, stored(status=RUNNING, running_iteration=True, **gone())),
    Shape(
        "fresh rate limited",
        False,
        stored(status=LoopStatus.RATE_LIMITED, rate_limited_until=T0, **alive()),
    ),
    Shape(
        "fresh rate limited, runner gone",
        True,
        stored(status=LoopStatus.RATE_LIMITED, rate_limited_until=T0, **gone()),
    ),
    Shape("fresh paused", True, stored(status=LoopStatus.PAUSED)),
    Shape("fresh paused on a question, runner waiting", False, asking()),
    Shape("fresh completed", False, stored(**ended(LoopStatus.COMPLETED, StopReason.COMPLETION))),
    Shape("fresh blocked", True, stored(**ended(LoopStatus.BLOCKED, StopReason.BLOCKED))),
    Shape("fresh stopped", True, stored(**ended(LoopStatus.STOPPED, StopReason.USER_STOP))),
    Shape("fresh failed", True, stored(**ended(LoopStatus.FAILED, StopReason.CIRCUIT_BREAKER))),
    Shape(
        "fresh, budgets unset",
        True,
        stored(status=LoopStatus.PAUSED, budgets=UNSET_BUDGETS),
    ),
    Shape("fresh, empty config, crashed", True, stored(status=RUNNING, config={}, **gone())),
    Shape("fresh, workflow", True, stored(status=LoopStatus.PAUSED, workflow="bugfix")),
    Shape(
        "fresh, command agent",
        True,
        stored(status=LoopStatus.PAUSED, agent="command", config=COMMAND_AGENT),
    ),
    Shape("managed hook pending", True, managed_hook()),
    Shape("managed hook running", False, managed_hook(status=RUNNING, **alive())),
    Shape("managed hook paused", True, managed_hook(status=LoopStatus.PAUSED)),
    Shape("managed hook crashed", False, managed_hook(status=RUNNING, **gone())),
    Shape(
        "managed hook stopped",
        False,
        managed_hook(**ended(LoopStatus.STOPPED, StopReason.INTERRUPTED)),
    ),
    Shape("plugin hook running", False, plugin_hook("Still working.", "Still working.")),
    Shape(
        "plugin hook, iterations unbounded",
        False,
        plugin_hook("Still working.", max_iterations=None, max_runtime_s=3600.0),
    ),
    Shape("plugin hook completed", False, plugin_hook("Done.\n<promise>COMPLETE</promise>")),
    Shape("plugin hook out of iterations", False, plugin_hook("Working.", max_iterations=1)),
]


def build(store: Store, url: str, root: Path, shapes: list[Shape] | None = None) -> dict[str, str]:
    """Store every shape (or ``shapes``), each in a work dir of its own under ``root``;
    returns their ids."""
    ids = {}
    for number, shape in enumerate(SHAPES if shapes is None else shapes):
        workdir = root / f"work-{number}"
        workdir.mkdir()
        ids[shape.name] = shape.make(store, url, workdir)
    return ids


def fleet(
    *, worker: str | None = None, released: bool = False, **changes: Any
) -> Callable[[Store, str, Path], str]:
    """A fleet loop (PostgreSQL only): stored pending as ``loops start --repo`` stores it, then
    as its worker's runner records it, its lease held by ``worker`` (``released``: let go)."""
    count = changes.pop("iterations", 0)
    running = changes.pop("running_iteration", False)

    def make(store: Store, _url: str, workdir: Path) -> str:
        repo = "git@example.invalid:team/[app].git"
        loop = fresh(workdir, name=f"fleet {workdir.name}")
        with store.transaction("store a fleet loop") as conn:
            origin = FleetLoop(loop.id, repo, "main", ("gpu",))
            store_fleet_loop(conn, replace(loop, workdir=repo), origin)
        if worker is not None:
            with store.transaction("lease the fleet loop") as conn:
                lease = acquire(conn, loop.id, worker, timedelta(hours=1))
                assert lease is not None
            loop = replace(loop, runner_pid=1, runner_host="build-01.invalid", **changes)
            with_iterations(store, loop, count, running=running, stored=True)
            if released:
                with store.transaction("release the fleet loop") as conn:
                    release(conn, lease)
        return loop.id

    return make


FLEET_SHAPES = [
    Shape("fleet pending", True, fleet()),
    Shape(
        "fleet running on a worker",
        False,
        fleet(worker="build-01", status=RUNNING, iterations=2, running_iteration=True),
    ),
    Shape(
        "fleet completed",
        False,
        fleet(
            worker="build-01",
            released=True,
            iterations=3,
            **ended(LoopStatus.COMPLETED, StopReason.COMPLETION),
        ),
    ),
]
