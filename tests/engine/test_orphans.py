"""Stopping the agents a dead runner left: whole process groups, only when they are ours."""

from __future__ import annotations

import os
import subprocess
import time
from functools import partial

import psutil
import pytest

from ralphctl.engine.orphans import Agent, Outcome, stop_orphans
from tests.engine.victims import Spawn, live, runs, wait_for

pytestmark = pytest.mark.timeout(60)

LOOP = "loop-0rphan"
#: The agent sh, its child sh, and the child's sleep (the agent's grandchild).
FAMILY = "sh -c 'sleep 300 & wait' & wait"


@pytest.fixture
def spawn(spawn: Spawn) -> Spawn:
    """Agents of LOOP unless told otherwise."""
    return partial(spawn, loop_id=LOOP)


def test_a_running_agent_is_stopped_with_its_whole_group_grandchildren_too(spawn):
    agent, at = spawn(FAMILY, members=3)
    family = live(agent.pid)

    (stopped,) = stop_orphans([Agent(agent.pid, at, LOOP)])

    assert (stopped.outcome, stopped.detail) == (Outcome.STOPPED, "stopped with SIGTERM")
    assert stopped.said() == "was still running: stopped with SIGTERM"
    assert len(family) == 3
    assert live(agent.pid) == []


def test_an_agent_that_ignores_sigterm_is_killed(spawn):
    agent, at = spawn("trap '' TERM; echo ready; while :; do sleep 0.05; done")
    assert agent.stdout is not None
    agent.stdout.readline()  # the trap is set

    (stopped,) = stop_orphans([Agent(agent.pid, at, LOOP)], grace_s=0.3)

    assert stopped.outcome is Outcome.STOPPED
    assert stopped.detail == "killed with SIGKILL (it outlived SIGTERM)"
    assert live(agent.pid) == []


def test_several_agents_are_stopped_together_and_reported_in_order(spawn):
    first, first_at = spawn("exec sleep 300")
    second, second_at = spawn("exec sleep 300", loop_id="loop-two")
    agents = [Agent(first.pid, first_at, LOOP), Agent(second.pid, second_at, "loop-two")]

    stopped = stop_orphans(agents)

    assert [s.agent for s in stopped] == agents
    assert [s.outcome for s in stopped] == [Outcome.STOPPED, Outcome.STOPPED]
    assert live(first.pid) == live(second.pid) == []


def test_a_process_started_at_another_time_is_left_alone(spawn):
    other, at = spawn("exec sleep 300")

    (stopped,) = stop_orphans([Agent(other.pid, at - 60, LOOP)])

    assert stopped.outcome is Outcome.LEFT_ALONE
    assert stopped.detail == f"pid {other.pid} is another process now: it started at another time"
    assert live(other.pid) == [other.pid]


def test_a_process_of_another_loop_is_left_alone(spawn):
    other, at = spawn("exec sleep 300", loop_id="loop-other")

    (stopped,) = stop_orphans([Agent(other.pid, at, LOOP)])

    assert stopped.outcome is Outcome.LEFT_ALONE
    assert stopped.detail == f"pid {other.pid} is another process now: not of loop {LOOP}"
    assert live(other.pid) == [other.pid]


def test_an_agent_that_ran_on_another_host_is_left_alone(spawn):
    agent, at = spawn("exec sleep 300")

    (stopped,) = stop_orphans([Agent(agent.pid, at, LOOP, host="elsewhere.example")])

    assert (stopped.outcome, stopped.detail) == (
        Outcome.LEFT_ALONE,
        "it ran on elsewhere.example, not here",
    )
    assert live(agent.pid) == [agent.pid]


def test_a_dead_pid_is_fine():
    at = time.time()
    dead = subprocess.Popen(["true"], start_new_session=True)
    dead.wait()

    (stopped,) = stop_orphans([Agent(dead.pid, at, LOOP)])

    assert (stopped.outcome, stopped.said()) == (Outcome.GONE, "had already exited")


def test_what_an_exited_agent_left_in_its_group_is_stopped(spawn):
    agent, at = spawn("sleep 300 & echo $!")
    assert agent.stdout is not None
    child = int(agent.stdout.readline())
    agent.wait()  # the agent itself has exited; its child goes on in its group

    (stopped,) = stop_orphans([Agent(agent.pid, at, LOOP)])

    assert stopped.outcome is Outcome.STOPPED
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == "zombie"


def test_a_group_whose_processes_are_not_of_the_loop_is_left_alone(spawn):
    agent, at = spawn("env -u RALPHCTL_LOOP_ID sleep 300 & echo $!")
    assert agent.stdout is not None
    child = int(agent.stdout.readline())
    wait_for(lambda: runs(child, "sleep"))
    agent.wait()

    (stopped,) = stop_orphans([Agent(agent.pid, at, LOOP)])

    assert stopped.outcome is Outcome.LEFT_ALONE
    assert stopped.detail == f"process {child} in its group cannot be shown to be of this loop"
    assert live(agent.pid) == [child]


def test_the_group_of_this_process_is_never_signalled():
    pgid = os.getpgid(0)  # its leader (make, a shell) may have exited already

    (stopped,) = stop_orphans([Agent(pgid, time.time(), LOOP)])

    assert (stopped.outcome, stopped.detail) == (
        Outcome.LEFT_ALONE,
        "it is this process's own group",
    )
