"""Stop the agents a dead runner left behind: whole process groups, and only our own.

A runner starts every agent in a new session, so the agent's pid is also the id of its process
group, which holds whatever the agent spawned. The runner records that pid and when the agent
started (``time.time()`` just before the spawn). When the runner dies (kill -9, a crash) the
agent goes on. A group is the agent's when:

- its leader (the agent) still runs: the leader's creation time is within
  ``START_TOLERANCE_S`` of the recorded start, and its environment, where readable, carries
  ``RALPHCTL_LOOP_ID=<loop id>``;
- or the agent has exited but processes it started are left in its group: each was created
  after the recorded start (less the tolerance) and its environment carries that variable (an
  unreadable environment leaves the group alone here).

A pid is not reused while a process group of that id exists, and a reused pid belongs to a
process with another creation time and environment, so an unrelated process is never
signalled. The agent's group gets SIGTERM, ``grace_s`` to exit, then SIGKILL.

Imports psutil: import this module only where orphans are to be stopped (start-up matters).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import psutil

#: Creation times read back differ from the recorded start: Linux derives them from a boot
#: time rounded down to the second, and the clock may have been slewed since.
START_TOLERANCE_S = 3.0
GRACE_S = 2.0
KILL_WAIT_S = 2.0
POLL_S = 0.05
LOOP_ENV = "RALPHCTL_LOOP_ID"


@dataclass(frozen=True, slots=True)
class Agent:
    """An agent process a runner started: its pid (its group's id), when, for which loop, on
    which host (None: this one)."""

    pid: int
    started_at: float  # seconds since the epoch
    loop_id: str
    host: str | None = None


class Outcome(StrEnum):
    STOPPED = "stopped"  # it ran; it was signalled and has exited
    GONE = "gone"  # nothing of it runs any more
    LEFT_ALONE = "left_alone"  # the pid (or its group) is not, or cannot be shown to be, ours
    SURVIVED = "survived"  # still runs after SIGKILL, or may not be signalled


_SAID = {
    Outcome.STOPPED: "was still running: {detail}",
    Outcome.GONE: "had already exited",
    Outcome.LEFT_ALONE: "was left alone: {detail}",
    Outcome.SURVIVED: "could not be stopped: {detail}",
}


@dataclass(frozen=True, slots=True)
class Stopped:
    """What became of one agent, and why."""

    agent: Agent
    outcome: Outcome
    detail: str

    def said(self) -> str:
        """The outcome as the end of a sentence about the agent: "had already exited"."""
        return _SAID[self.outcome].format(detail=self.detail)


def stop_orphans(agents: Sequence[Agent], *, grace_s: float = GRACE_S) -> list[Stopped]:
    """Stop every one of ``agents`` that is still the agent (see the module), all groups
    signalled at once; in the order given. Vanished processes and refused signals are
    outcomes, never errors."""
    done: dict[Agent, Stopped] = {}
    signalled: list[Agent] = []
    here = socket.gethostname()
    for agent in agents:
        if agent.host not in (None, here):
            done[agent] = Stopped(agent, Outcome.LEFT_ALONE, f"it ran on {agent.host}, not here")
            continue
        members = _group(agent.pid)
        problem = _not_ours(agent, members) if members else None
        if not members:
            done[agent] = Stopped(agent, Outcome.GONE, "it was no longer running")
        elif problem is not None:
            done[agent] = Stopped(agent, Outcome.LEFT_ALONE, problem)
        elif (refused := _signal(agent.pid, signal.SIGTERM)) is not None:
            done[agent] = Stopped(agent, Outcome.SURVIVED, refused)
        else:
            signalled.append(agent)
    _wait(signalled, grace_s)
    for agent in signalled:
        done[agent] = _finish(agent)
    return [done[agent] for agent in agents]


def _finish(agent: Agent) -> Stopped:
    """SIGKILL what outlived the grace; the outcome for a group sent SIGTERM."""
    if not _group(agent.pid):
        return Stopped(agent, Outcome.STOPPED, "stopped with SIGTERM")
    refused = _signal(agent.pid, signal.SIGKILL)
    if refused is not None:
        return Stopped(agent, Outcome.SURVIVED, refused)
    _wait([agent], KILL_WAIT_S)
    if _group(agent.pid):
        return Stopped(agent, Outcome.SURVIVED, "still running after SIGKILL")
    return Stopped(agent, Outcome.STOPPED, "killed with SIGKILL (it outlived SIGTERM)")


def _not_ours(agent: Agent, members: list[psutil.Process]) -> str | None:
    """Why the group cannot be shown to be the agent's; None when it is."""
    if any(member.pid == os.getpid() for member in members):
        return "it is this process's own group"
    leader = next((member for member in members if member.pid == agent.pid), None)
    if leader is not None:
        created = _created(leader)
        if created is None or abs(created - agent.started_at) > START_TOLERANCE_S:
            return f"pid {agent.pid} is another process now: it started at another time"
        if _of_loop(leader, agent.loop_id) is False:
            return f"pid {agent.pid} is another process now: not of loop {agent.loop_id}"
        return None
    for member in members:
        created = _created(member)
        if created is None or created < agent.started_at - START_TOLERANCE_S:
            return f"process {member.pid} in its group is older than the agent"
        if _of_loop(member, agent.loop_id) is not True:
            return f"process {member.pid} in its group cannot be shown to be of this loop"
    return None


def _group(pgid: int) -> list[psutil.Process]:
    """The live (not zombie) processes of process group ``pgid``."""
    members = []
    for pid in psutil.pids():
        with contextlib.suppress(OSError, psutil.Error):
            if os.getpgid(pid) == pgid:
                process = psutil.Process(pid)
                if process.status() != psutil.STATUS_ZOMBIE:
                    members.append(process)
    return members


def _created(process: psutil.Process) -> float | None:
    try:
        return process.create_time()
    except psutil.Error:
        return None


def _of_loop(process: psutil.Process, loop_id: str) -> bool | None:
    """Whether the process's environment names the loop; None when it cannot be read (or
    shows nothing, as for a process in the middle of an exec)."""
    try:
        environ = process.environ()
    except psutil.Error:
        return None
    return environ.get(LOOP_ENV) == loop_id if environ else None


def _signal(pgid: int, sig: signal.Signals) -> str | None:
    """Signal the group; why that was refused (None when sent, or the group is gone)."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return None
    except PermissionError:
        return f"not allowed to signal process group {pgid}"
    return None


def _wait(agents: Sequence[Agent], timeout: float) -> None:
    """Until the group of every one of ``agents`` is empty, or ``timeout``."""
    deadline = time.monotonic() + timeout
    waiting = list(agents)
    while waiting and time.monotonic() < deadline:
        time.sleep(POLL_S)
        waiting = [agent for agent in waiting if _group(agent.pid)]
